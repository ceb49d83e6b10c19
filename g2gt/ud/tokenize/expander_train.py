"""Training the multiword-token expander (:mod:`g2gt.ud.tokenize.expander`) with the library's Trainer.

* :func:`mwt_pairs`: the ``(surface, words)`` pairs of the multiword tokens of CoNLL-U documents, every
  occurrence (frequent tokens weigh more, as in the text); :func:`one_word_forms`: the different one-word
  tokens, the copy examples;
* :class:`ExpanderTask`: an epoch is every multiword pair (mode ``<mwt>``), ``copy_ratio`` times as many
  one-word tokens drawn at random (mode ``<one>``, target = the token), and for the decide mode (``<any>``)
  every multiword pair again plus ``decide_ratio`` times as many one-word tokens; shuffled (seeded by
  ``(seed, epoch)``), in length-bucketed batches of at most ``batch_tokens`` padded symbols
  (:func:`transducer_batches`);
  loss = label-smoothed cross entropy summed over target characters (the separator and EOS included);
  ``evaluate``: greedy exact-match ``accuracy`` (percent, lowercased words) on the dev pairs, and ``loss``;
* :func:`train_expander`: vocabulary + model + task, run by :func:`g2gt.core.run.run_training` (``config.json``,
  the Trainer, averaging) in one call.

Dev pairs come from the dev data's multiword tokens; a treebank whose dev set has none is evaluated on (at
most 200 of) its training pairs instead, which only tracks the fit.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ...core.batch import shard, token_budget_batches
from ...core.config import TrainConfig
from ...core.run import training_run
from ...nn.char_transducer import transducer_loss
from .config import ExpanderConfig
from .expander import (
    ANY, BOS, EOS, EXPANDER_KIND, MWT, ONE, PAD, ExpanderVocab, MWTExpander, build_expander_model,
)

__all__ = ["ExpanderBatch", "ExpanderTask", "mwt_pairs", "one_word_forms", "expander_train_config",
           "train_expander", "load_expander", "transducer_batches"]

Pair = tuple[str, tuple[str, ...]]


def mwt_pairs(docs) -> list[Pair]:
    """``(surface, words)`` of every multiword token of ``docs``
    (:func:`g2gt.ud.tokenize.data.documents_from_sentences`), in order."""
    return [(t.form, tuple(t.words)) for d in docs for s in d.sentences for t in s if t.is_mwt]


def one_word_forms(docs, limit: int = 20_000) -> list[str]:
    """The different one-word tokens of ``docs`` with at least two characters and no space (at most ``limit``,
    the first seen)."""
    seen: dict[str, None] = {}
    for d in docs:
        for s in d.sentences:
            for t in s:
                if not t.is_mwt and len(t.form) > 1 and " " not in t.form and len(seen) < limit:
                    seen.setdefault(t.form, None)
    return list(seen)


def expander_train_config(**overrides) -> TrainConfig:
    """The expander's :class:`TrainConfig`: lr 3e-3, 5 % warmup, 20 % cooldown, an evaluation every 200
    updates keeping the best dev ``accuracy``."""
    base = dict(lr=3e-3, warmup=0.05, cooldown=0.2, weight_decay=0.01, grad_clip=1.0, eval_every=200,
                log_every=50, metric="accuracy", metric_mode="max")
    base.update(overrides)
    return TrainConfig(**base)


@dataclass
class ExpanderBatch:
    """``src [B, n]``, ``tgt_in [B, m]`` (BOS + target), ``tgt_out [B, m]`` (target + EOS), long, ``PAD``
    where padded."""

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor

    def to(self, device, non_blocking: bool = False) -> ExpanderBatch:
        return ExpanderBatch(*(t.to(device, non_blocking=non_blocking) for t in (self.src, self.tgt_in, self.tgt_out)))


def _pad(rows: Sequence[Sequence[int]]) -> Tensor:
    n = max(len(r) for r in rows)
    return torch.tensor([list(r) + [PAD] * (n - len(r)) for r in rows], dtype=torch.long)


def transducer_batches(rows: Sequence[tuple[Sequence[int], Sequence[int]]], batch_tokens: int, seed: int,
                       rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[ExpanderBatch]:
    """``(source, target)`` symbol rows in length-bucketed batches of at most ``batch_tokens`` padded symbols
    (:func:`g2gt.core.batch.token_budget_batches`, a row's length being the longer of its source and its
    target with BOS / EOS; deterministic in ``seed``), this rank's :func:`g2gt.core.batch.shard` of them, the
    first ``skip`` left out. The lemmatizer's batches are made the same way."""
    lengths = [max(len(src), len(tgt) + 1) for src, tgt in rows]
    batches = token_budget_batches(lengths, batch_tokens, shuffle=True, seed=seed)
    for idx in shard(batches, rank, world_size)[skip:]:
        chunk = [rows[i] for i in idx]
        yield ExpanderBatch(_pad([r[0] for r in chunk]), _pad([[BOS, *r[1]] for r in chunk]),
                            _pad([[*r[1], EOS] for r in chunk]))


