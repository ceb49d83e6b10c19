"""Sentences as padded tensors for the parser: examples, batches, length batching, dependency-channel
labels and corrupted graphs for refinement training.

A sentence of ``n`` words becomes ``n + 1`` nodes, node 0 being ``<root>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import Tensor

from ...core.batch import GraphBatch, collate, token_budget_batches
from ...core.graph import ChainChannel, Graph
from .vocab import ROOT, ParserVocab, sentence_feats

__all__ = ["Example", "make_example", "ParseBatch", "make_batch", "length_batches", "dependency_labels",
           "corrupt_graph", "TAG_HEADS"]

TAG_HEADS = ("xpos", "feats", "lemma")  # the optional word-level heads, in this order everywhere


@dataclass
class Example:
    """One sentence as ids (node 0 = ROOT)."""

    forms: list[str]  # with "<root>" first
    words: list[int]
    upos: list[int] | None  # None (with heads and rels) for an example made with targets=False
    heads: list[int] | None  # -1 where the HEAD column is empty; ROOT: 0
    rels: list[int] | None
    tags: dict[str, list[int]] = field(default_factory=dict)  # golds of the heads of TAG_HEADS the vocab has
    treebank: int = 0  # index into ParserConfig.treebanks (0 = the default treebank)


def make_example(sent, vocab: ParserVocab, treebank: int = 0, targets: bool = True) -> Example:
    """``sent``: an object with ``forms``, ``upos``, ``heads``, ``deprels`` (and ``xpos``, ``words``,
    ``lemmas`` for the heads the vocabulary has), e.g. :class:`g2gt.ud.io.Sentence`. ``treebank``: the
    sentence's treebank (an index into ``ParserConfig.treebanks``; 0 = the default). ``targets=False``: the
    forms only (for parsing: no tag, head or relation columns are read; ``upos``, ``heads`` and ``rels`` are
    None and ``tags`` is empty)."""
    forms = [ROOT] + list(sent.forms)
    words = [2] + [vocab.word_id(f) for f in forms[1:]]
    if not targets:
        return Example(forms, words, None, None, None, {}, treebank)
    upos = [0] + [vocab.upos_index.get(u, 0) for u in sent.upos]
    heads = [0] + [(-1 if h is None else int(h)) for h in sent.heads]
    rels = [0] + [vocab.rel_index.get(r, 0) if r is not None else 0 for r in sent.deprels]
    tags = {}
    if vocab.xpos:
        tags["xpos"] = [0] + [vocab.xpos_index.get(x or "_", 0) for x in sent.xpos]
    if vocab.feats:
        tags["feats"] = [0] + [vocab.feats_index.get(f, 0) for f in sentence_feats(sent)]
    if vocab.lemma_rules:
        tags["lemma"] = [0] + [vocab.lemma_id(f, lem) for f, lem in zip(sent.forms, sent.lemmas)]
    return Example(forms, words, upos, heads, rels, tags, treebank)


@dataclass
class ParseBatch:
    """A padded batch of sentences (node 0 = ROOT).

    ``graph``: :class:`g2gt.core.GraphBatch` from :func:`g2gt.core.collate` — ``tokens [B, n]``
    word ids, ``labels [B, 1, n, n]`` the position channel, ``padding_mask [B, n]``,
    ``node_features`` ``upos`` / ``head`` / ``rel`` / ``has_head`` and the tag heads' golds (``[B, n]``).
    ``char_ids [U, m]`` / ``word_types [B, n]``: characters of the batch's unique word types and
    each node's row in ``char_ids``. ``index``: the examples' positions in the caller's list.
    ``treebank``: ``[B]`` long, each sentence's treebank index, or None when every sentence is of the
    default treebank (index 0).
    """

    graph: GraphBatch
    char_ids: Tensor
    word_types: Tensor
    index: list[int]
    corrupt_seed: int = 0
    treebank: Tensor | None = None

    def to(self, device, non_blocking: bool = False) -> "ParseBatch":
        nb = non_blocking
        tb = None if self.treebank is None else self.treebank.to(device, non_blocking=nb)
        return ParseBatch(self.graph.to(device, non_blocking=nb), self.char_ids.to(device, non_blocking=nb),
                          self.word_types.to(device, non_blocking=nb), self.index, self.corrupt_seed, tb)

    @property
    def words_mask(self) -> Tensor:
        """``[B, n]`` True on real words (not ROOT, not padding)."""
        m = ~self.graph.padding_mask
        m[:, 0] = False
        return m

    @property
    def lengths(self) -> Tensor:
        """``[B]`` number of words of each sentence (ROOT not counted)."""
        return (~self.graph.padding_mask).sum(-1) - 1

    @property
    def position(self) -> Tensor:
        """``[B, n, n]`` the position channel's labels (long)."""
        return self.graph.labels[:, 0].long()

    @property
    def num_words(self) -> int:
        return int((~self.graph.padding_mask).sum()) - len(self.index)


