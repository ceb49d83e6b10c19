"""The parser as a :class:`g2gt.core.train.Trainer` task (batches, loss, dev evaluation) and its metrics.

Training (``refine_train``): every batch is parsed from the empty graph and, in a second pass, from a
refinement input graph, both passes contributing to the loss (summed over words):

* ``"self"``: the graph predicted by the first pass (argmax heads, relations at those heads; no
  gradient flows through the choice) — RNGTr;
* ``"corrupt"``: the gold graph with a random fraction (uniform in ``[0, corrupt_max]``) of heads and
  relations replaced at random;
* ``"none"``: the first pass only (no refinement training).

Both passes run inside one call of :meth:`ParserModel.forward`, so ``torchrun`` /
``DistributedDataParallel`` training uses the same code path. Dev evaluation parses with
:func:`g2gt.ud.parse.decode.decode_sentences`, the same path as :class:`g2gt.ud.parse.Parser`.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import torch
from torch import Tensor

from ...core.batch import BucketBatchSampler
from .batching import TAG_HEADS, ParseBatch, corrupt_graph, dependency_labels, make_batch, make_example
from .decode import decode_sentences
from .vocab import ParserVocab, sentence_feats

__all__ = ["ParsingTask", "attachment_scores", "tag_accuracies"]


class ParsingTask:
    """The :class:`g2gt.core.train.Trainer` task of the parser (see the module docstring).

    Args:
        train, dev: sentences (:class:`g2gt.ud.io.Sentence`) with gold trees.
        vocab: :class:`ParserVocab` built on ``train``.
        max_distance: clip distance of the position channel.
        batch_tokens: padded tokens per batch.
        refine_train: ``"self"``, ``"corrupt"`` or ``"none"``.
        refine_steps: refinement iterations used by :meth:`evaluate`.
        train_treebanks: each training sentence's treebank (index into ``ParserConfig.treebanks``; default: all 0).
        dev_treebank: the treebank ``dev`` is parsed as (its scores select ``best.pt``).
        more_dev: further dev sets ``(name, sentences, treebank)``, evaluated and logged as ``"NAME.las"`` etc.
        short_clauses: add ``round(short_clauses * len(train))`` short clauses cut from the training trees to
            every epoch, drawn anew each epoch from ``(seed, epoch)``, each with its source's treebank
            (:mod:`g2gt.ud.parse.clause_cuts`; 0 = none).
    """

    def __init__(self, train: Sequence, dev: Sequence, vocab: ParserVocab, max_distance: int = 8,
                 batch_tokens: int = 1500, refine_train: str = "self", refine_steps: int = 2,
                 corrupt_max: float = 0.3, word_dropout: float = 0.2, seed: int = 1,
                 eval_algorithm: str = "mst", graph_channel: bool = True, train_treebanks: Sequence[int] | None = None,
                 dev_treebank: int = 0, more_dev: Sequence[tuple[str, Sequence, int]] = (),
                 short_clauses: float = 0.0) -> None:
        if refine_train not in ("self", "corrupt", "none"):
            raise ValueError(f"refine_train must be 'self', 'corrupt' or 'none', got {refine_train!r}")
        if train_treebanks is not None and len(train_treebanks) != len(train):
            raise ValueError(f"train_treebanks has {len(train_treebanks)} entries for {len(train)} training "
                             "sentences (expected one treebank index per sentence)")
        self.vocab = vocab
        tbs = train_treebanks if train_treebanks is not None else [0] * len(train)
        self.train = [make_example(s, vocab, t) for s, t in zip(train, tbs)]
        for k, (s, ex) in enumerate(zip(train, self.train)):
            if any(h < 0 for h in ex.heads):
                raise ValueError(f"{getattr(s, 'path', '<train>')}:{getattr(s, 'line', k)}: training sentence "
                                 "without a HEAD (expected an integer head for every word)")
        self.dev = list(dev)
        self.dev_treebank = dev_treebank
        self.more_dev = [(name, list(sents), tb) for name, sents, tb in more_dev]
        self.max_distance = max_distance
        self.batch_tokens = batch_tokens
        self.refine_train = refine_train if graph_channel else "none"
        self.refine_steps = refine_steps if graph_channel else 0
        self.corrupt_max = corrupt_max
        self.word_dropout = word_dropout
        self.seed = seed
        self.eval_algorithm = eval_algorithm
        self._lengths = [len(ex.words) for ex in self.train]
        if short_clauses < 0:
            raise ValueError(f"short_clauses must be >= 0 (extra short sentences per training sentence), got "
                             f"{short_clauses}")
        self.short_clauses = short_clauses
        self._sources = (list(train), list(tbs)) if short_clauses > 0 else None

    def epoch_examples(self, epoch: int) -> list:
        """The training examples of ``epoch``: the training sentences, then (with ``short_clauses``) that
        epoch's clause cuts (:func:`~g2gt.ud.parse.clause_cuts.clause_cuts`, seeded by ``(seed, epoch)``)."""
        if self._sources is None:
            return self.train
        from .clause_cuts import clause_cuts

        sents, tbs = self._sources
        cuts = clause_cuts(sents, self.short_clauses, seed=(self.seed * 7919 + epoch) * 31 + 17)
        return self.train + [make_example(cut, self.vocab, tbs[i]) for i, cut in cuts]

    # -- the Trainer's task protocol
    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> Iterator[ParseBatch]:
        # The corruption seed follows the batch's position in the global (all-rank) order,
        # so k ranks corrupt exactly like one process with accum_steps = k.
        examples = self.epoch_examples(epoch)
        lengths = self._lengths if examples is self.train else [len(ex.words) for ex in examples]
        sampler = BucketBatchSampler(lengths, self.batch_tokens, True, self.seed,
                                     num_replicas=world_size, rank=rank)
        sampler.set_epoch(epoch, skip)
        base = (self.seed * 7919 + epoch) * 1_000_003
        for k, idx in enumerate(sampler):
            batch = make_batch([examples[i] for i in idx], idx, self.vocab, self.max_distance,
                               corrupt_seed=base + (skip + k) * world_size + rank)
            if self.refine_train == "corrupt":
                # drawn here, on the host batch: in loss() it would read the device tensors back every step
                nf = batch.graph.node_features
                nf["refine_head"], nf["refine_rel"] = self._corrupt(batch)
            yield batch

    def _corrupt(self, batch: ParseBatch) -> tuple[Tensor, Tensor]:
        """The corrupted gold graph of ``batch`` (heads, relations ``[B, n]``), drawn from its ``corrupt_seed``."""
        g = batch.graph
        gen = torch.Generator().manual_seed(batch.corrupt_seed)
        return corrupt_graph(g.node_features["head"], g.node_features["rel"], batch.words_mask,
                             len(self.vocab.rels), self.corrupt_max, gen)

    def num_tokens(self, batch: ParseBatch) -> int:
        return batch.num_words * (1 if self.refine_train == "none" else 2)

    def loss(self, model, batch: ParseBatch) -> Tensor:
        """Summed arc + relation + tag cross-entropies over the words of one or two passes,
        computed by ONE call of ``model`` (:meth:`ParserModel.forward`; DDP-safe)."""
        g = batch.graph
        words = g.tokens
        m = batch.words_mask
        if self.word_dropout > 0 and model.training:
            drop = (torch.rand(words.shape, device=words.device) < self.word_dropout) & m
            words = words.masked_fill(drop, 1)
        gold_h, gold_r, gold_u = g.node_features["head"], g.node_features["rel"], g.node_features["upos"]
        refine, graph = "none", None
        if self.refine_train == "self":
            refine = "self"
        elif self.refine_train == "corrupt":
            nf = g.node_features
            heads, rels = (nf["refine_head"], nf["refine_rel"]) if "refine_head" in nf else self._corrupt(batch)
            refine, graph = "graph", dependency_labels(heads, rels, m)
        gold_tags = {k: g.node_features[k] for k in TAG_HEADS if k in g.node_features}
        return model(words, batch.char_ids, batch.word_types, g.padding_mask, batch.position,
                     gold_h, gold_r, gold_u, refine=refine, refine_graph=graph, gold_tags=gold_tags,
                     treebank=batch.treebank)

    def evaluate(self, model) -> dict[str, float]:
        """Internal UAS / LAS (universal relation part) / UPOS and XPOS / UFeats / lemma accuracy on dev,
        in percent, after ``refine_steps`` refinement iterations, plus ``uas0`` / ``las0`` of iteration 0
        (official numbers: ``g2gt evaluate``); the same for each of ``more_dev``, keys prefixed ``"NAME."``."""
        core = model.module if hasattr(model, "module") else model
        scores = self._scores(core, self.dev, self.dev_treebank)
        for name, sents, tb in self.more_dev:
            scores.update({f"{name}.{k}": v for k, v in self._scores(core, sents, tb).items()})
        return scores

    def _scores(self, model, dev: Sequence, treebank: int) -> dict[str, float]:
        pred = decode_sentences(model, self.vocab, dev, self.max_distance, self.refine_steps,
                                self.eval_algorithm, record_iterations=self.refine_steps > 0, treebank=treebank)
        scores = attachment_scores(dev, pred)
        scores.update(tag_accuracies(dev, pred))
        if self.refine_steps:
            s0 = attachment_scores(dev, pred.iteration(0))
            scores["uas0"], scores["las0"] = s0["uas"], s0["las"]
        return scores

    def checkpoint_extra(self) -> dict:
        """``ck["task"]``: what :meth:`Parser.load` needs besides the weights (the checkpoint format)."""
        return {"kind": "parser", "vocab": self.vocab.to_dict(), "max_distance": self.max_distance,
                "refine_steps": self.refine_steps, "refine_train": self.refine_train}


