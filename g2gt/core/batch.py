"""One way to batch graphs: pad variable-size graphs into dense tensors.

``collate(graphs)`` -> :class:`GraphBatch` with

* ``tokens [B, n]`` long (``pad_id`` where padded),
* ``labels [B, C, n, n]`` in the most compact integer dtype that holds every id
  (``uint8`` / ``int16`` / ``int32``; cast with ``.long()`` where indexing needs it),
* ``padding_mask [B, n]`` bool, True = padding,
* ``node_features``: each numeric per-node feature zero-padded to ``[B, n, ...]``
  (other features, e.g. strings, are kept as lists in ``other_features``).

:func:`token_budget_batches` is the one length-bucketed batcher: it groups items of similar
size so that a batch holds at most ``batch_tokens`` padded tokens (an over-long item gets a
batch of its own). Training uses it through :class:`BucketBatchSampler`, which is deterministic
given ``(seed, epoch)``, can skip the batches already consumed (exact resume) and shards batches
across distributed ranks with :func:`shard` (the one sharding rule; tasks that batch on their own, such as
the segmenter's windows, use it too); the parser, enhancer and seq2seq inference call it directly.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import torch
from torch import Tensor

from .graph import ChainChannel, Graph, relative_position_labels

__all__ = ["GraphBatch", "collate", "compact_dtype", "token_budget_batches", "inference_batch_tokens",
           "CPU_BATCH_TOKENS", "CUDA_MIN_BATCH_TOKENS", "BucketBatchSampler", "pad_sequences", "shard"]

#: padded tokens per inference batch (the parser's and the enhancer's) on the CPU and on devices but CUDA. One
#: thread parses as many words/s with 1000 as with 3000 padded words a batch, and a smaller batch's tensors leave
#: smaller holes in the host heap, so the peak memory of a long run stays where a short run's is
#: (docs/benchmarks.md, "Memory over a corpus"). The same for any thread count, so that the output does not depend
#: on it (a batch's composition can move a last bit); with many threads ``batch_tokens=3000`` can be faster.
CPU_BATCH_TOKENS = 1000
#: the smallest CUDA budget, for a GPU of up to 6 GiB
CUDA_MIN_BATCH_TOKENS = 3000
#: on CUDA, padded tokens per GiB of device memory, the result kept between :data:`CUDA_MIN_BATCH_TOKENS` and
#: ``CUDA_MAX_BATCH_TOKENS``: 8192 on a 16 GiB GPU, 12288 on 24 GiB, the cap from 32 GiB on. A batch's memory grows
#: with its node pairs (at most ``256 * batch_tokens``, :func:`g2gt.ud.parse.batching.length_batches`), which
#: this keeps far below the device's memory; larger batches mean fewer launches and host round trips per word.
CUDA_TOKENS_PER_GIB = 512
CUDA_MAX_BATCH_TOKENS = 16384


def compact_dtype(max_label: int) -> torch.dtype:
    """Smallest integer dtype that holds ids ``0 .. max_label``."""
    if max_label < 256:
        return torch.uint8
    if max_label < 2**15:
        return torch.int16
    return torch.int32


@dataclass
class GraphBatch:
    """Padded graphs.

    Attributes:
        tokens: ``[B, n]`` long, ``pad_id`` at padding.
        labels: ``[B, C, n, n]`` compact integer dtype (see :func:`compact_dtype`), 0 at padding.
        padding_mask: ``[B, n]`` bool, True = padding.
        node_features: tensor-valued per-node features padded with 0 to ``[B, n, ...]``
            (integer lists become long ``[B, n]``; a ``[n, ...]`` tensor keeps its dtype).
        channels: the channel names, in the order of ``labels``' C axis.
        other_features: per-node features that are not numbers (e.g. UPOS strings), as
            one list per graph, unpadded.

    Args:
        tokens: ``[B, n]`` long token ids.
        labels: ``[B, C, n, n]`` integer labels.
        padding_mask: ``[B, n]`` bool, True = padding.
        node_features: padded per-node tensors (default: none).
        channels: the channel names of ``labels``' C axis (default: none).
        other_features: non-numeric per-node features, one list per graph (default: none).
    """

    tokens: Tensor  # [B, n] long
    labels: Tensor  # [B, C, n, n] compact int
    padding_mask: Tensor  # [B, n] bool, True = pad
    node_features: dict[str, Tensor] = field(default_factory=dict)
    channels: list[str] = field(default_factory=list)
    other_features: dict[str, list] = field(default_factory=dict)

    @property
    def lengths(self) -> Tensor:
        return (~self.padding_mask).sum(-1)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "GraphBatch":
        """The batch with every tensor moved to ``device``.

        Args:
            device: the target device.
            non_blocking: as in ``Tensor.to``.

        Returns:
            A new :class:`GraphBatch`.
        """
        return GraphBatch(
            self.tokens.to(device, non_blocking=non_blocking),
            self.labels.to(device, non_blocking=non_blocking),
            self.padding_mask.to(device, non_blocking=non_blocking),
            {k: v.to(device, non_blocking=non_blocking) for k, v in self.node_features.items()},
            list(self.channels),
            dict(self.other_features),
        )

    def __len__(self) -> int:
        return self.tokens.shape[0]


def pad_sequences(seqs: Sequence[Sequence[int] | Tensor], pad_id: int = 0, length: int | None = None) -> Tensor:
    """Right-pad integer sequences into a ``[B, n]`` long tensor."""
    n = max((len(s) for s in seqs), default=0) if length is None else length
    if _plain_int_lists(seqs):  # fast path: one tensor() call instead of one per row
        return torch.tensor([list(s[:n]) + [pad_id] * (n - len(s)) for s in seqs], dtype=torch.long).view(-1, n)
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
        token_ids: a callable ``str -> int`` for string tokens (``None``: tokens are integers already).

    Returns:
        The :class:`GraphBatch`.
    """
    if not graphs:
        raise ValueError("collate() needs at least one graph")
    names = list(graphs[0].channels) if channels is None else list(channels)
    for b, g in enumerate(graphs):
        missing = [c for c in names if c not in g.channels]
        if missing:
            raise KeyError(f"collate(): graph {b} has no channel(s) {missing} (it has {list(g.channels)})")
    B = len(graphs)
    n = max(g.num_nodes for g in graphs)
    tok = [[token_ids(t) for t in g.tokens] if token_ids else g.tokens for g in graphs]
    for b, t in enumerate(tok):
        bad = next((x for x in t if not isinstance(x, int) and not (isinstance(x, Tensor) and x.dim() == 0)), None)
        if bad is not None:
            raise TypeError(
                f"collate(): graph {b} has a non-integer token {bad!r}; pass token_ids=vocab.__getitem__ "
                "(a callable str -> int) or convert the tokens first")
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
        chain_ks = [g.channels[c].max_distance for g in graphs if isinstance(g.channels[c], ChainChannel)]
        chains = set(chain_ks)
        if len(chain_ks) == B and len(chains) == 1:
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
    others: dict[str, list] = {}
    for k in graphs[0].node_features:
        vals = [g.node_features.get(k) for g in graphs]
        if any(v is None for v in vals):
            raise KeyError(f"collate(): node feature {k!r} is missing from some graphs")
        padded = _pad_feature(vals, n)
        if padded is None:
            others[k] = [list(v) for v in vals]
        else:
            feats[k] = padded
    return GraphBatch(tokens, labels, padding_mask, feats, names, others)


