"""The compiled maximum spanning tree decoder (``max_spanning_trees``, csrc/arborescence.h) against
g2gt.ud.parse.trees.mst_decode, which it restates step for step: the same heads, ties and forbidden arcs
included, and batch_decode gives the same trees with it as without it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from g2gt.ud.io import check_tree
from g2gt.ud.parse import trees
from g2gt.ud.parse.trees import batch_decode, mst_decode, tree_score


def _matrices(rng: np.random.Generator, kind: str, B: int, n: int) -> np.ndarray:
    shape = (B, n + 1, n + 1)
    if kind == "normal":
        return rng.normal(size=shape)
    if kind == "ties":  # three values: many equal maxima, where the first index must win
        return rng.integers(0, 3, size=shape).astype(np.float64)
    S = rng.normal(size=shape)
    if kind == "forbidden":
        S[rng.random(shape) < 0.3] = -np.inf
    else:  # "nonfinite": NaN, +inf and -inf, all made finite-but-terrible first
        S = rng.integers(0, 2, size=shape).astype(np.float64)
        S[rng.random(shape) < 0.15] = np.nan
        S[rng.random(shape) < 0.1] = np.inf
        S[rng.random(shape) < 0.1] = -np.inf
    return S


@pytest.mark.parametrize("kind", ["normal", "ties", "forbidden", "nonfinite"])
def test_compiled_equals_mst_decode(cpp_kernel, kind):
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(150):
        n = int(rng.integers(1, 25))
        S = _matrices(rng, kind, 3, n)
        lengths = rng.integers(1, n + 1, size=3)
        got = cpp_kernel.max_spanning_trees(torch.from_numpy(S), torch.from_numpy(lengths.astype(np.int64)))
        assert got.shape == (3, n) and got.dtype == torch.long
        for b, length in enumerate(lengths.tolist()):
            heads = got[b, :length].tolist()
            assert heads == mst_decode(S[b], length), (kind, n, length)
            assert got[b, length:].eq(0).all()  # padding
            assert check_tree(heads) is None and heads.count(0) == 1
            checked += 1
    assert checked == 450


def test_compiled_finds_the_best_tree(cpp_kernel):
    """Random scores with cycles everywhere: the tree's score is the best single-rooted one (exhaustive
    search over all head assignments for n <= 5)."""
    import itertools

    rng = np.random.default_rng(3)
    for n in range(1, 6):
        S = rng.normal(size=(4, n + 1, n + 1))
        got = cpp_kernel.max_spanning_trees(torch.from_numpy(S), torch.full((4,), n, dtype=torch.long))
        for b in range(4):
            best = max(tree_score(S[b], h) for h in itertools.product(range(n + 1), repeat=n)
                       if check_tree(list(h)) is None and h.count(0) == 1)
            assert tree_score(S[b], got[b].tolist()) == pytest.approx(best, abs=1e-12)


def test_float32_scores_decode_as_their_float64_values(cpp_kernel):
    torch.manual_seed(0)
    S = torch.randn(5, 12, 12)
    lengths = torch.tensor([11, 3, 7, 1, 11])
    assert torch.equal(cpp_kernel.max_spanning_trees(S, lengths), cpp_kernel.max_spanning_trees(S.double(), lengths))


def test_batch_decode_gives_the_same_trees_with_and_without_it(cpp_kernel, monkeypatch):
    torch.manual_seed(2)
    B, N = 40, 16
    lengths = torch.randint(1, N, (B,))
    scores = torch.randn(B, N, N)
    scores[::2] *= 0.3  # flat rows: greedy heads with cycles, decoded by Chu-Liu-Edmonds
    assert trees._compiled_trees() is not None
    with_it = batch_decode(scores, lengths)
    monkeypatch.setattr(trees, "_compiled_trees", lambda: None)
    assert batch_decode(scores, lengths) == with_it
    assert [len(h) for h in with_it] == lengths.tolist()


@pytest.mark.parametrize(("scores", "lengths", "match"), [
    (torch.zeros(2, 4, 3), torch.tensor([1, 2]), r"\[B, n\+1, n\+1\]"),
    (torch.zeros(2, 4, 4, dtype=torch.int64), torch.tensor([1, 2]), "float32 or float64"),
    (torch.zeros(2, 4, 4), torch.tensor([1]), "one per matrix"),
    (torch.zeros(2, 4, 4), torch.tensor([1, 4]), "outside 1..3"),
    (torch.zeros(2, 4, 4), torch.tensor([0, 1]), "outside 1..3"),
])
def test_bad_input_is_refused(cpp_kernel, scores, lengths, match):
    with pytest.raises(RuntimeError, match=match):
        cpp_kernel.max_spanning_trees(scores, lengths)