def attachment_scores(gold: Sequence, pred: Sequence) -> dict[str, float]:
    """UAS / LAS (universal part of the relation, as CoNLL 2018) / UPOS in percent, over all words
    (punctuation included). ``pred``: objects with ``heads``, ``deprels``, ``upos`` (a
    :class:`ParseResult`, or the trees of one iteration)."""
    n = uas = las = upos = 0
    for s, p in zip(gold, pred):
        for gh, gr, gu, ph, pr, pu in zip(s.heads, s.deprels, s.upos, p.heads, p.deprels, p.upos):
            n += 1
            upos += gu == pu
            if gh == ph:
                uas += 1
                las += (gr or "").split(":")[0] == pr.split(":")[0]
    n = max(n, 1)
    return {"uas": 100 * uas / n, "las": 100 * las / n, "upos": 100 * upos / n}


def tag_accuracies(gold: Sequence, pred: Sequence) -> dict[str, float]:
    """XPOS / UFeats / lemma accuracy in percent (keys ``"xpos"``, ``"feats"``, ``"lemma"``) for the
    columns ``pred`` has (objects with ``xpos`` / ``feats`` / ``lemmas``, None = not predicted)."""
    columns = {"xpos": ("xpos", lambda s: [x or "_" for x in s.xpos]), "feats": ("feats", sentence_feats),
               "lemma": ("lemmas", lambda s: s.lemmas)}
    out: dict[str, float] = {}
    for name, (attr, col) in columns.items():
        pairs = [(g, q) for s, p in zip(gold, pred) if getattr(p, attr) is not None
                 for g, q in zip(col(s), getattr(p, attr))]
        if pairs:
            out[name] = 100 * sum(g == q for g, q in pairs) / len(pairs)
    return out
