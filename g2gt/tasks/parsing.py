r"""Graph-to-graph dependency parsing with iterative refinement (RNGTr-style).

A sentence of ``n`` words becomes a graph of ``n + 1`` nodes: a ``<ROOT>`` node at
position 0 and the words. Every node pair carries two labels that enter the
attention scores (:class:`g2gt.nn.GraphAttention`):

* channel 0, ``position``: the clipped relative distance ``clip(j - i, -k, k)``;
* channel 1, ``deps``: the *current* dependency graph — ``rel↑`` on
  (dependent, head) and ``rel↓`` on (head, dependent), ROOT's edges included
  (:meth:`g2gt.LabelVocab.for_dependencies`).

Iteration 0 parses from the empty graph (channel 1 all zeros). Its tree
(Chu-Liu-Edmonds, :mod:`g2gt.trees`) is fed back as channel 1 and the sentence
is parsed again, ``T`` times (``refine_steps``). A sentence whose output equals
its input graph has reached a fixed point (the model is deterministic at
inference) and is not parsed again.

Node input: ``e_i = E_word[lower(w_i)] + CharCNN(w_i)`` (train words with
frequency >= ``min_freq``; rare words are replaced by ``<unk>`` with
probability ``word_dropout`` during training). Heads on the encoder output:
:class:`g2gt.nn.heads.BiaffineArcScorer`, :class:`~g2gt.nn.heads.BiaffineLabelScorer`
and a UPOS :class:`~g2gt.nn.heads.Tagger`.

Training (``refine_train``): every batch is parsed from the empty graph and, in
a second pass, from a refinement input graph, both passes contributing to the
loss (summed over words):

* ``"self"``: the graph predicted by the first pass (argmax heads, labels at
  those heads; no gradient flows through the choice) — RNGTr;
* ``"corrupt"``: the gold graph with a random fraction (uniform in
  ``[0, corrupt_max]``) of heads and labels replaced at random;
* ``"none"``: the first pass only (no refinement training).

All passes of a step run inside one call of :meth:`RefinementParser.forward`, so
training under ``torchrun`` / ``DistributedDataParallel`` uses the same code path.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..batch import BucketBatchSampler, GraphBatch, collate
from ..graph import ChainChannel, Graph, LabelVocab, num_chain_labels
from ..nn.heads import BiaffineArcScorer, BiaffineLabelScorer, CharCNNWordEncoder, Tagger
from ..nn.transformer import GraphEncoder

__all__ = [
    "ParserVocab", "ParserConfig", "RefinementParser", "ParseBatch", "ParsingTask", "Parser",
    "load_parser", "train_parser", "dependency_labels", "corrupt_graph", "fast_inference_dtype",
]

PAD, UNK, ROOT = "<pad>", "<unk>", "<root>"


# --------------------------------------------------------------------------- vocabularies
@dataclass
class ParserVocab:
    """Words, characters, UPOS tags and dependency relations of a parser.

    Ids 0 / 1 / 2 of ``words`` and ``chars`` are ``<pad>`` / ``<unk>`` / ``<root>``.
    ``rels[r]`` has the dependency-channel labels ``1 + 2r`` (``rel↑``) and ``2 + 2r``
    (``rel↓``), exactly the ids of ``LabelVocab.for_dependencies(rels)``.
    """

    words: list[str]
    chars: list[str]
    upos: list[str]
    rels: list[str]
    lowercase: bool = True
    max_word_chars: int = 24

    def __post_init__(self) -> None:
        self.word_index = {w: i for i, w in enumerate(self.words)}
        self.char_index = {c: i for i, c in enumerate(self.chars)}
        self.upos_index = {t: i for i, t in enumerate(self.upos)}
        self.rel_index = {r: i for i, r in enumerate(self.rels)}
        self.dep_vocab = LabelVocab.for_dependencies(self.rels)

    @classmethod
    def build(cls, sentences: Sequence, min_freq: int = 2, lowercase: bool = True,
              max_word_chars: int = 24) -> "ParserVocab":
        """From training sentences (objects with ``forms``, ``upos``, ``deprels``)."""
        wc: Counter = Counter()
        cc: Counter = Counter()
        upos: Counter = Counter()
        rels: Counter = Counter()
        for s in sentences:
            for f, u, r in zip(s.forms, s.upos, s.deprels):
                wc[f.lower() if lowercase else f] += 1
                cc.update(f)
                upos[u] += 1
                if r is not None:
                    rels[r] += 1
        rels.setdefault("root", 1)
        words = [PAD, UNK, ROOT] + sorted(w for w, c in wc.items() if c >= min_freq)
        chars = [PAD, UNK, ROOT] + sorted(c for c, n in cc.items() if n >= 1)
        return cls(words, chars, sorted(upos), sorted(rels), lowercase, max_word_chars)

    def word_id(self, form: str) -> int:
        return self.word_index.get(form.lower() if self.lowercase else form, 1)

    def char_ids(self, form: str) -> list[int]:
        m = self.max_word_chars
        if len(form) > m:  # keep prefix and suffix of very long words
            form = form[: m - m // 3] + form[-(m // 3):]
        return [self.char_index.get(c, 1) for c in form] or [1]

    def to_dict(self) -> dict:
        return {"words": list(self.words), "chars": list(self.chars), "upos": list(self.upos),
                "rels": list(self.rels), "lowercase": self.lowercase, "max_word_chars": self.max_word_chars}

    @classmethod
    def from_dict(cls, d: dict) -> "ParserVocab":
        return cls(list(d["words"]), list(d["chars"]), list(d["upos"]), list(d["rels"]),
                   bool(d.get("lowercase", True)), int(d.get("max_word_chars", 24)))


# --------------------------------------------------------------------------- model
@dataclass
class ParserConfig:
    """Hyper-parameters of :class:`RefinementParser` (saved in checkpoints as ``model_config``)."""

    num_words: int
    num_chars: int
    num_upos: int
    num_rels: int
    d_model: int = 256
    num_heads: int = 8
    num_layers: int = 6
    ffn_dim: int = 1024
    dropout: float = 0.2
    attention_dropout: float = 0.0
    max_distance: int = 8
    value_labels: bool = True
    graph_channel: bool = True
    arc_dim: int = 256
    label_dim: int = 64
    char_dim: int = 64
    char_filters: int = 192
    head_dropout: float = 0.25
    activation: str = "gelu"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ParserConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def dependency_labels(heads: Tensor, rels: Tensor, valid: Tensor) -> Tensor:
    """Dense dependency-channel labels ``[B, n, n]`` (long) from a graph over ``n`` nodes.

    ``heads [B, n]`` is each node's head index (node 0 = ROOT; ignored where
    ``valid [B, n]`` is False), ``rels [B, n]`` the relation index ``r``. The pair
    (dependent ``i``, head ``h``) gets ``1 + 2r`` (``rel↑``) and (``h``, ``i``) gets
    ``2 + 2r`` (``rel↓``); all other pairs 0.
    """
    B, n = heads.shape
    out = torch.zeros(B, n, n, dtype=torch.long, device=heads.device)
    b, i = valid.nonzero(as_tuple=True)
    if b.numel():
        h = heads[b, i].clamp(0, n - 1)
        r = rels[b, i]
        out[b, h, i] = 2 + 2 * r
        out[b, i, h] = 1 + 2 * r
    return out


class RefinementParser(nn.Module):
    """Graph-to-graph Transformer dependency parser (see the module docstring).

    Shapes: ``words [B, n]`` long (node 0 = ROOT), ``char_ids [U, m]`` long
    (characters of the batch's unique word types), ``word_types [B, n]`` long (row
    of ``char_ids`` for each node), ``padding_mask [B, n]`` bool, ``labels [B, C, n, n]``
    (C = 2 with the graph channel, else 1).

    :meth:`forward` returns the training loss of a batch, all passes included (one
    call per step, as ``DistributedDataParallel`` requires); :meth:`score` is one pass.
    """

    def __init__(self, config: ParserConfig) -> None:
        super().__init__()
        self.config = c = config
        self.word_embed = nn.Embedding(c.num_words, c.d_model, padding_idx=0)
        self.char_encoder = CharCNNWordEncoder(c.num_chars, c.d_model, c.char_dim, c.char_filters)
        self.embed_norm = nn.LayerNorm(c.d_model)
        self.embed_dropout = nn.Dropout(c.dropout)
        sizes = [num_chain_labels(c.max_distance)]
        if c.graph_channel:
            sizes.append(1 + 2 * c.num_rels)
        self.encoder = GraphEncoder(c.num_layers, c.d_model, c.num_heads, c.ffn_dim, sizes, c.value_labels,
                                    c.dropout, c.attention_dropout, True, c.activation)
        self.arc = BiaffineArcScorer(c.d_model, c.arc_dim, c.head_dropout)
        self.rel = BiaffineLabelScorer(c.d_model, c.num_rels, c.label_dim, c.head_dropout)
        self.tagger = Tagger(c.d_model, c.num_upos, c.d_model, c.head_dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.word_embed.weight, std=self.config.d_model**-0.5)
        with torch.no_grad():
            self.word_embed.weight[0].zero_()
        self.char_encoder.reset_parameters()
        self.embed_norm.reset_parameters()
        self.encoder.reset_parameters()
        self.arc.reset_parameters()
        self.rel.reset_parameters()
        self.tagger.reset_parameters()

    def labels(self, position: Tensor, graph: Tensor | None) -> Tensor:
        """Stack the channels: ``position [B, n, n]`` and ``graph [B, n, n]`` (None = empty graph)
        -> ``[B, C, n, n]``."""
        if not self.config.graph_channel:
            return position[:, None]
        if graph is None:
            graph = torch.zeros_like(position)
        return torch.stack([position.to(graph.dtype), graph], 1)

    def embed(self, words: Tensor, char_ids: Tensor, word_types: Tensor) -> Tensor:
        """Node vectors ``[B, n, d]``: word embedding + char-CNN word vector, layer-normed."""
        cvec = self.char_encoder(char_ids)  # [U, d]
        x = self.word_embed(words) + cvec[word_types]
        return self.embed_dropout(self.embed_norm(x))

    def encode(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
               labels: Tensor) -> Tensor:
        """Encoder states ``[B, n, d]``."""
        return self.encoder(self.embed(words, char_ids, word_types), labels, padding_mask)

    def score(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
              labels: Tensor, label_heads: Tensor, x: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """One pass: arcs ``[B, n, n]`` (row = dependent, col = head, padded / self columns
        ``-inf``), relations at ``label_heads [B, n]`` ``[B, n, R]``, UPOS ``[B, n, P]``, and
        ``[2, B, n]``: argmax heads and the relations at them (no gradient; for self-training).
        ``x [B, n, d]``: node vectors from :meth:`embed` when already computed (else computed here)."""
        if x is None:
            x = self.embed(words, char_ids, word_types)
        h = self.encoder(x, labels, padding_mask)
        arc = self.arc(h, padding_mask)
        n = arc.shape[-1]
        arc = arc.masked_fill(torch.eye(n, dtype=torch.bool, device=arc.device), float("-inf"))
        d, hh = self.rel.project(h)
        rel = self.rel.score(d, hh, label_heads)
        with torch.no_grad():
            pred_heads = arc.argmax(-1)
            pred_rels = self.rel.score(d, hh, pred_heads).argmax(-1)
        return arc, rel, self.tagger(h), torch.stack([pred_heads, pred_rels])

    @staticmethod
    def pass_loss(out: tuple[Tensor, Tensor, Tensor, Tensor], words_mask: Tensor, gold_heads: Tensor,
                  gold_rels: Tensor, gold_upos: Tensor) -> Tensor:
        """Summed arc + relation + UPOS cross-entropy of one :meth:`score` pass over the real
        words (``words_mask [B, n]``; golds ``[B, n]`` long). Scalar, float32 or wider."""
        arc, rel, tag, _ = out
        m = words_mask
        return (F.cross_entropy(arc[m].float(), gold_heads[m], reduction="sum")
                + F.cross_entropy(rel[m].float(), gold_rels[m], reduction="sum")
                + F.cross_entropy(tag[m].float(), gold_upos[m], reduction="sum"))

    def forward(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
                position: Tensor, gold_heads: Tensor, gold_rels: Tensor, gold_upos: Tensor,
                refine: str = "none", refine_graph: Tensor | None = None) -> Tensor:
        r"""The whole training loss of a batch in ONE call (so that ``DistributedDataParallel``
        sees one forward per backward).

        ``position [B, n, n]`` is the position channel, golds ``[B, n]`` long (node 0 =
        ROOT, ignored). The node vectors are embedded once and shared by the passes:

        1. from the empty graph;
        2. ``refine="self"``: from the graph of pass 1's argmax heads and the relations
           at them (chosen without gradient); ``refine="graph"``: from ``refine_graph
           [B, n, n]`` (dependency-channel labels, e.g. a corrupted gold tree);
           ``refine="none"``: no second pass.

        Returns the SUM over passes and real words of arc + relation + UPOS cross-entropy.
        """
        if refine not in ("none", "self", "graph"):
            raise ValueError(f"refine must be 'none', 'self' or 'graph', got {refine!r}")
        if refine == "graph" and refine_graph is None:
            raise ValueError("refine='graph' needs refine_graph [B, n, n] (dependency-channel labels)")
        if refine != "none" and not self.config.graph_channel:
            raise ValueError(f"refine={refine!r} needs a model with the graph channel (graph_channel=True)")
        words_mask = ~padding_mask
        words_mask[:, 0] = False
        golds = (gold_heads, gold_rels, gold_upos)
        if refine == "none":
            out = self.score(words, char_ids, word_types, padding_mask, self.labels(position, None), gold_heads)
            return self.pass_loss(out, words_mask, *golds)
        x = self.embed(words, char_ids, word_types)  # shared by both passes
        out = self.score(words, char_ids, word_types, padding_mask, self.labels(position, None), gold_heads, x)
        total = self.pass_loss(out, words_mask, *golds)
        if refine == "self":
            refine_graph = dependency_labels(out[3][0], out[3][1], words_mask)
        out = self.score(words, char_ids, word_types, padding_mask, self.labels(position, refine_graph),
                         gold_heads, x)
        return total + self.pass_loss(out, words_mask, *golds)

    @torch.no_grad()
    def attention_weights(self, words: Tensor, char_ids: Tensor, word_types: Tensor, padding_mask: Tensor,
                          labels: Tensor) -> list[Tensor]:
        """Per-layer attention probabilities, a list of ``[B, H, n, n]`` (from
        ``GraphEncoder(need_weights=True)``; call it in eval mode)."""
        x = self.embed(words, char_ids, word_types)
        return self.encoder(x, labels, padding_mask, need_weights=True)[1]


# --------------------------------------------------------------------------- data
@dataclass
class _Example:
    forms: list[str]  # with "<root>" first
    words: list[int]
    upos: list[int]
    heads: list[int]  # -1 where unknown; ROOT: 0
    rels: list[int]


def _example(sent, vocab: ParserVocab) -> _Example:
    forms = [ROOT] + list(sent.forms)
    words = [2] + [vocab.word_id(f) for f in sent.forms]
    upos = [0] + [vocab.upos_index.get(u, 0) for u in sent.upos]
    heads = [0] + [(-1 if h is None else int(h)) for h in sent.heads]
    rels = [0] + [vocab.rel_index.get(r, 0) if r is not None else 0 for r in sent.deprels]
    return _Example(forms, words, upos, heads, rels)


@dataclass
class ParseBatch:
    """A padded batch of sentences (node 0 = ROOT).

    ``graph``: :class:`g2gt.GraphBatch` from :func:`g2gt.collate` — ``tokens [B, n]``
    word ids, ``labels [B, 1, n, n]`` the position channel, ``padding_mask``,
    ``node_features`` ``upos`` / ``head`` / ``rel`` / ``has_head`` (``[B, n]``).
    ``char_ids [U, m]`` / ``word_types [B, n]``: characters of the unique word types.
    """

    graph: GraphBatch
    char_ids: Tensor
    word_types: Tensor
    index: list[int]
    corrupt_seed: int = 0

    def to(self, device, non_blocking: bool = False) -> "ParseBatch":
        nb = non_blocking
        return ParseBatch(self.graph.to(device, non_blocking=nb), self.char_ids.to(device, non_blocking=nb),
                          self.word_types.to(device, non_blocking=nb), self.index, self.corrupt_seed)

    @property
    def words_mask(self) -> Tensor:
        """``[B, n]`` True on real words (not ROOT, not padding)."""
        m = ~self.graph.padding_mask
        m[:, 0] = False
        return m

    @property
    def num_words(self) -> int:
        return int((~self.graph.padding_mask).sum()) - len(self.index)


def make_batch(examples: Sequence[_Example], index: Sequence[int], vocab: ParserVocab, max_distance: int,
               corrupt_seed: int = 0) -> ParseBatch:
    """Collate examples with :func:`g2gt.collate` (position channel) plus unique-word characters."""
    graphs = [
        Graph(ex.words, {"position": ChainChannel(max_distance)},
              {"upos": ex.upos, "head": [max(h, 0) for h in ex.heads], "rel": ex.rels,
               "has_head": [int(h >= 0) for h in ex.heads]})
        for ex in examples
    ]
    gb = collate(graphs)
    types: dict[str, int] = {}
    n = gb.tokens.shape[1]
    rows = []
    for ex in examples:
        row = [types.setdefault(f, len(types)) for f in ex.forms]
        rows.append(row + [0] * (n - len(row)))
    wt = torch.tensor(rows, dtype=torch.long).view(len(examples), n)
    chars = [[2] if f == ROOT else vocab.char_ids(f) for f in types]  # dicts keep insertion order = type id
    m = max(map(len, chars))
    char_ids = torch.tensor([c + [0] * (m - len(c)) for c in chars], dtype=torch.long).view(len(chars), m)
    return ParseBatch(gb, char_ids, wt, list(index), corrupt_seed)


def corrupt_graph(heads: Tensor, rels: Tensor, words_mask: Tensor, num_rels: int, max_rate: float,
                  generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Replace a random fraction (per sentence uniform in ``[0, max_rate]``) of the heads and,
    independently, of the relations by random ones. ``[B, n]`` in, ``[B, n]`` out."""
    B, n = heads.shape
    dev = heads.device
    rate = torch.rand(B, 1, generator=generator) * max_rate
    lengths = (words_mask.sum(-1) + 1).clamp(min=2)  # nodes incl. ROOT
    u = torch.rand(B, n, generator=generator)
    rand_head = (torch.rand(B, n, generator=generator) * lengths[:, None].cpu()).long()
    h_new = torch.where(u < rate, rand_head, heads.cpu())
    ar = torch.arange(n)[None]
    h_new = torch.where(h_new == ar, heads.cpu(), h_new)  # no self loops
    r_new = torch.where(torch.rand(B, n, generator=generator) < rate,
                        torch.randint(0, num_rels, (B, n), generator=generator), rels.cpu())
    return h_new.to(dev), r_new.to(dev)


