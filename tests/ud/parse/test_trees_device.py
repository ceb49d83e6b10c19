"""The batched tree decoding of the inference path (g2gt.ud.parse.trees.decode_heads / greedy_heads) against
the per-sentence decoders: the greedy-tree shortcut on the scores' device gives exactly mst_decode's trees (ties,
forbidden and non-finite scores included), only the sentences whose greedy heads are no single-rooted tree reach
the CPU tree decoder, and Chu-Liu-Edmonds itself returns the greedy heads whenever they are such a tree."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from g2gt.ud.io import check_tree
from g2gt.ud.parse import trees
from g2gt.ud.parse.trees import decode_heads, eisner_decode, greedy_heads, mst_decode


def _batch(seed: int, kind: str, B: int = 48, N: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, N, N]`` float32 scores of one kind and ``[B]`` lengths in ``1..N-1`` (padding is noise)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, N, (B,), generator=g)
    if kind == "ties":  # three values: many equal maxima, where the first index must win
        S = torch.randint(0, 3, (B, N, N), generator=g).float()
    else:
        S = torch.randn(B, N, N, generator=g)
    if kind in ("sharp", "ties"):  # a random tree boosted: most greedy heads are trees, some are not
        for b, n in enumerate(lengths.tolist()):
            for i in range(1, n + 1):
                S[b, i, int(torch.randint(0, i, (), generator=g))] += 3.0 if b % 4 else 0.3
    if kind == "nonfinite":
        S[torch.rand(B, N, N, generator=g) < 0.1] = float("-inf")
        S[torch.rand(B, N, N, generator=g) < 0.03] = float("nan")
        S[torch.rand(B, N, N, generator=g) < 0.02] = float("inf")
    return S, lengths


def _reference(S: torch.Tensor, lengths: torch.Tensor, algorithm: str = "mst") -> list[list[int]]:
    fn = mst_decode if algorithm == "mst" else eisner_decode
    return [fn(S[b].double().numpy(), n) for b, n in enumerate(lengths.tolist())]


def _words(heads: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    return [row[1 : n + 1] for row, n in zip(heads.tolist(), lengths.tolist())]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("kind", ["normal", "sharp", "ties", "nonfinite"])
def test_decode_heads_gives_the_per_sentence_msts(kind, compiled, monkeypatch) -> None:
    if not compiled:
        monkeypatch.setattr(trees, "_compiled_trees", lambda: None)
    for seed in range(3):
        S, lengths = _batch(seed, kind)
        heads = decode_heads(S, lengths)
        assert heads.dtype == torch.long and heads.shape == S.shape[:2] and heads.device == S.device
        assert _words(heads, lengths) == _reference(S, lengths)
        cols = torch.arange(S.shape[1])
        assert not heads[(cols[None] == 0) | (cols[None] > lengths[:, None])].any()  # ROOT and padding hold 0
        assert all(check_tree(h) is None for h in _words(heads, lengths))


@pytest.mark.parametrize("kind", ["normal", "ties", "nonfinite"])
def test_decode_heads_eisner_gives_the_per_sentence_projective_trees(kind) -> None:
    S, lengths = _batch(7, kind, B=16, N=9)
    assert _words(decode_heads(S, lengths, "eisner"), lengths) == _reference(S, lengths, "eisner")


@pytest.mark.parametrize("kind", ["sharp", "ties", "nonfinite"])
def test_greedy_heads_passes_exactly_the_single_rooted_greedy_trees(kind) -> None:
    """Checked against a plain per-sentence loop (first-index argmax of finite rows, one ROOT child,
    check_tree), and where a sentence passes, its heads are mst_decode's."""
    S, lengths = _batch(11, kind)
    heads, ok = greedy_heads(S, lengths)
    assert 0 < int(ok.sum()) < len(ok) or kind == "nonfinite"
    for b, n in enumerate(lengths.tolist()):
        M = S[b, : n + 1, : n + 1].clone()
        M[torch.arange(n + 1), torch.arange(n + 1)] = float("-inf")
        rows = M[1:]
        greedy = [int(np.argmax(r)) for r in rows.numpy()]
        finite = bool(torch.isfinite(rows).any(1).all()) and not bool(rows.isnan().any()) and \
            not bool(rows.isposinf().any())
        is_tree = finite and sum(h == 0 for h in greedy) == 1 and check_tree(greedy) is None
        assert bool(ok[b]) == is_tree, b
        if is_tree:
            assert heads[b, 1 : n + 1].tolist() == greedy == mst_decode(S[b].double().numpy(), n)


