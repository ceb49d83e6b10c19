"""Training the enhanced-graph model with the one :class:`g2gt.core.train.Trainer`.

Input trees in training (the refinement trick, so that the model works on predicted trees): for every
sentence of every batch, the input basic tree is

* the parser's prediction with probability ``parser_prob`` when ``parser_trees`` are given (e.g. from
  ``g2gt train enhancer --parser MODEL``), else the gold tree;
* then, with probability ``corrupt_prob``, corrupted: a fraction (uniform in ``[0, corrupt_max]``) of the
  words re-attached to random nodes outside their subtree and relabelled at random
  (:func:`g2gt.ud.enhance.data.corrupt_tree`; it stays a tree).

The target is always the gold DEPS; case-marked label templates are computed on the gold tree. The noise
is a deterministic function of ``(seed, epoch, batch position)``, so resumed runs see the same inputs.

Dev evaluation (:meth:`EnhancerTask.evaluate`) uses the gold dev trees and reports enhanced-edge F1 in
percent: ``elas`` (relation equal), ``eulas`` (universal part of the relation equal) and ``uelas`` (head
only), over word-to-word edges -- the official numbers come from ``g2gt evaluate`` (udeval's ELAS / EULAS).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterator, Sequence

import torch
from torch import Tensor

from ...core.batch import BucketBatchSampler
from .data import EnhancerBatch, EnhancerVocab, corrupt_tree, make_batch, make_example, sentence_edges
from .enhancer import Enhancer
from .config import ENHANCER_TRAIN, enhancer_train_config  # noqa: F401 (re-exported)

__all__ = ["EnhancerTask", "enhanced_scores", "parser_trees"]


def enhanced_scores(gold: Sequence, pred: Sequence[Sequence[tuple]]) -> dict[str, float]:
    """Labelled / universal-labelled / unlabelled F1 (percent) of predicted word-to-word enhanced edges
    ``(d, h, relation)`` against the gold sentences' DEPS (edges to empty nodes are left out of both)."""
    g_n = p_n = c_l = c_u = c_h = 0
    for s, edges in zip(gold, pred):
        g = {(d, h): lab for d, h, lab in sentence_edges(s) if isinstance(h, int)}
        p = {(d, h): lab for d, h, lab in edges if isinstance(h, int)}
        g_n += len(g)
        p_n += len(p)
        for k, lab in p.items():
            if k in g:
                c_h += 1
                c_l += g[k] == lab
                c_u += g[k].split(":")[0] == lab.split(":")[0]

    def f1(c: int) -> float:
        return 200.0 * c / max(g_n + p_n, 1)

    return {"elas": f1(c_l), "eulas": f1(c_u), "uelas": f1(c_h)}


