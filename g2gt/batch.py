"""One way to batch graphs: pad variable-size graphs into dense tensors.

``collate(graphs)`` -> :class:`GraphBatch` with

* ``tokens [B, n]`` long (``pad_id`` where padded),
* ``labels [B, C, n, n]`` in the most compact integer dtype that holds every id
  (``uint8`` / ``int16`` / ``int32``; cast with ``.long()`` where indexing needs it),
* ``padding_mask [B, n]`` bool, True = padding,
* ``node_features``: each integer per-node feature padded to ``[B, n]``.

:class:`BucketBatchSampler` groups graphs of similar size so that a batch holds
at most ``max_tokens`` padded tokens; it is deterministic given ``(seed, epoch)``,
can skip the batches already consumed (exact resume) and shards batches across
distributed ranks.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import torch
from torch import Tensor

from .graph import ChainChannel, Graph, relative_position_labels

__all__ = ["GraphBatch", "collate", "compact_dtype", "BucketBatchSampler", "pad_sequences"]


def compact_dtype(max_label: int) -> torch.dtype:
    """Smallest integer dtype that holds ids ``0 .. max_label``."""
    if max_label < 256:
        return torch.uint8
    if max_label < 2**15:
        return torch.int16
    return torch.int32


@dataclass
class GraphBatch:
    tokens: Tensor  # [B, n] long
    labels: Tensor  # [B, C, n, n] compact int
    padding_mask: Tensor  # [B, n] bool, True = pad
    node_features: dict[str, Tensor] = field(default_factory=dict)
    channels: list[str] = field(default_factory=list)

    @property
    def lengths(self) -> Tensor:
        return (~self.padding_mask).sum(-1)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "GraphBatch":
        return GraphBatch(
            self.tokens.to(device, non_blocking=non_blocking),
            self.labels.to(device, non_blocking=non_blocking),
            self.padding_mask.to(device, non_blocking=non_blocking),
            {k: v.to(device, non_blocking=non_blocking) for k, v in self.node_features.items()},
            list(self.channels),
        )

    def __len__(self) -> int:
        return self.tokens.shape[0]


def pad_sequences(seqs: Sequence[Sequence[int] | Tensor], pad_id: int = 0, length: int | None = None) -> Tensor:
    """Right-pad integer sequences into a ``[B, n]`` long tensor."""
    n = max((len(s) for s in seqs), default=0) if length is None else length
    out = torch.full((len(seqs), n), pad_id, dtype=torch.long)
    for b, s in enumerate(seqs):
        s = torch.as_tensor(s, dtype=torch.long)[:n]
        out[b, : s.numel()] = s
    return out


def collate(
    graphs: Sequence[Graph],
    channels: Sequence[str] | None = None,
    pad_id: int = 0,
    token_ids=None,
) -> GraphBatch:
    """Pad a list of graphs into a :class:`GraphBatch`.

    Args:
        graphs: graphs with integer tokens (or string tokens and ``token_ids``,
            a callable ``str -> int``).
        channels: channel names to stack, in order (default: the first graph's).
        pad_id: token id used for padding.
    """
    if not graphs:
        raise ValueError("collate() needs at least one graph")
    names = list(graphs[0].channels) if channels is None else list(channels)
    B = len(graphs)
    n = max(g.num_nodes for g in graphs)
    tok = [[token_ids(t) for t in g.tokens] if token_ids else g.tokens for g in graphs]
    tokens = pad_sequences(tok, pad_id, n)
    padding_mask = torch.ones(B, n, dtype=torch.bool)
    for b, g in enumerate(graphs):
        padding_mask[b, : g.num_nodes] = False

    max_label = 0
    for g in graphs:
        for c in names:
            ch = g.channels[c]
            if isinstance(ch, ChainChannel):
                max_label = max(max_label, ch.num_labels - 1)
            elif ch.edge_label.numel():
                max_label = max(max_label, int(ch.edge_label.max()))
    labels = torch.zeros(B, len(names), n, n, dtype=compact_dtype(max_label))
    for ci, c in enumerate(names):
        chains = {g.channels[c].max_distance for g in graphs if isinstance(g.channels[c], ChainChannel)}
        if len(chains) == B and len(chains) == 1:
            # all graphs share one chain: fill the block once, then zero the padding
            full = relative_position_labels(n, chains.pop()).to(labels.dtype)
            labels[:, ci] = full
            labels[:, ci].masked_fill_(padding_mask[:, None, :] | padding_mask[:, :, None], 0)
            continue
        for b, g in enumerate(graphs):
            ch = g.channels[c]
            m = g.num_nodes
            if isinstance(ch, ChainChannel):
                labels[b, ci, :m, :m] = relative_position_labels(m, ch.max_distance).to(labels.dtype)
            elif ch.edge_label.numel():
                labels[b, ci, ch.edge_index[0], ch.edge_index[1]] = ch.edge_label.to(labels.dtype)

    feats: dict[str, Tensor] = {}
    for k in graphs[0].node_features:
        vals = [g.node_features[k] for g in graphs]
        if all(isinstance(v, Tensor) or (len(v) and isinstance(v[0], int)) or len(v) == 0 for v in vals):
            feats[k] = pad_sequences(vals, 0, n)
    return GraphBatch(tokens, labels, padding_mask, feats, names)


class BucketBatchSampler(torch.utils.data.Sampler[list[int]]):
    """Length-bucketed batches holding at most ``max_tokens`` padded tokens.

    Items are sorted by length inside chunks of ``bucket_size`` batches' worth,
    packed greedily, then the batch order is shuffled. Deterministic in
    ``(seed, epoch)``; ``skip`` batches can be dropped for resuming; with
    ``num_replicas > 1`` each rank takes every ``num_replicas``-th batch (the
    list is padded by repetition so every rank gets the same count).

    Args:
        lengths: size of each item (tokens; for seq2seq the max of source/target).
        max_tokens: budget per batch, counted as ``batch_size * longest``.
        max_sentences: optional cap on items per batch.
    """

    def __init__(
        self,
        lengths: Sequence[int],
        max_tokens: int,
        shuffle: bool = True,
        seed: int = 0,
        max_sentences: int | None = None,
        num_replicas: int = 1,
        rank: int = 0,
        bucket_size: int = 100,
    ) -> None:
        self.lengths = list(lengths)
        self.max_tokens = max_tokens
        self.shuffle = shuffle
        self.seed = seed
        self.max_sentences = max_sentences
        self.num_replicas = num_replicas
        self.rank = rank
        self.bucket_size = bucket_size
        self.epoch = 0
        self.skip = 0
        too_long = [i for i, n in enumerate(self.lengths) if n > max_tokens]
        if too_long:
            raise ValueError(
                f"{len(too_long)} item(s) are longer than max_tokens={max_tokens} "
                f"(e.g. item {too_long[0]} has {self.lengths[too_long[0]]}); raise max_tokens"
            )

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        """Select the epoch (reshuffles) and how many of this rank's batches to skip."""
        self.epoch = epoch
        self.skip = skip

    def _all_batches(self) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + self.epoch)
        order = list(range(len(self.lengths)))
        if self.shuffle:
            rng.shuffle(order)
        avg = max(1, sum(self.lengths) // max(1, len(self.lengths)))
        chunk = max(1, self.bucket_size * max(1, self.max_tokens // avg))
        batches: list[list[int]] = []
        for start in range(0, len(order), chunk):
            part = sorted(order[start : start + chunk], key=lambda i: self.lengths[i])
            cur: list[int] = []
            longest = 0
            for i in part:
                n = self.lengths[i]
                fits = max(longest, n) * (len(cur) + 1) <= self.max_tokens
                if self.max_sentences is not None and len(cur) >= self.max_sentences:
                    fits = False
                if cur and not fits:
                    batches.append(cur)
                    cur, longest = [], 0
                cur.append(i)
                longest = max(longest, n)
            if cur:
                batches.append(cur)
        if self.shuffle:
            rng.shuffle(batches)
        if self.num_replicas > 1:
            per = math.ceil(len(batches) / self.num_replicas)
            batches = (batches * self.num_replicas)[: per * self.num_replicas] if batches else batches
            batches = batches[self.rank :: self.num_replicas]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        yield from self._all_batches()[self.skip :]

    def __len__(self) -> int:
        return max(0, len(self._all_batches()) - self.skip)