# --------------------------------------------------------------------------- task
class ParsingTask:
    """The :class:`g2gt.train.Trainer` task of the parser (see the module docstring).

    Args:
        train, dev: sentences (:class:`g2gt.io.conllu.Sentence`) with gold trees.
        vocab: :class:`ParserVocab` built on ``train``.
        max_distance: clip distance of the position channel.
        max_tokens: padded tokens per batch.
        refine_train: ``"self"``, ``"corrupt"`` or ``"none"``.
        refine_steps: refinement iterations used by :meth:`evaluate`.
    """

    def __init__(self, train: Sequence, dev: Sequence, vocab: ParserVocab, max_distance: int = 8,
                 max_tokens: int = 4000, refine_train: str = "self", refine_steps: int = 2,
                 corrupt_max: float = 0.3, word_dropout: float = 0.2, seed: int = 1,
                 eval_algorithm: str = "mst", graph_channel: bool = True) -> None:
        if refine_train not in ("self", "corrupt", "none"):
            raise ValueError(f"refine_train must be 'self', 'corrupt' or 'none', got {refine_train!r}")
        self.vocab = vocab
        self.train = [_example(s, vocab) for s in train]
        for k, (s, ex) in enumerate(zip(train, self.train)):
            if any(h < 0 for h in ex.heads):
                raise ValueError(f"{getattr(s, 'path', '<train>')}:{getattr(s, 'line', k)}: training sentence "
                                 "without a HEAD (expected an integer head for every word)")
        self.dev = list(dev)
        self.max_distance = max_distance
        self.max_tokens = max_tokens
        self.refine_train = refine_train if graph_channel else "none"
        self.refine_steps = refine_steps if graph_channel else 0
        self.corrupt_max = corrupt_max
        self.word_dropout = word_dropout
        self.seed = seed
        self.eval_algorithm = eval_algorithm
        self._lengths = [len(ex.words) for ex in self.train]

    # -- protocol
    def _sampler(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> BucketBatchSampler:
        s = BucketBatchSampler(self._lengths, max(self.max_tokens, max(self._lengths)), True, self.seed,
                               num_replicas=world_size, rank=rank)
        s.set_epoch(epoch, skip)
        return s

    def num_train_batches(self, epoch: int, rank: int, world_size: int) -> int:
        return len(self._sampler(epoch, rank, world_size))

    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> Iterator[ParseBatch]:
        # The corruption seed follows the batch's position in the global (all-rank) order,
        # so k ranks corrupt exactly like one process with accum_steps = k.
        base = (self.seed * 7919 + epoch) * 1_000_003
        for k, idx in enumerate(self._sampler(epoch, rank, world_size, skip)):
            yield make_batch([self.train[i] for i in idx], idx, self.vocab, self.max_distance,
                             corrupt_seed=base + (skip + k) * world_size + rank)

    def num_tokens(self, batch: ParseBatch) -> int:
        return batch.num_words * (1 if self.refine_train == "none" else 2)

    def loss(self, model, batch: ParseBatch) -> Tensor:
        """Summed arc + relation + UPOS cross-entropy over the words of one or two passes,
        computed by ONE call of ``model`` (:meth:`RefinementParser.forward`; DDP-safe)."""
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
            gen = torch.Generator().manual_seed(batch.corrupt_seed)
            heads, rels = corrupt_graph(gold_h, gold_r, m, len(self.vocab.rels), self.corrupt_max, gen)
            refine, graph = "graph", dependency_labels(heads, rels, m)
        return model(words, batch.char_ids, batch.word_types, g.padding_mask, g.labels[:, 0].long(),
                     gold_h, gold_r, gold_u, refine=refine, refine_graph=graph)

    def evaluate(self, model) -> dict[str, float]:
        """Internal UAS / LAS (universal relation part) / UPOS accuracy on dev, in percent,
        after ``refine_steps`` refinement iterations (official numbers: ``g2gt evaluate``)."""
        core = model.module if hasattr(model, "module") else model
        parser = Parser(core, self.vocab, self.max_distance)
        pred = parser.predict(self.dev, refine_steps=self.refine_steps, algorithm=self.eval_algorithm,
                              progress=False, record_iterations=True)
        scores = attachment_scores(self.dev, pred)
        if self.refine_steps:
            pred0 = parser.last_iterations[0]
            s0 = attachment_scores(self.dev, pred0)
            scores["uas0"], scores["las0"] = s0["uas"], s0["las"]
        return scores

    def checkpoint_extra(self) -> dict:
        return {"vocab": self.vocab.to_dict(), "max_distance": self.max_distance,
                "refine_steps": self.refine_steps, "refine_train": self.refine_train}


def attachment_scores(gold: Sequence, pred: Sequence[tuple[list[int], list[str], list[str]]]) -> dict[str, float]:
    """UAS / LAS (universal part of the relation, as CoNLL 2018) / UPOS in percent."""
    n = uas = las = upos = 0
    for s, (h, r, u) in zip(gold, pred):
        for gh, gr, gu, ph, pr, pu in zip(s.heads, s.deprels, s.upos, h, r, u):
            n += 1
            upos += gu == pu
            if gh == ph:
                uas += 1
                las += (gr or "").split(":")[0] == pr.split(":")[0]
    n = max(n, 1)
    return {"uas": 100 * uas / n, "las": 100 * las / n, "upos": 100 * upos / n}


# --------------------------------------------------------------------------- inference
class Parser:
    """A trained parser: ``Parser.load(model_dir).parse(sentences)``.

    Sentences are parsed in length-sorted batches under ``torch.inference_mode``;
    every output is exactly one single-rooted tree (MST / Eisner from
    :mod:`g2gt.trees`, which keeps argmax heads when they already form one).
    """

    def __init__(self, model: RefinementParser, vocab: ParserVocab, max_distance: int,
                 refine_steps: int = 2) -> None:
        self.model = model
        self.vocab = vocab
        self.max_distance = max_distance
        self.refine_steps = refine_steps
        self.last_iterations: list[list[tuple[list[int], list[str], list[str]]]] = []
        self.last_passes = 0
        self._root_rel = vocab.rel_index.get("root", 0)

    @classmethod
    def load(cls, model_dir: str | Path, device: str | torch.device = "cpu",
             dtype: torch.dtype | str | None = None) -> "Parser":
        """Load ``best.pt`` (else ``last.pt``) of a model directory (``weights_only=True``, ``strict=True``).

        ``dtype``: cast the weights for inference, e.g. ``torch.bfloat16`` (or ``"bfloat16"``): faster on
        GPUs and on CPUs with AMX matrix units; ``"auto"`` picks it only there (:func:`fast_inference_dtype`).
        Arc scores are decoded in float32 either way.
        """
        from ..train import load_checkpoint

        d = Path(model_dir)
        path = d if d.is_file() else (d / "best.pt" if (d / "best.pt").exists() else d / "last.pt")
        if not path.exists():
            raise FileNotFoundError(f"{model_dir}: no best.pt or last.pt (is this a parser model directory "
                                    "written by 'g2gt train parser'?)")
        ck = load_checkpoint(path, device)
        extra = ck.get("task", {})
        if "vocab" not in extra:
            raise ValueError(f"{path}: not a parser checkpoint (no parser vocabulary inside)")
        cfg = ParserConfig.from_dict(ck["model_config"])
        model = RefinementParser(cfg)
        model.load_state_dict(ck["model"], strict=True)
        model.to(device=device, dtype=_dtype(dtype, device)).eval()
        return cls(model, ParserVocab.from_dict(extra["vocab"]), int(extra.get("max_distance", cfg.max_distance)),
                   int(extra.get("refine_steps", 2)))

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _batches(self, examples: list[_Example], max_tokens: int) -> list[list[int]]:
        order = sorted(range(len(examples)), key=lambda i: len(examples[i].words))
        out, cur, longest = [], [], 0
        for i in order:
            n = len(examples[i].words)
            if cur and max(longest, n) * (len(cur) + 1) > max_tokens:
                out.append(cur)
                cur, longest = [], 0
            cur.append(i)
            longest = max(longest, n)
        if cur:
            out.append(cur)
        return out

    def predict(self, sentences: Sequence, refine_steps: int | None = None, algorithm: str = "mst",
                use_input_graph: bool = False, max_tokens: int = 3000, progress: bool = True,
                record_iterations: bool = False) -> list[tuple[list[int], list[str], list[str]]]:
        """``(heads, deprels, upos)`` for every sentence, in input order.

        ``use_input_graph``: the sentences' own HEAD/DEPREL columns are iteration 0's
        graph (they must form a single-rooted tree; a :class:`ValueError` naming
        ``file:line`` is raised otherwise). ``refine_steps`` further passes follow.
        ``record_iterations``: keep every iteration's output in ``self.last_iterations``.
        """
        from ..trees import batch_decode

        if algorithm not in ("mst", "eisner"):
            raise ValueError(f"algorithm must be 'mst' or 'eisner', got {algorithm!r}")
        T = self.refine_steps if refine_steps is None else refine_steps
        if not self.model.config.graph_channel:
            T = 0
        model = self.model
        was = model.training
        model.eval()
        examples = [_example(s, self.vocab) for s in sentences]
        if use_input_graph:
            from ..io.conllu import check_tree

            for s, ex in zip(sentences, examples):
                if any(h is None for h in s.heads):
                    bad = next(k for k, h in enumerate(s.heads) if h is None)
                    raise ValueError(f"{_where(s, bad)}: --refine needs a HEAD for every word, found '_' "
                                     "(expected an integer head 0..n)")
                why = check_tree([int(h) for h in s.heads])
                if why is not None:
                    raise ValueError(f"{_where(s)}: the input graph of --refine is not a single-rooted tree: "
                                     f"{why} (expected exactly one word with HEAD 0 and no cycles)")
        n_iter = T + (0 if use_input_graph else 1)
        iters: list[list] = [[None] * len(examples) for _ in range(max(n_iter, 1) if record_iterations else 0)]
        final: list = [None] * len(examples)
        self.last_passes = 0
        batches = self._batches(examples, max_tokens)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(examples), desc="parse", unit="sent", leave=False)
        dev = self.device
        with torch.inference_mode():
            for idx in batches:
                batch = make_batch([examples[i] for i in idx], idx, self.vocab, self.max_distance).to(dev)
                g = batch.graph
                words_mask = batch.words_mask
                lengths = (~g.padding_mask).sum(-1) - 1
                position = g.labels[:, 0].long()
                if use_input_graph:
                    heads = g.node_features["head"].clone()
                    rels = g.node_features["rel"].clone()
                    graph = dependency_labels(heads, rels, words_mask)
                else:
                    graph = None
                active = torch.arange(len(idx), device=dev)
                x = model.embed(g.tokens, batch.char_ids, batch.word_types)  # once for all iterations
                res_h = torch.zeros_like(g.tokens)
                res_r = torch.zeros_like(g.tokens)
                res_u = torch.zeros_like(g.tokens)
                for it in range(max(n_iter, 1)):
                    sub = active
                    lab = model.labels(position[sub], None if graph is None else graph[sub])
                    h = model.encoder(x[sub], lab, g.padding_mask[sub])
                    self.last_passes += int(sub.numel())
                    arc = model.arc(h, g.padding_mask[sub]).float()
                    n = arc.shape[-1]
                    arc = arc.masked_fill(torch.eye(n, dtype=torch.bool, device=dev), float("-inf"))
                    arc = torch.log_softmax(arc, -1)
                    heads_list = batch_decode(arc.cpu(), lengths[sub].cpu(), algorithm=algorithm)
                    ph = torch.zeros(sub.numel(), n, dtype=torch.long)
                    for k, hl in enumerate(heads_list):
                        ph[k, 1 : 1 + len(hl)] = torch.tensor(hl, dtype=torch.long)
                    ph = ph.to(dev)
                    wm = words_mask[sub]  # score relations / tags on real words only (no padding)
                    d, hh = model.rel.project(h)
                    hsel = hh.gather(1, ph[..., None].expand(-1, -1, hh.shape[-1]))[wm]
                    rs = model.rel.score(d[wm][:, None], hsel[:, None], torch.zeros(len(hsel), 1, dtype=torch.long,
                                                                                   device=dev))[:, 0]
                    is_root = ph[wm] == 0
                    rs[:, self._root_rel] = torch.where(is_root, float("inf"), float("-inf")).to(rs.dtype)
                    pr = torch.zeros_like(ph)
                    pr[wm] = rs.argmax(-1)
                    pu = torch.zeros_like(ph)
                    pu[wm] = model.tagger(h[wm]).argmax(-1)
                    res_h[sub], res_r[sub], res_u[sub] = ph, pr, pu
                    for k, b in enumerate(sub.tolist() if record_iterations else []):
                        iters[it][idx[b]] = self._decode_row(ph[k], pr[k], pu[k], int(lengths[b]))
                    new_graph = dependency_labels(ph, pr, words_mask[sub])
                    if graph is None:
                        graph = torch.zeros(len(idx), n, n, dtype=torch.long, device=dev)
                        changed = torch.ones(sub.numel(), dtype=torch.bool, device=dev)
                    else:
                        changed = (new_graph != graph[sub]).flatten(1).any(-1)
                    graph[sub] = new_graph
                    active = sub[changed]
                    if active.numel() == 0:
                        break  # fixed point everywhere: later iterations would be identical
                for b in range(len(idx)):
                    final[idx[b]] = self._decode_row(res_h[b], res_r[b], res_u[b], int(lengths[b]))
                for it in range(1, len(iters)):  # sentences frozen earlier keep their last parse
                    for b in range(len(idx)):
                        if iters[it][idx[b]] is None:
                            iters[it][idx[b]] = iters[it - 1][idx[b]]
                if bar is not None:
                    bar.update(len(idx))
        if bar is not None:
            bar.close()
        model.train(was)
        self.last_iterations = iters
        return final

    def _decode_row(self, h: Tensor, r: Tensor, u: Tensor, n: int) -> tuple[list[int], list[str], list[str]]:
        hl = h[1 : n + 1].tolist()
        rl = [self.vocab.rels[k] for k in r[1 : n + 1].tolist()]
        ul = [self.vocab.upos[k] for k in u[1 : n + 1].tolist()]
        return hl, rl, ul

    def parse(self, sentences: Sequence, refine_steps: int | None = None, algorithm: str = "mst",
              use_input_graph: bool = False, max_tokens: int = 3000, progress: bool = True,
              predict_upos: bool = True) -> list:
        """Parsed copies of ``sentences`` (``Sentence.with_parse``): HEAD, DEPREL and UPOS replaced,
        every other column, comment, multiword token and empty node kept."""
        pred = self.predict(sentences, refine_steps, algorithm, use_input_graph, max_tokens, progress)
        out = []
        for s, (h, r, u) in zip(sentences, pred):
            out.append(s.with_parse(h, r, u if predict_upos else None))
        return out

    def attention(self, sentence, refine_steps: int = 0, algorithm: str = "mst") -> tuple[list[str], list[Tensor]]:
        """Tokens (with ``<root>``) and per-layer attention weights ``[H, n, n]`` of the last pass."""
        graph = None
        if refine_steps > 0:
            (h, r, _), = self.predict([sentence], refine_steps=refine_steps - 1, algorithm=algorithm,
                                      progress=False)
            ex = _example(sentence, self.vocab)
            heads = torch.tensor([[0] + h])
            rels = torch.tensor([[0] + [self.vocab.rel_index.get(x, 0) for x in r]])
            valid = torch.ones_like(heads, dtype=torch.bool)
            valid[0, 0] = False
            graph = dependency_labels(heads, rels, valid).to(self.device)
        ex = _example(sentence, self.vocab)
        batch = make_batch([ex], [0], self.vocab, self.max_distance).to(self.device)
        g = batch.graph
        self.model.eval()
        lab = self.model.labels(g.labels[:, 0].long(), graph)
        ws = self.model.attention_weights(g.tokens, batch.char_ids, batch.word_types, g.padding_mask, lab)
        return ex.forms, [w[0].cpu() for w in ws]


