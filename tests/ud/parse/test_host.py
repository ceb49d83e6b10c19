"""g2gt.ud.parse.host.to_host (a decoded batch's columns in one host copy, ids mapped to strings by array
indexing) against per-sentence, per-token tensor indexing; and the device's inference batch budget
(g2gt.core.batch.inference_batch_tokens)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from g2gt.core import batch as core_batch
from g2gt.core.batch import CPU_BATCH_TOKENS, inference_batch_tokens
from g2gt.ud.parse.host import to_host
from g2gt.ud.parse.model import DecodedBatch


def _vocab() -> SimpleNamespace:
    return SimpleNamespace(rels=[f"rel{i}" for i in range(7)], upos=[f"U{i}" for i in range(5)],
                           xpos=[f"X{i}" for i in range(4)], feats=["_", "A=1", "A=1|B=2"])


def _decoded(seed: int, B: int = 6, n: int = 9, history: int = 0, tags: bool = True) -> tuple[DecodedBatch, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, n, (B,), generator=g)
    lengths[0] = n - 1  # one sentence fills the batch

    def ids(high: int, *k: int) -> torch.Tensor:
        return torch.randint(0, high, (B, n, *k), generator=g)

    t = {"xpos": ids(4, 1), "feats": ids(3, 1), "lemma": ids(50, 6)} if tags else {}
    hist = [(ids(n), ids(7), ids(5)) for _ in range(history)]
    return DecodedBatch(ids(n), ids(7), ids(5), t, torch.randint(1, 4, (B,), generator=g), hist), lengths


@pytest.mark.parametrize("history,tags", [(0, True), (3, True), (2, False)])
def test_to_host_matches_per_token_indexing(history, tags) -> None:
    vocab = _vocab()
    res, lengths = _decoded(history + 10 * tags, history=history, tags=tags)
    host = to_host(res, lengths, vocab)
    assert host.lengths == lengths.tolist() and host.passes == res.passes.tolist()
    for b in range(len(lengths)):
        w = range(1, int(lengths[b]) + 1)
        assert host.heads[b] == [int(res.heads[b, i]) for i in w]
        assert host.deprels[b] == [vocab.rels[int(res.rels[b, i])] for i in w]
        assert host.upos[b] == [vocab.upos[int(res.upos[b, i])] for i in w]
        assert set(host.tags) == set(res.tags)
        if tags:
            assert host.tags["xpos"][b] == [vocab.xpos[int(res.tags["xpos"][b, i, 0])] for i in w]
            assert host.tags["feats"][b] == [vocab.feats[int(res.tags["feats"][b, i, 0])] for i in w]
            assert host.tags["lemma"][b] == [[int(c) for c in res.tags["lemma"][b, i]] for i in w]
        assert len(host.history) == history
        for (hh, rr, uu), (th, tr, tu) in zip(host.history, res.history):
            assert hh[b] == [int(th[b, i]) for i in w]
            assert rr[b] == [vocab.rels[int(tr[b, i])] for i in w]
            assert uu[b] == [vocab.upos[int(tu[b, i])] for i in w]


def test_to_host_copies_once_and_gives_plain_python_values(monkeypatch) -> None:
    res, lengths = _decoded(1, history=2)
    calls = {"cpu": 0, "tolist": 0}
    cpu, tolist = torch.Tensor.cpu, torch.Tensor.tolist

    def counting_cpu(self, *a, **k):
        calls["cpu"] += 1
        return cpu(self, *a, **k)

    def counting_tolist(self, *a, **k):
        calls["tolist"] += 1
        return tolist(self, *a, **k)

    monkeypatch.setattr(torch.Tensor, "cpu", counting_cpu)
    monkeypatch.setattr(torch.Tensor, "tolist", counting_tolist)
    host = to_host(res, lengths, _vocab())
    assert calls == {"cpu": 1, "tolist": 0}
    values = [host.lengths, host.passes, host.heads[0], host.deprels[0], host.tags["lemma"][0][0], host.history[1][0][0]]
    assert all(type(x) in (int, str) for v in values for x in v)
    assert all(type(s) is list for s in host.heads + host.deprels + host.upos + host.tags["xpos"])


@pytest.mark.parametrize("threads", [1, 2, 8])
def test_the_batch_budget_off_cuda_is_the_cpu_default_whatever_the_threads(threads, monkeypatch) -> None:
    """1000 padded words, for any thread count (so that the output does not depend on it)."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    assert CPU_BATCH_TOKENS == 1000
    assert inference_batch_tokens("cpu") == CPU_BATCH_TOKENS == inference_batch_tokens(torch.device("cpu"))
    assert inference_batch_tokens("meta") == CPU_BATCH_TOKENS
    assert inference_batch_tokens("cpu", 1234) == 1234
    assert inference_batch_tokens("cuda", 777) == 777  # given: no device query


@pytest.mark.parametrize("gib,tokens", [(4, 3000), (16, 8192), (24, 12288), (40, 16384), (141, 16384)])
def test_the_batch_budget_on_cuda_grows_with_its_memory(gib, tokens, monkeypatch) -> None:
    asked = []

    def props(index):
        asked.append(index)
        return SimpleNamespace(total_memory=gib * 2**30)

    monkeypatch.setattr(torch.cuda, "get_device_properties", props)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert inference_batch_tokens("cuda:1") == tokens
    assert inference_batch_tokens("cuda") == tokens
    assert asked == [1, 0]
    assert core_batch.CUDA_MIN_BATCH_TOKENS <= tokens <= core_batch.CUDA_MAX_BATCH_TOKENS