class EnhancerTask:
    """The Trainer task (protocol in :mod:`g2gt.core.train`); see the module docstring.

    Args:
        train, dev: sentences with a basic tree and DEPS (``g2gt.ud.io`` sentences).
        vocab: :class:`EnhancerVocab` built on ``train``.
        batch_tokens: padded tokens per training batch; ``eval_batch_tokens``: per dev batch.
        word_dropout: probability of replacing a word id by ``<unk>`` in training.
        corrupt_prob, corrupt_max: noisy input trees (module docstring).
        parser_trees: per training sentence ``(heads, deprels)`` predicted by a parser (1-based heads,
            without ROOT), or None.
        parser_prob: how often the parser's tree is the input when ``parser_trees`` is given.
    """

    def __init__(self, train: Sequence, dev: Sequence, vocab: EnhancerVocab, batch_tokens: int = 1500,
                 word_dropout: float = 0.2, corrupt_prob: float = 0.3, corrupt_max: float = 0.15,
                 parser_trees: Sequence[tuple[Sequence[int], Sequence[str]]] | None = None, parser_prob: float = 0.5,
                 seed: int = 1, eval_batch_tokens: int = 3000) -> None:
        for name, p in (("corrupt_prob", corrupt_prob), ("corrupt_max", corrupt_max), ("parser_prob", parser_prob),
                        ("word_dropout", word_dropout)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {p}")
        self.vocab = vocab
        self.train = [make_example(s, vocab) for s in train]
        self.dev = list(dev)
        for s in self.dev:
            sentence_edges(s)  # file:line errors before training starts
        self.batch_tokens = batch_tokens
        self.word_dropout = word_dropout
        self.corrupt_prob = corrupt_prob
        self.corrupt_max = corrupt_max
        self.parser_prob = parser_prob
        self.seed = seed
        self.eval_batch_tokens = eval_batch_tokens
        self.parser_trees: list[tuple[list[int], list[int]]] | None = None
        if parser_trees is not None:
            if len(parser_trees) != len(self.train):
                raise ValueError(f"parser_trees has {len(parser_trees)} trees for {len(self.train)} training sentences")
            self.parser_trees = []
            for ex, (h, r) in zip(self.train, parser_trees):
                if len(h) != len(ex.words) - 1:
                    raise ValueError("a parser tree has a different number of words than its training sentence")
                self.parser_trees.append(([0] + [int(x) for x in h], [0] + [vocab.rel_index.get(x, 1) for x in r]))
        self._lengths = [len(ex.words) for ex in self.train]

    # -- protocol
    def _sampler(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> BucketBatchSampler:
        s = BucketBatchSampler(self._lengths, self.batch_tokens, True, self.seed,
                               num_replicas=world_size, rank=rank)
        s.set_epoch(epoch, skip)
        return s

    def input_trees(self, index: Sequence[int], seed: int) -> list[tuple[list[int], list[int]]]:
        """The (noisy) input trees of training examples ``index`` for one batch (deterministic in ``seed``)."""
        rng = random.Random(seed)
        out = []
        for i in index:
            ex = self.train[i]
            heads, rels = ex.heads, ex.rels
            if self.parser_trees is not None and rng.random() < self.parser_prob:
                heads, rels = self.parser_trees[i]
            if rng.random() < self.corrupt_prob:
                heads, rels = corrupt_tree(heads, rels, rng.random() * self.corrupt_max, len(self.vocab.rels), rng)
            out.append((heads, rels))
        return out

    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> Iterator[EnhancerBatch]:
        base = (self.seed * 7919 + epoch) * 1_000_003
        for k, idx in enumerate(self._sampler(epoch, rank, world_size, skip)):
            seed = base + (skip + k) * world_size + rank
            yield make_batch([self.train[i] for i in idx], idx, self.vocab, self.input_trees(idx, seed))

    def num_train_batches(self, epoch: int, rank: int, world_size: int) -> int:
        return len(self._sampler(epoch, rank, world_size))

    def num_tokens(self, batch: EnhancerBatch) -> int:
        return batch.num_words

    def loss(self, model, batch: EnhancerBatch) -> Tensor:
        words = batch.words
        if self.word_dropout > 0 and model.training:
            drop = (torch.rand(words.shape, device=words.device) < self.word_dropout) & batch.words_mask
            words = words.masked_fill(drop, 1)
        return model(words, batch.char_ids, batch.word_types, batch.upos, batch.heads, batch.rels,
                     batch.padding_mask, batch.gold_edges, batch.gold_labels)

    def evaluate(self, model) -> dict[str, float]:
        core = model.module if hasattr(model, "module") else model
        pred = Enhancer(core, self.vocab).predict(self.dev, self.eval_batch_tokens)
        return enhanced_scores(self.dev, pred)

    def checkpoint_extra(self) -> dict:
        return {"kind": "enhancer", "vocab": self.vocab.to_dict(), "threshold": 0.0,
                "corrupt_prob": self.corrupt_prob, "corrupt_max": self.corrupt_max,
                "parser_prob": self.parser_prob if self.parser_trees is not None else 0.0}


def parser_trees(parser_dir: str | Path, sentences: Sequence, device: str = "cpu", progress: bool = False,
                 batch_tokens: int = 3000) -> list[tuple[list[int], list[str]]]:
    """``(heads, deprels)`` of each sentence as parsed by a g2gt parser model (for ``parser_trees``)."""
    from ..parse import Parser

    parsed = Parser.load(parser_dir, device, dtype="float32").parse(list(sentences), batch_tokens=batch_tokens,
                                                                    progress=progress)
    return [([int(h) for h in s.heads], [r or "dep" for r in s.deprels]) for s in parsed]