class ExpanderTask:
    """The Trainer task of the expander (module docstring)."""

    def __init__(self, train_pairs: Sequence[Pair], dev_pairs: Sequence[Pair], vocab: ExpanderVocab,
                 config: ExpanderConfig, seed: int = 1, copy_forms: Sequence[str] = ()) -> None:
        if not train_pairs:
            raise ValueError("the expander needs multiword tokens in the training data, and there are none")
        self.vocab = vocab
        self.config = config
        self.seed = seed
        # (characters without the mode symbol, target)
        self.train = [(vocab.encode_surface(s)[1:], vocab.encode_words(w)) for s, w in train_pairs]
        self.copies = [(vocab.encode_surface(f)[1:], vocab.encode_words([f])) for f in copy_forms]
        self.dev = list(dev_pairs) or list(train_pairs)[:200]

    def _epoch_rows(self, epoch: int) -> list[tuple[list[int], list[int]]]:
        """Sources with their mode symbol and targets of one epoch, shuffled (module docstring)."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        n = len(self.train)
        rows = [([MWT, *src], tgt) for src, tgt in self.train]
        if self.copies:
            draw = (lambda k: [self.copies[rng.randrange(len(self.copies))] for _ in range(k)])
            rows += [([ONE, *src], tgt) for src, tgt in draw(round(self.config.copy_ratio * n))]
            if self.vocab.can_decide and self.config.decide_ratio > 0:
                rows += [([ANY, *src], tgt) for src, tgt in self.train]
                rows += [([ANY, *src], tgt) for src, tgt in draw(round(self.config.decide_ratio * n))]
        rng.shuffle(rows)
        return rows

    def train_batches(self, epoch: int, rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[ExpanderBatch]:
        yield from transducer_batches(self._epoch_rows(epoch), self.config.batch_tokens,
                                      self.seed * 1_000_003 + epoch, rank, world_size, skip)

    def num_tokens(self, batch: ExpanderBatch) -> int:
        return int((batch.tgt_out != PAD).sum())

    def loss(self, model, batch: ExpanderBatch) -> Tensor:
        return transducer_loss(model, batch.src, batch.tgt_in, batch.tgt_out, self.config.max_distance, PAD,
                               self.config.label_smoothing)

    def evaluate(self, model) -> dict[str, float]:
        expander = MWTExpander(model, self.vocab, self.config)
        surfaces = [s for s, _ in self.dev]
        predicted = expander.predict(surfaces)
        right = sum(p == [w.lower() for w in gold] for p, (_, gold) in zip(predicted, self.dev))
        rows = [(self.vocab.encode_surface(s), self.vocab.encode_words(w)) for s, w in self.dev]
        total, tokens = 0.0, 0
        for b in range(0, len(rows), 256):
            chunk = rows[b:b + 256]
            batch = ExpanderBatch(_pad([r[0] for r in chunk]), _pad([[BOS] + r[1] for r in chunk]),
                                  _pad([r[1] + [EOS] for r in chunk])).to(next(model.parameters()).device)
            total += float(self.loss(model, batch))
            tokens += self.num_tokens(batch)
        return {"accuracy": 100.0 * right / max(len(self.dev), 1), "loss": total / max(tokens, 1)}

    def checkpoint_extra(self) -> dict:
        return {"kind": EXPANDER_KIND, "chars": self.vocab.to_list(), "specials": self.vocab.specials}


@training_run
def train_expander(train_pairs: Sequence[Pair], dev_pairs: Sequence[Pair], out_dir: str | os.PathLike,
                   config: ExpanderConfig | None = None, train_config: TrainConfig | None = None,
                   resume: bool = False, copy_forms: Sequence[str] = (), overwrite: bool = False) -> MWTExpander:
    """Train on ``(surface, words)`` pairs (:func:`mwt_pairs`) and copy examples ``copy_forms``
    (:func:`one_word_forms`); ``out_dir`` gets ``best.pt``, ``last.pt``, ``log.jsonl`` and ``config.json``
    (:func:`g2gt.core.run.run_training`). On resume the vocabulary and configuration come from
    ``out_dir/last.pt``; a folder that holds a run is refused unless ``resume`` or ``overwrite``. Returns the
    :class:`MWTExpander` of ``best.pt``."""
    from ...core.run import resume_checkpoint, run_training

    tc = train_config or expander_train_config()
    ck = resume_checkpoint(out_dir, resume)
    if ck is not None:
        vocab = ExpanderVocab(ck["task"]["chars"], ck["task"].get("specials", 7))
        cfg = ExpanderConfig.from_dict(ck["model_config"])
    else:
        vocab = ExpanderVocab.build([*train_pairs, *((f, (f,)) for f in copy_forms)])
        cfg = dataclasses.replace(config or ExpanderConfig(), vocab_size=len(vocab))
    torch.manual_seed(tc.seed)
    model = build_expander_model(cfg)
    task = ExpanderTask(train_pairs, dev_pairs, vocab, cfg, tc.seed, copy_forms)
    data_info = {"train_pairs": len(train_pairs), "dev_pairs": len(task.dev), "copy_forms": len(copy_forms),
                 "characters": len(vocab.to_list())}
    run_training(model, task, tc, out_dir, cfg.to_dict(), task_info={"kind": EXPANDER_KIND}, data_info=data_info,
                 resume=resume, overwrite=overwrite)
    return load_expander(out_dir, "cpu", "float32")


def load_expander(path: str | os.PathLike, device: torch.device | str = "auto",
                  dtype: torch.dtype | str | None = "auto") -> MWTExpander:
    """The :class:`MWTExpander` of an expander training folder (``best.pt``, else ``last.pt``) or checkpoint;
    ``device`` and ``dtype`` as every loader (:func:`g2gt.core.runtime.resolve_dtype`)."""
    from ...core.checkpoint import load_checkpoint, resolve_checkpoint
    from ...core.runtime import resolve_device, resolve_dtype

    device = resolve_device(device)
    dt = resolve_dtype(dtype, device)

    file = resolve_checkpoint(path)
    ck = load_checkpoint(file, device)
    if (ck.get("task") or {}).get("kind") != EXPANDER_KIND:
        raise ValueError(f"{file}: not a multiword-token expander checkpoint (written by train_expander)")
    cfg = ExpanderConfig.from_dict(ck["model_config"])
    model = build_expander_model(cfg)
    model.load_state_dict(ck["model"], strict=True)
    return MWTExpander(model.to(device=device, dtype=dt), ExpanderVocab(ck["task"]["chars"], ck["task"].get("specials", 7)), cfg)