def make_batch(examples: Sequence[Example], index: Sequence[int], vocab: ParserVocab, max_distance: int,
               corrupt_seed: int = 0) -> ParseBatch:
    """Collate examples with :func:`g2gt.core.collate` (position channel) plus unique-word characters and, when
    some example is not of the default treebank, the ``[B]`` treebank indices. Examples made with
    ``targets=False`` (all or none of them) give no node features."""
    graphs = [
        Graph(ex.words, {"position": ChainChannel(max_distance)},
              {} if ex.heads is None else {"upos": ex.upos, "head": [max(h, 0) for h in ex.heads], "rel": ex.rels,
                                           "has_head": [int(h >= 0) for h in ex.heads], **ex.tags})
        for ex in examples
    ]
    gb = collate(graphs)
    wt, char_ids = vocab.char_rows([ex.forms for ex in examples], gb.tokens.shape[1])
    tb = [ex.treebank for ex in examples]
    treebank = torch.tensor(tb, dtype=torch.long) if any(tb) else None
    return ParseBatch(gb, char_ids, wt, list(index), corrupt_seed, treebank)


def length_batches(lengths: Sequence[int], batch_tokens: int, max_pairs: int | None = None) -> list[list[int]]:
    """Indices of ``lengths`` sorted by length (stable) and cut into batches of at most ``batch_tokens``
    padded nodes (``longest * count``) and at most ``max_pairs`` padded node pairs (``longest**2 * count``,
    default ``256 * batch_tokens``): attention and arc scores grow with the pairs, so long sentences get
    batches of their own (as in Stanza) while sentences up to 256 nodes are cut by ``batch_tokens`` alone.
    An item longer than ``batch_tokens`` gets a batch of its own (:func:`g2gt.core.batch.token_budget_batches`,
    ``shuffle=False``)."""
    max_pairs = 256 * batch_tokens if max_pairs is None else max_pairs
    return token_budget_batches(lengths, batch_tokens, max_pairs=max_pairs)


def dependency_labels(heads: Tensor, rels: Tensor, valid: Tensor, dtype: torch.dtype = torch.long) -> Tensor:
    """Dense dependency-channel labels ``[B, n, n]`` (``dtype``, long by default) from a graph over ``n`` nodes.

    ``heads [B, n]`` is each node's head index (node 0 = ROOT; ignored where
    ``valid [B, n]`` is False), ``rels [B, n]`` the relation index ``r``. The pair
    (dependent ``i``, head ``h``) gets ``1 + 2r`` (``rel↑``) and (``h``, ``i``) gets
    ``2 + 2r`` (``rel↓``); all other pairs 0. Inference passes a compact ``dtype``
    (:func:`g2gt.core.batch.compact_dtype` of ``2 + 2 * max r``): ``n * n`` bytes instead of ``8 n * n``.
    """
    B, n = heads.shape
    # two scatters on the device (no nonzero(), which reads the mask on the host); an invalid node writes into
    # an extra row / column n, cut off at the end; "rel↑" is written last, so it wins where two nodes are each
    # other's heads
    out = torch.zeros(B, n + 1, n + 1, dtype=dtype, device=heads.device)
    h = torch.where(valid, heads.clamp(0, n - 1), n)
    out.scatter_(1, h[:, None, :], (2 + 2 * rels).to(dtype)[:, None, :])  # out[b, h_i, i] = 2 + 2 r_i
    out.scatter_(2, h[:, :n, None], (1 + 2 * rels).to(dtype)[:, :, None])  # out[b, i, h_i] = 1 + 2 r_i
    out = out[:, :n, :n].contiguous()
    return out


def corrupt_graph(heads: Tensor, rels: Tensor, words_mask: Tensor, num_rels: int, max_rate: float,
                  generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Replace a random fraction (per sentence uniform in ``[0, max_rate]``) of the heads and,
    independently, of the relations by random ones (never a self loop). ``[B, n]`` in, ``[B, n]`` out;
    the random numbers are drawn on the CPU from ``generator`` (same result on every device)."""
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