def test_only_the_sentences_without_a_greedy_tree_reach_the_tree_decoder(monkeypatch) -> None:
    S, lengths = _batch(3, "sharp")
    _, ok = greedy_heads(S, lengths)
    seen = []

    class Fake:  # the compiled decoder's interface, by way of mst_decode, recording what it is given
        @staticmethod
        def max_spanning_trees(sub: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
            seen.append((sub.shape, sub.dtype, sub.device, lens.tolist()))
            out = torch.zeros(sub.shape[0], sub.shape[1] - 1, dtype=torch.long)
            for r, n in enumerate(lens.tolist()):
                out[r, :n] = torch.tensor(mst_decode(sub[r].numpy(), n))
            return out

    monkeypatch.setattr(trees, "_compiled_trees", lambda: Fake)
    heads = decode_heads(S, lengths)
    rest = (~ok).nonzero().flatten()
    assert len(seen) == 1  # one call for the whole batch
    shape, dtype, device, lens = seen[0]
    m = int(lengths[rest].max())
    assert shape == (len(rest), m + 1, m + 1) and dtype == torch.float64 and device.type == "cpu"
    assert lens == lengths[rest].tolist()
    assert _words(heads, lengths) == _reference(S, lengths)


def test_no_call_when_every_greedy_head_set_is_a_tree(monkeypatch) -> None:
    N = 6
    S = torch.randn(4, N, N)
    S[:, 1:, :] -= 10.0
    for b in range(4):  # a chain 1 <- 2 <- ... with word 1 on ROOT
        S[b, 1, 0] += 20.0
        for i in range(2, N):
            S[b, i, i - 1] += 20.0
    lengths = torch.tensor([5, 3, 1, 4])

    def fail():
        raise AssertionError("the tree decoder was called")

    monkeypatch.setattr(trees, "_compiled_trees", fail)
    assert _words(decode_heads(S, lengths), lengths) == [[0, 1, 2, 3, 4], [0, 1, 2], [0], [0, 1, 2, 3]]


def test_chu_liu_edmonds_returns_the_greedy_heads_when_they_are_a_single_rooted_tree() -> None:
    """The shortcut's premise for the decoder as implemented (numpy CLE with the reweighted root edges, no fast
    path): on tie-free scores, whenever the greedy heads are a single-rooted tree, CLE finds that tree."""
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(300):
        n = int(rng.integers(2, 10))
        S = rng.normal(size=(n + 1, n + 1))
        for i in range(1, n + 1):
            S[i, int(rng.integers(0, i))] += 2.5
        M = trees._as_matrix(S, n)
        greedy = M[1:].argmax(1).tolist()
        if sum(h == 0 for h in greedy) != 1 or check_tree(greedy) is not None:
            continue
        hits += 1
        body = M[1:]
        shift = (float(body[np.isfinite(body)].max()) - float(body[np.isfinite(body)].min()) + 1.0) * (n + 1)
        M[1:, 0] -= shift
        assert trees._chu_liu_edmonds(M)[1:].tolist() == greedy
    assert hits > 50


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_decode_heads_on_cuda_matches_the_cpu() -> None:
    for kind in ("normal", "sharp", "ties", "nonfinite"):
        S, lengths = _batch(5, kind)
        heads = decode_heads(S.cuda(), lengths.cuda())
        assert heads.device.type == "cuda"
        assert heads.cpu().equal(decode_heads(S, lengths))


def test_with_ties_the_fast_path_not_chu_liu_edmonds_decides() -> None:
    """Among equal-scoring trees CLE alone (reweighted root edges) may return another tree than the greedy one:
    mst_decode and decode_heads agree because both take the greedy tree first."""
    S = np.array([[1, 2, 1, 1, 1, 0, 0], [2, 1, 1, 0, 2, 2, 1], [0, 2, 1, 2, 0, 1, 2], [0, 0, 1, 2, 2, 2, 1],
                  [1, 1, 2, 0, 0, 2, 0], [0, 2, 0, 2, 2, 0, 1], [0, 1, 1, 2, 2, 0, 0]], dtype=np.float64)
    greedy = [0, 1, 4, 2, 1, 3]
    M = trees._as_matrix(S, 6)
    body = M[1:]
    M[1:, 0] -= (body[np.isfinite(body)].max() - body[np.isfinite(body)].min() + 1.0) * 7
    alone = trees._chu_liu_edmonds(M)[1:].tolist()
    assert alone != greedy and trees.tree_score(S, alone) == trees.tree_score(S, greedy)
    assert mst_decode(S) == greedy
    assert decode_heads(torch.from_numpy(S)[None].float(), torch.tensor([6]))[0, 1:].tolist() == greedy
