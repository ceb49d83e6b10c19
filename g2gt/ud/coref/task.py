"""Training the coreference model with the one :class:`g2gt.core.train.Trainer`.

Training data: documents with ``Entity=`` annotations (CorefUD) and trees, cut into windows of whole
sentences of at most ``window`` words (:func:`g2gt.ud.coref.data.windows`); every epoch cuts each document at
another place, so that a mention and its antecedent are not always split the same way. Windows are batched
up to ``max_tokens`` words.

Dev evaluation (:meth:`CorefTask.evaluate`) resolves whole dev documents from their gold trees
(:class:`g2gt.ud.coref.resolver.Coreferencer`) and reports, in percent, the CoNLL F1 with head match and
without singletons (``conll``, the CRAC primary metric, :mod:`g2gt.ud.coref.metrics`), its parts (``muc``,
``bcub``, ``ceafe``), the CoNLL F1 with singletons (``conll_sg``), mention detection F1 (``mention_f1``,
head match, singletons included) and the entity-type accuracy on matched mentions (``type_acc``).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Iterator, Sequence

import torch
from torch import Tensor

from ...core.checkpoint import holds_training_folder
from .data import CorefBatch, CorefVocab, make_batch, make_doc, shuffled_windows, window_graph
from .io import DEFAULT_LAYOUT, documents, entity_layout
from .metrics import coref_scores, mention_scores
from .model import CorefConfig, CorefModel
from .resolver import Coreferencer

__all__ = ["CorefTask", "train_coref"]


class CorefTask:
    """The Trainer task (protocol in :mod:`g2gt.core.train`); see the module docstring.

    Args:
        train_docs, dev_docs: documents (lists of sentences) with ``Entity=`` annotations and trees.
        vocab: :class:`CorefVocab` built on ``train_docs``.
        window: most words of a training window.
        max_tokens: words per batch (at least one window).
        word_dropout: probability of replacing a word id by ``<unk>`` in training.
        layout: the treebank's ``global.Entity`` layout (saved with the model for its output).
    """

    def __init__(self, train_docs: Sequence, dev_docs: Sequence, vocab: CorefVocab, window: int = 512,
                 max_tokens: int = 1024, word_dropout: float = 0.1, seed: int = 1, layout: str = DEFAULT_LAYOUT,
                 max_distance: int = 16) -> None:
        if not 0.0 <= word_dropout <= 1.0:
            raise ValueError(f"word_dropout must be in [0, 1], got {word_dropout}")
        if window < 16:
            raise ValueError(f"window must be at least 16 words, got {window}")
        self.vocab = vocab
        self.train = [make_doc(d, vocab) for d in train_docs]
        self.dev = [make_doc(d, vocab) for d in dev_docs]
        self.window = window
        self.max_tokens = max(max_tokens, window)
        self.word_dropout = word_dropout
        self.seed = seed
        self.layout = layout
        self.max_distance = max_distance

    def _batches(self, epoch: int, rank: int, world_size: int) -> list[list[tuple[int, int, int]]]:
        wins = shuffled_windows(self.train, self.window, (self.seed * 7919 + epoch) * 1_000_003)
        batches, cur, size = [], [], 0
        for w in wins:
            if cur and size + (w[2] - w[1]) > self.max_tokens:
                batches.append(cur)
                cur, size = [], 0
            cur.append(w)
            size += w[2] - w[1]
        if cur:
            batches.append(cur)
        return batches[rank::world_size]

    # -- protocol
    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> Iterator[CorefBatch]:
        for ws in self._batches(epoch, rank, world_size)[skip:]:
            yield make_batch([window_graph(self.train[d], self.vocab, a, b, self.max_distance) for d, a, b in ws],
                             self.vocab)

    def num_train_batches(self, epoch: int, rank: int, world_size: int) -> int:
        return len(self._batches(epoch, rank, world_size))

    def num_tokens(self, batch: CorefBatch) -> int:
        return batch.num_words

    def loss(self, model, batch: CorefBatch) -> Tensor:
        if self.word_dropout > 0 and model.training:
            g = batch.graphs
            drop = (torch.rand(g.tokens.shape, device=g.tokens.device) < self.word_dropout) & ~g.padding_mask
            g.tokens = g.tokens.masked_fill(drop, 1)
        return model(batch)

    def evaluate(self, model) -> dict[str, float]:
        core = model.module if hasattr(model, "module") else model
        pred = Coreferencer(core, self.vocab, self.layout).predict_docs(self.dev)
        if "head" not in self.layout.split("-"):  # as the scorer reads the written file: head = first word
            pred = [[dataclasses.replace(m, head=None) for m in doc] for doc in pred]
        gold = [ex.mentions for ex in self.dev]
        out = coref_scores(gold, pred)
        sg = coref_scores(gold, pred, singletons=True)
        scores = {"conll": out["conll"], "muc": out["muc_f1"], "bcub": out["bcub_f1"], "ceafe": out["ceafe_f1"],
                  "conll_sg": sg["conll"]}
        scores.update(mention_scores(gold, pred))
        return scores

    def checkpoint_extra(self) -> dict:
        return {"kind": "coref", "vocab": self.vocab.to_dict(), "layout": self.layout, "window": self.window}


@holds_training_folder
def train_coref(train: Sequence, dev: Sequence, out_dir: str | Path, config: dict | None = None,
                train_config=None, *, window: int = 512, max_tokens: int = 1024, min_freq: int = 2,
                word_dropout: float = 0.1, resume: bool = False) -> tuple[Coreferencer, list[dict]]:
    """Build the vocabulary, model and task from training and dev *sentences* (with ``# newdoc`` and
    ``Entity=``); run the Trainer; return the best :class:`Coreferencer`.

    ``config``: overrides of :class:`CorefConfig` fields (e.g. ``{"d_model": 256}``). ``out_dir`` receives
    ``best.pt``, ``last.pt``, ``log.jsonl`` and ``config.json``. When resuming, the vocabulary and model
    configuration come from ``last.pt``.
    """
    from ...core.config import TrainConfig
    from ...core.run import resume_checkpoint, run_training

    train_docs, dev_docs = documents(train), documents(dev)
    for name, docs in (("training", train_docs), ("dev", dev_docs)):
        if not any(s.words and any((t["misc"] or {}).get("Entity") for t in s.words) for d in docs for s in d):
            raise ValueError(f"the {name} data has no Entity= annotations in MISC (expected CorefUD coreference, "
                             "e.g. UD_English-GUM)")
    layout = entity_layout(train_docs[0]) or DEFAULT_LAYOUT
    tc = train_config or TrainConfig(lr=1e-3, metric="conll", metric_mode="max")
    ck = resume_checkpoint(out_dir, resume)
    if ck is not None:
        vocab = CorefVocab.from_dict(ck["task"]["vocab"])
        cfg = CorefConfig.from_dict(ck["model_config"])
    else:
        vocab = CorefVocab.build(train_docs, min_freq=min_freq)
        cfg = CorefConfig(len(vocab.words), len(vocab.chars), len(vocab.upos), len(vocab.rels), len(vocab.morph),
                          len(vocab.tree_labels), 1 + len(vocab.etypes), **(config or {}))
    torch.manual_seed(tc.seed)
    random.seed(tc.seed)
    model = CorefModel(cfg)
    task = CorefTask(train_docs, dev_docs, vocab, window, max_tokens, word_dropout, tc.seed, layout, cfg.max_distance)
    task_info = {"window": window, "max_tokens": max_tokens, "min_freq": min_freq, "word_dropout": word_dropout,
                 "layout": layout}
    data_info = {"train_documents": len(train_docs), "dev_documents": len(dev_docs),
                 "train_words": sum(len(ex) for ex in task.train),
                 "train_mentions": sum(len(ex.mentions) for ex in task.train), "entity_types": vocab.etypes[1:]}
    trainer, history = run_training(model, task, tc, out_dir, cfg.to_dict(), task_info=task_info, data_info=data_info,
                                    resume=resume)
    return Coreferencer.load(out_dir, trainer.device), history
