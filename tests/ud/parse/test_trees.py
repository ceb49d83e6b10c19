"""Tests for g2gt.ud.parse.trees: MST (Chu-Liu-Edmonds, single root) and Eisner decoding."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import torch

from g2gt.ud.io import check_tree
from g2gt.ud.parse.trees import batch_decode, eisner_decode, greedy_trees, mst_decode, tree_score


def _reference_mst(S: np.ndarray) -> float:
    """Best single-rooted arborescence score by networkx, brute-forcing ROOT's only child."""
    n = S.shape[0] - 1
    best = -np.inf
    for r in range(1, n + 1):
        G = nx.DiGraph()
        G.add_edge(0, r, weight=float(S[r, 0]))
        for d in range(1, n + 1):
            for h in range(1, n + 1):
                if h != d:
                    G.add_edge(h, d, weight=float(S[d, h]))
        if n == 1:
            best = max(best, float(S[1, 0]))
            continue
        T = nx.maximum_spanning_arborescence(G, attr="weight")
        best = max(best, sum(T[u][v]["weight"] for u, v in T.edges))
    return best


def _projective(heads: list[int] | tuple[int, ...]) -> bool:
    n = len(heads)
    for d in range(1, n + 1):
        h = heads[d - 1]
        lo, hi = sorted((h, d))
        for k in range(lo + 1, hi):
            v = k
            while v not in (0, h):
                v = heads[v - 1]
            if v != h:
                return False
    return True


def _brute_force_projective(S: np.ndarray) -> float:
    n = S.shape[0] - 1
    best = -np.inf
    for heads in itertools.product(range(n + 1), repeat=n):
        if check_tree(list(heads)) is None and _projective(heads):
            best = max(best, tree_score(S, heads))
    return best


def test_mst_matches_networkx_on_random_scores() -> None:
    rng = np.random.default_rng(0)
    for trial in range(120):
        n = int(rng.integers(1, 11))
        S = rng.normal(size=(n + 1, n + 1))
        if trial % 3 == 0:
            S[1:, 0] += 3.0  # many words want ROOT: the single-root constraint matters
        heads = mst_decode(torch.tensor(S))
        assert len(heads) == n and check_tree(heads) is None, heads
        assert tree_score(S, heads) == pytest.approx(_reference_mst(S), abs=1e-9)


def test_mst_larger_sentences() -> None:
    rng = np.random.default_rng(1)
    for n in (14, 22):
        S = rng.normal(size=(n + 1, n + 1)) * 3
        heads = mst_decode(S)
        assert check_tree(heads) is None
        assert tree_score(S, heads) == pytest.approx(_reference_mst(S), abs=1e-9)


def test_mst_ties_and_forbidden_arcs_match_networkx() -> None:
    """Integer scores (many ties, cycles contracted into already-contracted nodes) and
    forbidden (-inf) arcs: the in-place contraction still finds an optimal tree."""
    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(2, 10))
        S = rng.integers(0, 4, size=(n + 1, n + 1)).astype(np.float64)
        if trial % 2:
            S[rng.random(S.shape) < 0.2] = -np.inf
            S[1:, 0] = rng.integers(0, 4, size=n)  # keep a finite way to ROOT
        heads = mst_decode(S)
        assert len(heads) == n and check_tree(heads) is None, heads
        finite = np.where(np.isfinite(S), S, -1e6)
        assert tree_score(finite, heads) == pytest.approx(_reference_mst(finite), abs=1e-9)


def test_mst_fast_path_returns_greedy_tree() -> None:
    gold = [2, 0, 2, 3, 2]
    S = torch.randn(6, 6)
    for d, h in enumerate(gold, start=1):
        S[d, h] += 20
    assert mst_decode(S) == gold
    assert eisner_decode(S) == gold  # projective, so Eisner finds it too


