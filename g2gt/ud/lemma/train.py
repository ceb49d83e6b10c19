"""Training the character lemmatizer (:mod:`g2gt.ud.lemma.model`) with the library's Trainer.

* :func:`lemma_examples`: the different ``(form, UPOS, FEATS, lemma)`` of CoNLL-U sentences (word types, not
  tokens: the words the lemmatizer is asked about are mostly rare ones, so frequent words should not dominate);
* :class:`LemmaTask`: an epoch is every training example once, shuffled (seeded by ``(seed, epoch)``), in
  batches of ``batch_words``; each tag symbol of a training source is hidden with probability ``tag_dropout``
  (the parser's predicted tags are sometimes wrong); loss = label-smoothed cross entropy summed over target
  characters (EOS included); ``evaluate``: greedy exact-match ``accuracy`` (percent) and ``loss`` on the dev
  examples whose form the training data does not have (the words the lemmatizer is for; all dev examples when
  there are none);
* :func:`train_lemmatizer`: vocabulary + model + task + :class:`g2gt.core.train.Trainer` in one call.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from ...core.checkpoint import holds_training_folder
from ...core.config import TrainConfig
from ...nn.char_transducer import transducer_loss
from ..tokenize.expander_train import ExpanderBatch, _pad
from .config import LemmaConfig, lemma_train_config
from .model import (
    BOS, EOS, LEMMATIZER_KIND, PAD, CharLemmatizer, LemmaVocab, build_lemma_model,
)

__all__ = ["Example", "LemmaBatch", "LemmaTask", "lemma_examples", "lemma_train_config", "train_lemmatizer"]

Example = tuple[str, str, str, str]  # form, UPOS, FEATS string ("_" = none), lemma


def lemma_examples(sentences) -> list[Example]:
    """The different ``(form, upos, feats, lemma)`` of ``sentences`` (objects with ``words``, e.g.
    :class:`g2gt.ud.io.Sentence`), first occurrence first; words without a lemma (``_``) are left out."""
    seen: dict[Example, None] = {}
    for s in sentences:
        column = [_feats_string(t.get("feats")) for t in s.word_rows]
        for form, upos, feats, lemma in zip(s.forms, s.upos, column, s.lemmas):
            if lemma in (None, "", "_") or not form:
                continue
            seen.setdefault((form, upos, feats, lemma), None)
    return list(seen)


def _feats_string(f) -> str:
    """A FEATS value (dict, string or None) as the CoNLL-U string, ``"_"`` when empty."""
    if isinstance(f, dict):
        return "|".join(f"{k}={v}" for k, v in f.items()) or "_"
    return f if f else "_"


# a lemmatizer batch has the expander's shape: source symbols, BOS + target, target + EOS (same special ids)
LemmaBatch = ExpanderBatch


def _batch(sources: Sequence[list[int]], targets: Sequence[list[int]]) -> LemmaBatch:
    return LemmaBatch(_pad(sources), _pad([[BOS, *t] for t in targets]), _pad([[*t, EOS] for t in targets]))


class LemmaTask:
    """The Trainer task of the lemmatizer (module docstring)."""

    def __init__(self, train: Sequence[Example], dev: Sequence[Example], vocab: LemmaVocab, config: LemmaConfig,
                 seed: int = 1) -> None:
        if not train:
            raise ValueError("the lemmatizer needs words with lemmas in the training data, and there are none "
                             "(is the LEMMA column empty?)")
        self.train = list(train)
        self.vocab = vocab
        self.config = config
        self.seed = seed
        forms = {f for f, *_ in self.train}
        every = list(dev) or self.train[:500]
        self.dev = [e for e in every if e[0] not in forms] or every

    def _rows(self, epoch: int) -> list[tuple[list[int], list[int]]]:
        rng = random.Random(self.seed * 1_000_003 + epoch)
        p = self.config.tag_dropout
        keep = (lambda _t: rng.random() >= p) if p > 0 else None
        order = list(range(len(self.train)))
        rng.shuffle(order)
        rows = []
        for i in order:
            form, upos, feats, lemma = self.train[i]
            rows.append((self.vocab.encode_source(form, upos, feats, keep), self.vocab.encode_target(lemma)))
        return rows

    def num_train_batches(self, epoch: int, rank: int = 0, world_size: int = 1) -> int:
        starts = -(-len(self.train) // self.config.batch_words)
        return starts // world_size if world_size > 1 else starts

    def train_batches(self, epoch: int, rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[LemmaBatch]:
        rows = self._rows(epoch)
        B = self.config.batch_words
        starts = list(range(0, len(rows), B))
        per = len(starts) // world_size if world_size > 1 else len(starts)
        for s in starts[rank::world_size][:per][skip:]:
            chunk = rows[s:s + B]
            yield _batch([r[0] for r in chunk], [r[1] for r in chunk])

    def num_tokens(self, batch: LemmaBatch) -> int:
        return int((batch.tgt_out != PAD).sum())

    def loss(self, model, batch: LemmaBatch) -> Tensor:
        return transducer_loss(model, batch.src, batch.tgt_in, batch.tgt_out, self.config.max_distance, PAD,
                               self.config.label_smoothing)

    def evaluate(self, model) -> dict[str, float]:
        lem = CharLemmatizer(model, self.vocab, self.config)
        predicted = lem.predict([(f, u, x) for f, u, x, _ in self.dev])
        right = sum(p == e[3] for p, e in zip(predicted, self.dev))
        device = next(model.parameters()).device
        total, tokens = 0.0, 0
        with torch.no_grad():
            for b in range(0, len(self.dev), 256):
                chunk = self.dev[b:b + 256]
                batch = _batch([self.vocab.encode_source(f, u, x) for f, u, x, _ in chunk],
                               [self.vocab.encode_target(lemma) for *_, lemma in chunk]).to(device)
                total += float(self.loss(model, batch))
                tokens += self.num_tokens(batch)
        return {"accuracy": 100.0 * right / len(self.dev), "loss": total / max(tokens, 1)}

    def checkpoint_extra(self) -> dict:
        return {"kind": LEMMATIZER_KIND, "tags": list(self.vocab.tags), "chars": list(self.vocab.chars),
                "forms": sorted({f for f, *_ in self.train})}


@holds_training_folder
def train_lemmatizer(train: Sequence[Example], dev: Sequence[Example], out_dir: str | os.PathLike,
                     config: LemmaConfig | None = None, train_config: TrainConfig | None = None,
                     resume: bool = False) -> CharLemmatizer:
    """Train on ``(form, upos, feats, lemma)`` examples (:func:`lemma_examples`); ``out_dir`` gets ``best.pt``,
    ``last.pt`` and ``log.jsonl``. On resume the vocabulary and configuration come from ``out_dir/last.pt``.
    Returns the :class:`CharLemmatizer` of ``best.pt``."""
    from ...core.checkpoint import load_checkpoint
    from ...core.train import Trainer

    tc = train_config or lemma_train_config()
    last = os.path.join(out_dir, "last.pt")
    if resume and os.path.exists(last):
        ck = load_checkpoint(last)
        vocab = LemmaVocab(ck["task"]["tags"], ck["task"]["chars"])
        cfg = LemmaConfig.from_dict(ck["model_config"])
    else:
        vocab = LemmaVocab.build(train)
        cfg = dataclasses.replace(config or LemmaConfig(), vocab_size=len(vocab))
    torch.manual_seed(tc.seed)
    model = build_lemma_model(cfg)
    task = LemmaTask(train, dev, vocab, cfg, tc.seed)
    Trainer(model, task, tc, out_dir, model_config=cfg.to_dict()).fit(resume=resume)
    return CharLemmatizer.load(out_dir)