def _plain_int_lists(vals) -> bool:
    """True when ``vals`` is a sequence of lists / tuples of Python ints (bools excluded)."""
    return all(type(v) in (list, tuple) and all(type(x) is int for x in v) for v in vals)


def _is_number(x) -> bool:
    return isinstance(x, (int, float, bool)) or (isinstance(x, Tensor) and x.dim() == 0)


def _pad_feature(vals: list, n: int) -> Tensor | None:
    """Zero-pad per-graph features ``[n_b, ...]`` to ``[B, n, ...]``; None when they are not numeric."""
    if _plain_int_lists(vals):  # fast path: one tensor() call instead of one per graph
        return torch.tensor([list(v) + [0] * (n - len(v)) for v in vals], dtype=torch.long).view(-1, n)
    if all(isinstance(v, Tensor) for v in vals):
        ts = vals
    elif all(all(_is_number(x) for x in v) for v in vals):
        ts = [torch.as_tensor([x.item() if isinstance(x, Tensor) else x for x in v]) for v in vals]
        if all(t.numel() == 0 for t in ts):
            ts = [t.long() for t in ts]
    else:
        return None
    ts = [t if t.numel() else t.reshape(0, *ts[0].shape[1:]) for t in ts]
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    if dtype == torch.bool:
        dtype = torch.bool
    elif not dtype.is_floating_point:
        dtype = torch.long
    trail = ts[0].shape[1:]
    for b, t in enumerate(ts):
        if t.shape[1:] != trail:
            raise ValueError(f"collate(): node feature rows of graph {b} have shape {tuple(t.shape[1:])}, "
                             f"graph 0 has {tuple(trail)}")
    out = torch.zeros(len(ts), n, *trail, dtype=dtype)
    for b, t in enumerate(ts):
        out[b, : t.shape[0]] = t.to(dtype)
    return out