def fast_inference_dtype(device: str | torch.device = "cpu") -> torch.dtype:
    """``torch.bfloat16`` where bfloat16 matrix products are fast (CUDA with bf16 support, CPUs with AMX
    tiles), else ``torch.float32``."""
    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    amx = getattr(torch.cpu, "_is_amx_tile_supported", None)  # private helper, present in torch >= 2.3
    try:
        return torch.bfloat16 if dev.type == "cpu" and amx is not None and amx() else torch.float32
    except Exception:  # pragma: no cover - unusual builds
        return torch.float32


def _dtype(dtype: torch.dtype | str | None, device: str | torch.device = "cpu") -> torch.dtype | None:
    """``None`` / a ``torch.dtype`` / a name such as ``"bfloat16"`` / ``"auto"`` (see
    :func:`fast_inference_dtype`) -> a floating ``torch.dtype`` or None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype == "auto":
        return fast_inference_dtype(device)
    dt = getattr(torch, str(dtype), None)
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise ValueError(f"dtype must be a floating torch dtype such as float32 or bfloat16, got {dtype!r}")
    return dt


def _where(sent, word: int | None = None) -> str:
    path = getattr(sent, "path", "<input>")
    line = getattr(sent, "line", 0)
    if word is not None and hasattr(sent, "word_line"):
        try:
            line = sent.word_line(word)
        except Exception:  # pragma: no cover - best effort
            pass
    return f"{path}:{line}"


def load_parser(model_dir: str | Path, device: str | torch.device = "cpu") -> Parser:
    """Shorthand for :meth:`Parser.load`."""
    return Parser.load(model_dir, device)


# --------------------------------------------------------------------------- training glue
def train_parser(train: Sequence, dev: Sequence, out_dir: str | Path, config: dict | None = None,
                 train_config=None, refine_train: str = "self", refine_steps: int = 2, max_tokens: int = 4000,
                 min_freq: int = 2, lowercase: bool = True, word_dropout: float = 0.2, corrupt_max: float = 0.3,
                 resume: bool = False) -> tuple[Parser, list[dict]]:
    """Build vocabularies, model and task; run :class:`g2gt.train.Trainer`; return the best parser.

    ``config``: overrides of :class:`ParserConfig` fields (e.g. ``{"d_model": 256}``).
    ``out_dir`` receives ``best.pt``, ``last.pt``, ``log.jsonl`` and a readable ``config.json``.
    When resuming, the vocabulary and model configuration are read back from ``last.pt``.
    """
    from ..train import TrainConfig, Trainer, load_checkpoint

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tc = train_config or TrainConfig(lr=1e-3, metric="las", metric_mode="max")
    last = out / "last.pt"
    if resume and last.exists():
        ck = load_checkpoint(last)
        vocab = ParserVocab.from_dict(ck["task"]["vocab"])
        cfg = ParserConfig.from_dict(ck["model_config"])
    else:
        vocab = ParserVocab.build(train, min_freq=min_freq, lowercase=lowercase)
        cfg = ParserConfig(len(vocab.words), len(vocab.chars), len(vocab.upos), len(vocab.rels),
                           **(config or {}))
    torch.manual_seed(tc.seed)
    model = RefinementParser(cfg)
    task = ParsingTask(train, dev, vocab, cfg.max_distance, max_tokens, refine_train, refine_steps, corrupt_max,
                       word_dropout, tc.seed, graph_channel=cfg.graph_channel)
    info = {
        "model_config": cfg.to_dict(), "train_config": tc.to_dict(),
        "task": {"refine_train": task.refine_train, "refine_steps": task.refine_steps, "max_tokens": max_tokens,
                 "min_freq": min_freq, "lowercase": lowercase, "word_dropout": word_dropout,
                 "corrupt_max": corrupt_max},
        "data": {"train_sentences": len(train), "dev_sentences": len(dev),
                 "train_words": sum(len(s) for s in train), "vocab_words": len(vocab.words),
                 "rels": len(vocab.rels), "upos": len(vocab.upos)},
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    (out / "config.json").write_text(json.dumps(info, indent=2) + "\n")
    trainer = Trainer(model, task, tc, out, model_config=cfg.to_dict())
    t0 = time.time()
    history = trainer.fit(resume=resume)
    info["train_seconds"] = round(time.time() - t0, 1)
    info["steps"] = trainer.step
    info["best_dev"] = trainer.best
    (out / "config.json").write_text(json.dumps(info, indent=2) + "\n")
    return Parser.load(out, trainer.device), history
