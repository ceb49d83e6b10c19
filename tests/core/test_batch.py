"""collate() and BucketBatchSampler."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import torch

from g2gt.core import BucketBatchSampler, EdgeChannel, Graph, GraphBatch, chain_graph, collate
from g2gt.core.batch import compact_dtype, pad_sequences


def _graphs(lengths, k=2, seed=0):
    rng = random.Random(seed)
    out = []
    for n in lengths:
        src = [rng.randrange(n) for _ in range(n)]
        dst = [rng.randrange(n) for _ in range(n)]
        ch = EdgeChannel(torch.tensor([src, dst]), torch.tensor([rng.randrange(1, 7) for _ in range(n)]), 7)
        g = chain_graph([rng.randrange(3, 50) for _ in range(n)], k).with_channel("deps", ch)
        g.node_features["head"] = [rng.randrange(n) for _ in range(n)]
        g.node_features["vec"] = torch.randn(n, 3)
        g.node_features["upos"] = ["X"] * n
        out.append(g)
    return out


def test_collate_shapes_dtypes_and_padding():
    gs = _graphs([3, 5, 1])
    b = collate(gs)
    assert isinstance(b, GraphBatch) and len(b) == 3 and b.channels == ["position", "deps"]
    assert b.tokens.shape == (3, 5) and b.tokens.dtype == torch.long
    assert b.labels.shape == (3, 2, 5, 5) and b.labels.dtype == torch.uint8
    assert b.padding_mask.dtype == torch.bool and b.lengths.tolist() == [3, 5, 1]
    for i, g in enumerate(gs):
        n = g.num_nodes
        assert b.tokens[i, :n].tolist() == g.tokens and not b.tokens[i, n:].any()
        assert torch.equal(b.labels[i, :, :n, :n].long(), g.labels())
        assert not b.labels[i, :, n:, :].any() and not b.labels[i, :, :, n:].any()  # padding rows/cols are 0
        assert b.padding_mask[i].tolist() == [False] * n + [True] * (5 - n)
        assert b.node_features["head"][i, :n].tolist() == g.node_features["head"]
        assert torch.equal(b.node_features["vec"][i, :n], g.node_features["vec"])
        assert not b.node_features["vec"][i, n:].any()
    assert b.node_features["head"].dtype == torch.long and b.node_features["vec"].dtype == torch.float32
    assert b.other_features["upos"] == [["X"] * 3, ["X"] * 5, ["X"]]  # nothing silently dropped
    assert collate(gs, channels=["deps"]).labels.shape == (3, 1, 5, 5)


def test_collate_mixed_chain_distances_match_per_graph():
    gs = [chain_graph([5, 6, 7], 1), chain_graph([5, 6, 7, 8], 3)]
    b = collate(gs)
    for i, g in enumerate(gs):
        n = g.num_nodes
        assert torch.equal(b.labels[i, 0, :n, :n].long(), g.labels()[0])


@pytest.mark.parametrize("max_label,dtype", [(1, torch.uint8), (255, torch.uint8), (256, torch.int16),
                                             (40000, torch.int32)])
def test_compact_label_dtype(max_label, dtype):
    assert compact_dtype(max_label) == dtype
    g = Graph([3, 4], {"e": EdgeChannel(torch.tensor([[0], [1]]), torch.tensor([max_label]))})
    b = collate([g, chain_graph([5], 1).with_channel("e", EdgeChannel(torch.zeros(2, 0), torch.zeros(0)))],
                channels=["e"])
    assert b.labels.dtype == dtype and int(b.labels[0, 0, 0, 1]) == max_label


def test_collate_string_tokens_and_errors():
    vocab = {"<pad>": 0, "a": 1, "b": 2}
    b = collate([chain_graph(["a", "b"], 1), chain_graph(["b"], 1)], token_ids=vocab.__getitem__)
    assert b.tokens.tolist() == [[1, 2], [2, 0]]
    assert collate([chain_graph([4], 1)], pad_id=9).tokens.tolist() == [[4]]
    assert collate([chain_graph([4, 5], 1), chain_graph([4], 1)], pad_id=9).tokens.tolist() == [[4, 5], [4, 9]]
    with pytest.raises(TypeError, match="token_ids"):
        collate([chain_graph(["a"], 1)])
    with pytest.raises(ValueError, match="at least one graph"):
        collate([])
    with pytest.raises(KeyError, match="no channel"):
        collate([chain_graph([1], 1), Graph([2])])


def test_pad_sequences():
    out = pad_sequences([[1, 2, 3], [4]], pad_id=7)
    assert out.tolist() == [[1, 2, 3], [4, 7, 7]] and out.dtype == torch.long
    assert pad_sequences([[1, 2, 3]], length=2).tolist() == [[1, 2]]


def test_dataloader_with_bucket_sampler():
    gs = _graphs([random.Random(i).randint(1, 9) for i in range(40)])
    sampler = BucketBatchSampler([g.num_nodes for g in gs], batch_tokens=20, seed=3)
    loader = torch.utils.data.DataLoader(gs, batch_sampler=sampler, collate_fn=collate)
    seen = 0
    for b in loader:
        assert isinstance(b, GraphBatch) and b.tokens.numel() <= 20
        seen += len(b)
    assert seen == 40 and len(loader) == len(sampler)


LENGTHS = [random.Random(i).randint(1, 30) for i in range(300)]


@pytest.mark.parametrize("max_items", [None, 4])
def test_sampler_covers_every_index_once_within_budget(max_items):
    s = BucketBatchSampler(LENGTHS, batch_tokens=64, seed=1, max_items=max_items, bucket_size=5)
    for epoch in range(3):
        s.set_epoch(epoch)
        batches = list(s)
        assert len(batches) == len(s)
        flat = [i for b in batches for i in b]
        assert sorted(flat) == list(range(len(LENGTHS)))
        for b in batches:
            assert len(b) * max(LENGTHS[i] for i in b) <= 64
            if max_items:
                assert len(b) <= max_items


def test_sampler_deterministic_per_seed_and_epoch():
    def batches(seed, epoch):
        s = BucketBatchSampler(LENGTHS, 64, seed=seed)
        s.set_epoch(epoch)
        return list(s)

    assert batches(1, 0) == batches(1, 0) and batches(1, 5) == batches(1, 5)
    assert batches(1, 0) != batches(1, 1) and batches(1, 0) != batches(2, 0)
    s = BucketBatchSampler(LENGTHS, 64, shuffle=False)
    assert list(s) == list(s)


def test_sampler_skip_yields_the_tail():
    s = BucketBatchSampler(LENGTHS, 64, seed=4)
    s.set_epoch(2)
    full = list(s)
    for k in (0, 1, 7, len(full)):
        s.set_epoch(2, skip=k)
        assert list(s) == full[k:] and len(s) == len(full) - k
    s.set_epoch(3)  # a new epoch without skip starts from the beginning
    assert len(list(s)) == len(s) and s.skip == 0


@pytest.mark.parametrize("world", [2, 3, 4])
def test_sampler_rank_sharding(world):
    one = BucketBatchSampler(LENGTHS, 64, seed=5)
    one.set_epoch(1)
    all_batches = list(one)
    shards = []
    for r in range(world):
        s = BucketBatchSampler(LENGTHS, 64, seed=5, num_replicas=world, rank=r)
        s.set_epoch(1)
        shards.append(list(s))
    counts = {len(sh) for sh in shards}
    assert len(counts) == 1  # every rank takes the same number of steps
    per = counts.pop()
    assert per == -(-len(all_batches) // world)
    # rank r's j-th batch is the global batch j * world + r (wrapping for the padding)
    for r, sh in enumerate(shards):
        for j, b in enumerate(sh):
            assert b == all_batches[(j * world + r) % len(all_batches)]
    covered = Counter(i for sh in shards for b in sh for i in b)
    assert set(covered) == set(range(len(LENGTHS)))


def test_sampler_gives_an_over_long_item_a_batch_of_its_own():
    s = BucketBatchSampler([3, 11, 2, 4], batch_tokens=10, seed=0)
    batches = list(s)
    assert [1] in batches and sorted(i for b in batches for i in b) == [0, 1, 2, 3]


def test_shard_gives_every_rank_the_same_count_and_uses_every_item():
    from g2gt.core.batch import shard

    items = list(range(7))
    assert shard(items, 0, 1) == items
    parts = [shard(items, r, 3) for r in range(3)]
    assert [len(p) for p in parts] == [3, 3, 3]  # padded by repetition from the start
    assert sorted(x for p in parts for x in p) == sorted(items + items[:2])
    assert parts[0] == [0, 3, 6] and parts[1] == [1, 4, 0] and shard([], 1, 2) == []
    sampler = BucketBatchSampler(LENGTHS, batch_tokens=64, seed=2, num_replicas=2, rank=1)
    assert list(sampler) == shard(BucketBatchSampler(LENGTHS, batch_tokens=64, seed=2)._all_batches(), 1, 2)
    with pytest.raises(ValueError, match="rank"):
        shard(items, 3, 3)