def test_mst_handles_inf_and_length() -> None:
    rng = np.random.default_rng(2)
    S = rng.normal(size=(8, 8))
    S[1:, 0] = -np.inf  # nobody may be root ... except one must be
    S[3, 0] = 0.0
    heads = mst_decode(S)
    assert check_tree(heads) is None and heads[2] == 0
    sub = mst_decode(S, length=4)
    assert len(sub) == 4 and check_tree(sub) is None and max(sub) <= 4
    assert mst_decode(torch.zeros(2, 2)) == [0]
    with pytest.raises(ValueError):
        mst_decode(torch.zeros(3, 4))


def test_eisner_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    for trial in range(50):
        n = int(rng.integers(1, 6))
        S = rng.normal(size=(n + 1, n + 1))
        if trial % 2:
            S[1:, 0] += 2.0
        heads = eisner_decode(S)
        assert check_tree(heads) is None and _projective(heads), heads
        assert tree_score(S, heads) == pytest.approx(_brute_force_projective(S), abs=1e-9)
    S = rng.normal(size=(7, 7))  # one n = 6 case
    heads = eisner_decode(S)
    assert tree_score(S, heads) == pytest.approx(_brute_force_projective(S), abs=1e-9)


def test_eisner_never_beats_mst() -> None:
    rng = np.random.default_rng(4)
    for _ in range(30):
        n = int(rng.integers(2, 15))
        S = rng.normal(size=(n + 1, n + 1))
        e, m = eisner_decode(S), mst_decode(S)
        assert check_tree(e) is None and _projective(e)
        assert tree_score(S, e) <= tree_score(S, m) + 1e-9


def test_batch_decode_padding() -> None:
    torch.manual_seed(0)
    lengths = torch.tensor([3, 7, 1])
    scores = torch.randn(3, 8, 8)
    for algo in ("mst", "eisner"):
        out = batch_decode(scores, lengths, algorithm=algo)
        assert [len(h) for h in out] == lengths.tolist()
        for b, heads in enumerate(out):
            assert check_tree(heads) is None
            single = (mst_decode if algo == "mst" else eisner_decode)(scores[b, : lengths[b] + 1, : lengths[b] + 1])
            assert heads == single
    with pytest.raises(ValueError, match="unknown"):
        batch_decode(scores, lengths, algorithm="greedy")


def test_greedy_trees_takes_exactly_the_batches_greedy_trees_and_they_are_the_msts() -> None:
    """The batched fast path accepts a sentence iff its per-word argmax is a single-rooted tree (checked
    against a plain loop), and then gives mst_decode's heads; sharp scores make most rows trees."""
    torch.manual_seed(1)
    B, N = 64, 9
    lengths = torch.randint(1, N, (B,))
    gold = [[int(torch.randint(0, i, ())) for i in range(1, n + 1)] for n in lengths.tolist()]  # heads < i: a tree
    scores = torch.randn(B, N, N)
    for b, heads in enumerate(gold):
        for i, h in enumerate(heads, start=1):
            scores[b, i, h] += 4.0 if b % 3 else 0.5  # every third sentence: noisy, often not a tree
    scores[5, 1:, 0] += 10.0  # several roots: not a tree
    scores[6, 2, 3] = float("nan")  # a NaN: left to mst_decode
    scores[:, torch.arange(N), torch.arange(N)] = float("-inf")
    fast = greedy_trees(scores, lengths.tolist())
    for b in range(B):
        n = int(lengths[b])
        S = scores[b, : n + 1, : n + 1].clone()
        greedy = S[1:].argmax(1).tolist()
        is_tree = sum(h == 0 for h in greedy) == 1 and check_tree(greedy) is None
        is_tree = is_tree and bool(torch.isfinite(S[1:].max(1).values).all())
        assert (b in fast) == bool(is_tree), b
        if b in fast:
            assert fast[b] == greedy == mst_decode(S)
    assert 0 < len(fast) < B
    assert batch_decode(scores, lengths) == [mst_decode(scores[b, : n + 1, : n + 1]) for b, n in
                                             enumerate(lengths.tolist())]
