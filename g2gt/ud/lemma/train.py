"""Training the character lemmatizer (:mod:`g2gt.ud.lemma.model`) with the library's Trainer.

* :func:`lemma_examples`: the different ``(form, UPOS, FEATS, lemma)`` of CoNLL-U sentences (word types, not
  tokens: the words the lemmatizer is asked about are mostly rare ones, so frequent words should not dominate);
* :class:`LemmaTask`: an epoch is every training example once, shuffled (seeded by ``(seed, epoch)``), in
  length-bucketed batches of at most ``batch_tokens`` padded symbols (the expander's
  :func:`~g2gt.ud.tokenize.expander_train.transducer_batches`); each tag symbol of a training source is hidden
  with probability ``tag_dropout`` (the parser's predicted tags are sometimes wrong); loss = label-smoothed cross entropy summed over target
  characters (EOS included); ``evaluate``: greedy exact-match ``accuracy`` (percent) and ``loss`` on the dev
  examples whose form the training data does not have (the words the lemmatizer is for; all dev examples when
  there are none);
* :func:`train_lemmatizer`: vocabulary + model + task, run by :func:`g2gt.core.run.run_training`
  (``config.json``, the Trainer, averaging) in one call.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from ...core.config import TrainConfig
from ...core.run import training_run
from ...nn.char_transducer import transducer_loss
from ..tokenize.expander_train import ExpanderBatch, _pad, transducer_batches
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

    def train_batches(self, epoch: int, rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[LemmaBatch]:
        yield from transducer_batches(self._rows(epoch), self.config.batch_tokens, self.seed * 1_000_003 + epoch,
                                      rank, world_size, skip)

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


@training_run
def train_lemmatizer(train: Sequence[Example], dev: Sequence[Example], out_dir: str | os.PathLike,
                     config: LemmaConfig | None = None, train_config: TrainConfig | None = None,
                     resume: bool = False, overwrite: bool = False) -> CharLemmatizer:
    """Train on ``(form, upos, feats, lemma)`` examples (:func:`lemma_examples`); ``out_dir`` gets ``best.pt``,
    ``last.pt``, ``log.jsonl`` and ``config.json`` (:func:`g2gt.core.run.run_training`; with
    ``train_config.average_last`` also ``averaged.pt``). On resume the vocabulary and configuration come from
    ``out_dir/last.pt``; a folder that holds a run is refused unless ``resume`` or ``overwrite``. Returns the
    :class:`CharLemmatizer` of ``best.pt``."""
    from ...core.run import resume_checkpoint, run_training

    tc = train_config or lemma_train_config()
    ck = resume_checkpoint(out_dir, resume)
    if ck is not None:
        vocab = LemmaVocab(ck["task"]["tags"], ck["task"]["chars"])
        cfg = LemmaConfig.from_dict(ck["model_config"])
    else:
        vocab = LemmaVocab.build(train)
        cfg = dataclasses.replace(config or LemmaConfig(), vocab_size=len(vocab))
    torch.manual_seed(tc.seed)
    model = build_lemma_model(cfg)
    task = LemmaTask(train, dev, vocab, cfg, tc.seed)
    data_info = {"train_words": len(train), "dev_words": len(task.dev), "symbols": len(vocab)}
    run_training(model, task, tc, out_dir, cfg.to_dict(), task_info={"kind": LEMMATIZER_KIND}, data_info=data_info,
                 resume=resume, overwrite=overwrite)
    return CharLemmatizer.load(out_dir)
