"""Training the coreference model with the one :class:`g2gt.core.train.Trainer`.

Training data: documents with ``Entity=`` annotations (CorefUD) and trees, cut into windows of whole
sentences of at most ``window`` words (:func:`g2gt.ud.coref.data.windows`); every epoch cuts each document at
another place, so that a mention and its antecedent are not always split the same way. Windows are batched
up to ``batch_tokens`` words.

Dev evaluation (:meth:`CorefTask.evaluate`) resolves whole dev documents from their gold trees
(:class:`g2gt.ud.coref.resolver.Coreferencer`) and reports, in percent, the CoNLL F1 with head match and
without singletons (``conll``, the CRAC primary metric, :mod:`g2gt.ud.coref.metrics`), its parts (``muc``,
``bcub``, ``ceafe``), the CoNLL F1 with singletons (``conll_sg``), mention detection F1 (``mention_f1``,
head match, singletons included) and the entity-type accuracy on matched mentions (``type_acc``).
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import torch
from torch import Tensor

from .data import CorefBatch, CorefVocab, make_batch, make_doc, shuffled_windows, window_graph
from .io import DEFAULT_LAYOUT
from .metrics import coref_scores, mention_scores
from .resolver import Coreferencer

__all__ = ["CorefTask"]


class CorefTask:
    """The Trainer task (protocol in :mod:`g2gt.core.train`); see the module docstring.

    Args:
        train_docs, dev_docs: documents (lists of sentences) with ``Entity=`` annotations and trees.
        vocab: :class:`CorefVocab` built on ``train_docs``.
        window: most words of a training window.
        batch_tokens: words per batch (at least one window).
        word_dropout: probability of replacing a word id by ``<unk>`` in training.
        layout: the treebank's ``global.Entity`` layout (saved with the model for its output).
        max_distance: clip distance of the relative-position labels (the model's).
        threshold: antecedent score a link must beat in the dev evaluation, saved with the model (0 = "no
            antecedent" as trained; a warm start keeps its source's).
    """

    def __init__(self, train_docs: Sequence, dev_docs: Sequence, vocab: CorefVocab, window: int = 512,
                 batch_tokens: int = 1024, word_dropout: float = 0.1, seed: int = 1, layout: str = DEFAULT_LAYOUT,
                 max_distance: int = 16, threshold: float = 0.0) -> None:
        if not 0.0 <= word_dropout <= 1.0:
            raise ValueError(f"word_dropout must be in [0, 1], got {word_dropout}")
        if window < 16:
            raise ValueError(f"window must be at least 16 words, got {window}")
        self.vocab = vocab
        self.train = [make_doc(d, vocab) for d in train_docs]
        self.dev = [make_doc(d, vocab) for d in dev_docs]
        self.window = window
        self.batch_tokens = max(batch_tokens, window)
        self.word_dropout = word_dropout
        self.seed = seed
        self.layout = layout
        self.max_distance = max_distance
        self.threshold = float(threshold)

    def _batches(self, epoch: int, rank: int, world_size: int) -> list[list[tuple[int, int, int]]]:
        wins = shuffled_windows(self.train, self.window, (self.seed * 7919 + epoch) * 1_000_003)
        batches, cur, size = [], [], 0
        for w in wins:
            if cur and size + (w[2] - w[1]) > self.batch_tokens:
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
        pred = Coreferencer(core, self.vocab, self.layout, threshold=self.threshold).predict_docs(self.dev)
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
        return {"kind": "coref", "vocab": self.vocab.to_dict(), "layout": self.layout, "window": self.window,
                "threshold": self.threshold}