def inference_batch_tokens(device: str | torch.device, batch_tokens: int | None = None) -> int:
    """The padded-token budget of an inference batch on ``device``: ``batch_tokens`` when given, else the
    device's default, THE one place the defaults live: :data:`CPU_BATCH_TOKENS` (1000) on the CPU (and on
    any device but CUDA, whatever the thread count), on CUDA ``CUDA_TOKENS_PER_GIB * memory_GiB`` clamped to
    ``[CUDA_MIN_BATCH_TOKENS, CUDA_MAX_BATCH_TOKENS]`` (3000..16384).

    Args:
        device: where the model runs (``"cpu"``, ``"cuda:1"``, a ``torch.device``).
        batch_tokens: the caller's budget (``None``: the device's default).

    Returns:
        Padded tokens per batch.
    """
    if batch_tokens is not None:
        return int(batch_tokens)
    dev = torch.device(device)
    if dev.type != "cuda":
        return CPU_BATCH_TOKENS
    index = torch.cuda.current_device() if dev.index is None else dev.index
    gib = torch.cuda.get_device_properties(index).total_memory / 2**30
    return int(min(CUDA_MAX_BATCH_TOKENS, max(CUDA_MIN_BATCH_TOKENS, CUDA_TOKENS_PER_GIB * gib)))


def token_budget_batches(
    lengths: Sequence[int],
    batch_tokens: int,
    *,
    max_items: int | None = None,
    max_pairs: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    bucket_size: int = 100,
) -> list[list[int]]:
    """Cut the indices ``0 .. len(lengths) - 1`` into length-bucketed batches under a token budget.

    A batch ``b`` of ``k`` items whose longest has ``m`` tokens costs ``k * m`` padded tokens and
    ``k * m**2`` padded pairs (attention and arc scores grow with the pairs). Items are taken in length
    order and packed greedily: an item joins the open batch when, with it, ``k * m <= batch_tokens``,
    ``k <= max_items`` and ``k * m**2 <= max_pairs`` (``None``: no limit); otherwise it opens the next one.
    An item longer than ``batch_tokens`` (or with ``m**2 > max_pairs``) gets a batch of its own: nothing
    is dropped, nothing raises.

    ``shuffle=False``: one stable sort by length; batches come in ascending length order (inference).
    ``shuffle=True`` (training): the items are shuffled with ``random.Random(seed)``, sorted by length
    inside chunks of about ``bucket_size`` batches' worth, packed, and the batch order is shuffled with the
    same generator: deterministic in ``seed``, different in every epoch when the seed includes it.

    Every index appears in exactly one batch.

    Args:
        lengths: size of each item in tokens.
        batch_tokens: budget of padded tokens per batch (``k * m``).
        max_items: most items per batch (``None``: no limit).
        max_pairs: budget of padded pairs per batch (``k * m**2``; ``None``: no limit).
        shuffle: training order (shuffled, deterministic in ``seed``) rather than ascending length.
        seed: the random seed with ``shuffle=True``.
        bucket_size: batches' worth of items sorted together with ``shuffle=True``.

    Returns:
        The batches, each a list of item indices.
    """
    if batch_tokens < 1:
        raise ValueError(f"batch_tokens must be a positive number of tokens, got {batch_tokens}")
    if max_items is not None and max_items < 1:
        raise ValueError(f"max_items must be at least 1, got {max_items}")
    lengths = list(lengths)
    if not shuffle:
        return _pack(lengths, sorted(range(len(lengths)), key=lengths.__getitem__), batch_tokens,
                     max_items, max_pairs)
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    avg = max(1, sum(lengths) // max(1, len(lengths)))
    chunk = max(1, bucket_size * max(1, batch_tokens // avg))
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lengths.__getitem__)
        batches += _pack(lengths, part, batch_tokens, max_items, max_pairs)
    rng.shuffle(batches)
    return batches


def _pack(lengths: list[int], order: list[int], batch_tokens: int, max_items: int | None,
          max_pairs: int | None) -> list[list[int]]:
    """Greedy packing of ``order`` (indices, ascending length) under the limits of :func:`token_budget_batches`."""
    out: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        m = max(longest, lengths[i])
        k = len(cur) + 1
        fits = (m * k <= batch_tokens and (max_items is None or k <= max_items)
                and (max_pairs is None or m * m * k <= max_pairs))
        if cur and not fits:
            out.append(cur)
            cur, m = [], lengths[i]
        cur.append(i)
        longest = m
    if cur:
        out.append(cur)
    return out


def shard(items: Sequence, rank: int = 0, world_size: int = 1) -> list:
    """Rank ``rank``'s share of ``items`` (e.g. one epoch's batches) among ``world_size`` processes.

    Every ``world_size``-th item from ``rank`` on. The list is first padded by repeating it from its start to a multiple
    of ``world_size``, so every rank gets the same count (``ceil(len / world_size)``: the ranks take their steps
    together) and nothing is left out; one process gets ``items`` as they are.

    Args:
        items: what is shared out, e.g. one epoch's batches.
        rank: this process's rank.
        world_size: number of processes.

    Returns:
        ``ceil(len(items) / world_size)`` items.
    """
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"shard(): rank must be in [0, world_size) and world_size >= 1, got rank {rank} of "
                         f"{world_size}")
    items = list(items)
    if world_size == 1 or not items:
        return items
    per = math.ceil(len(items) / world_size)
    return (items * world_size)[: per * world_size][rank::world_size]


class BucketBatchSampler(torch.utils.data.Sampler[list[int]]):
    """Length-bucketed batches holding at most ``batch_tokens`` padded tokens, for training.

    The batches of :func:`token_budget_batches` with ``shuffle=True`` (an over-long item gets a batch of
    its own). Deterministic in ``(seed, epoch)``; ``skip`` batches can be dropped for resuming; with
    ``num_replicas > 1`` each rank takes its :func:`shard` of the batches.

    Args:
        lengths: size of each item (tokens; for seq2seq the max of source/target).
        batch_tokens: budget per batch, counted as ``batch_size * longest``.
        shuffle: shuffle items and batches (deterministic in ``(seed, epoch)``); ``False``: batches in ascending length
            order.
        seed: the random seed.
        max_items: optional cap on items per batch.
        num_replicas: number of processes sharing the batches (each rank takes its :func:`shard`).
        rank: this process's rank.
        bucket_size: batches' worth of items sorted together when shuffling.
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_tokens: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        max_items: int | None = None,
        num_replicas: int = 1,
        rank: int = 0,
        bucket_size: int = 100,
    ) -> None:
        if batch_tokens is None:
            raise TypeError("BucketBatchSampler needs batch_tokens (the padded-token budget of a batch)")
        self.lengths = list(lengths)
        self.batch_tokens = batch_tokens
        self.shuffle = shuffle
        self.seed = seed
        self.max_items = max_items
        self.num_replicas = num_replicas
        self.rank = rank
        self.bucket_size = bucket_size
        self.epoch = 0
        self.skip = 0

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        """Select the epoch (reshuffles) and how many of this rank's batches to skip.

        Args:
            epoch: the epoch (it enters the shuffling seed).
            skip: batches of this rank to leave out at the start (resuming).
        """
        self.epoch = epoch
        self.skip = skip

    def _all_batches(self) -> list[list[int]]:
        batches = token_budget_batches(self.lengths, self.batch_tokens, max_items=self.max_items,
                                       shuffle=self.shuffle, seed=self.seed * 1_000_003 + self.epoch,
                                       bucket_size=self.bucket_size)
        return shard(batches, self.rank, self.num_replicas)

    def __iter__(self) -> Iterator[list[int]]:
        yield from self._all_batches()[self.skip :]

    def __len__(self) -> int:
        return max(0, len(self._all_batches()) - self.skip)
