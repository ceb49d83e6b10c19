"""Decoding dependency trees from arc score matrices.

All decoders take a score matrix ``scores [n+1, n+1]`` whose **row is the
dependent and column the head**, index 0 being the artificial ROOT, and return
``heads``: a list of ``n`` ints, ``heads[i-1]`` = head of word ``i`` (0 = ROOT).
The tree maximises ``sum_i scores[i, heads[i-1]]`` subject to:

* :func:`mst_decode` -- any (non-projective) spanning arborescence with exactly
  one child of ROOT (Chu-Liu-Edmonds / Edmonds 1967; cycles contracted in
  place on one working matrix, O(n^2) in all).  The single-root constraint uses the "reweight root" trick:
  every arborescence has at least one root edge, and subtracting a constant
  ``M`` larger than any possible difference of tree scores from all root edges
  makes a tree with ``r`` root edges lose ``r*M``, so the maximum has ``r = 1``
  and, among single-rooted trees (all shifted by the same ``M``), is the best.
  Fast path: when the greedy per-word argmax already is a single-rooted tree it
  is returned at once (the common case for a trained parser). For a batch, :func:`decode_heads`
  (the parser's path; :func:`batch_decode` is its list form) takes that fast path for all
  sentences at once on the scores' device (:func:`greedy_heads`: argmax, one root child, and
  no cycle by pointer doubling) and runs only the others on the CPU, through the compiled twin
  of this function (``csrc/arborescence.h`` in the C++ library of :mod:`g2gt.nn.label_cpp`: the
  same steps and the same ties, several times faster) where that library is built, through this
  numpy code elsewhere. The fast path is what makes ties exact: without it Chu-Liu-Edmonds on
  the reweighted matrix returns the greedy tree whenever the maximum is unique, but among
  equal-scoring trees it may pick another one.
* :func:`eisner_decode` -- the best projective tree (Eisner 1996), O(n^3) with
  the split-point maximisation vectorised in numpy, one python loop over span
  widths.  Single root: the incomplete span ``ROOT -> t`` may only split at
  ``k = 0``, so ROOT gets exactly one child.

Scores are used in float64 on the CPU; ``-inf`` / NaN entries are treated as
"forbidden unless unavoidable" (replaced by a very low finite score).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import Tensor

__all__ = ["mst_decode", "eisner_decode", "batch_decode", "decode_heads", "greedy_heads", "greedy_trees", "tree_score"]


def _as_matrix(scores: Tensor | np.ndarray, length: int | None) -> np.ndarray:
    """``[n+1, n+1]`` float64 numpy copy with forbidden entries made finite-but-terrible,
    the diagonal and row 0 (ROOT has no head) set to ``-inf``."""
    if isinstance(scores, Tensor):
        arr = scores.detach().to("cpu", torch.float64).numpy()
    else:
        arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"expected a square [n+1, n+1] score matrix, got shape {tuple(arr.shape)}")
    N = arr.shape[0] if length is None else int(length) + 1
    if N < 2 or N > arr.shape[0]:
        raise ValueError(f"length {N - 1} is outside 1..{arr.shape[0] - 1} for a {tuple(arr.shape)} score matrix")
    S = np.array(arr[:N, :N], dtype=np.float64, copy=True)
    body = S[1:]
    finite = np.isfinite(body)
    idx = np.arange(1, N)
    finite[idx - 1, idx] = False  # the diagonal never counts
    if not finite.all():
        vals = body[finite]
        lo, hi = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 0.0)
        floor = lo - (hi - lo + 1.0) * (N + 1)
        body[~finite] = floor
    S[idx, idx] = -np.inf
    S[0, :] = -np.inf
    return S


def _find_cycle(heads: np.ndarray) -> list[int] | None:
    """A cycle among nodes ``1..N-1`` of the head array (``heads[0]`` ignored), or None."""
    cycles = _all_cycles(heads)
    return cycles[0] if cycles else None


def _all_cycles(heads: np.ndarray) -> list[list[int]]:
    """Every cycle among nodes ``1..N-1`` of the head array (``heads[0]`` ignored); disjoint."""
    N = len(heads)
    state = [0] * N  # 0 new, 1 on the current path, 2 finished
    state[0] = 2
    h = heads.tolist()
    cycles = []
    for start in range(1, N):
        if state[start]:
            continue
        path = []
        v = start
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = h[v]
        if state[v] == 1:
            cycles.append(path[path.index(v):])
        for u in path:
            state[u] = 2
    return cycles


def _cycle_through(heads: np.ndarray, c: int) -> list[int] | None:
    """The cycle that contains node ``c`` when following ``heads`` from it, or None
    (the walk reaches ROOT, or another cycle that does not contain ``c``)."""
    h = heads.tolist()
    path = [c]
    seen = {c}
    v = h[c]
    while v != 0:
        if v == c:
            return path
        if v in seen:
            return None
        seen.add(v)
        path.append(v)
        v = h[v]
    return None


def _chu_liu_edmonds(S: np.ndarray) -> np.ndarray:
    r"""Maximum spanning arborescence rooted at node 0 of ``S[dep, head]`` (``[N, N]``,
    ``-inf`` diagonal and row 0).  Returns heads ``[N]`` with ``heads[0] = 0``.

    Contraction in place: a cycle ``C`` (every member ``d`` at its best head
    ``g(d)``) becomes its member ``c``, on a working copy ``W`` of ``S``:

    * entering edges ``W[c, h] = max_{d in C} W[d, h] - W[d, g(d)]`` (break the cycle at ``d``);
    * leaving edges ``W[x, c] = max_{d in C} W[x, d]``;
    * the other members' rows and columns become ``-inf`` (removed).

    Each contraction costs ``O(N |C|)`` numpy work and an ``O(N)`` walk (after
    contracting, a new cycle can only pass through ``c``; other cycles are untouched),
    so the whole decode is ``O(N^2)`` — no sub-matrix copies per contraction.
    Expansion replays the contractions backwards: the entering edge chosen for ``c``
    picks the member whose cycle edge is dropped, and edges leaving ``c`` go back to
    the member they came from.
    """
    N = S.shape[0]
    W = S.copy()
    head = W.argmax(axis=1)
    head[0] = 0
    pending = _all_cycles(head)
    if not pending:
        return head
    NEG = -np.inf
    ar = np.arange(N)  # index arrays built once
    active = np.ones(N, dtype=bool)
    in_cycle = np.zeros(N, dtype=bool)
    history = []  # (c, members, their cycle heads, entering member per head, active outside mask, leaving member)
    while pending:
        C = np.array(pending.pop(), dtype=np.int64)
        c = int(C[0])
        hc = head[C]
        k = len(C)
        rows = W[C]  # [|C|, N]
        enter = rows - rows[ar[:k], hc][:, None]
        in_local = enter.argmax(axis=0)
        in_val = enter[in_local, ar]
        cols = W[:, C]  # [N, |C|]
        out_local = cols.argmax(axis=1)
        out_val = cols[ar, out_local]
        in_cycle[C] = True
        in_val[C] = NEG
        out_val[C] = NEG
        active[C] = False
        history.append((c, C, hc, C[in_local], active.copy(), C[out_local]))
        active[c] = True
        W[C] = NEG
        W[:, C] = NEG
        W[c] = in_val
        W[:, c] = out_val
        head[in_cycle[head]] = c  # x -> d in C becomes x -> c (still x's best head)
        head[c] = in_val.argmax()
        in_cycle[C] = False
        new = _cycle_through(head, c)
        if new is not None:
            pending.append(new)
    final = head.copy()
    for c, C, hc, in_arg, outside, out_arg in reversed(history):
        h = final[c]
        sel = outside & (final == c)
        final[sel] = out_arg[sel]
        final[C] = hc
        final[in_arg[h]] = h
    final[0] = 0
    return final


def tree_score(scores: Tensor | np.ndarray, heads: Sequence[int]) -> float:
    """``sum_i scores[i, heads[i-1]]`` for words ``i = 1..len(heads)``."""
    arr = scores.detach().to("cpu", torch.float64).numpy() if isinstance(scores, Tensor) else np.asarray(scores)
    n = len(heads)
    return float(arr[np.arange(1, n + 1), np.asarray(heads, dtype=np.int64)].sum())


def mst_decode(scores: Tensor | np.ndarray, length: int | None = None) -> list[int]:
    """Maximum spanning tree with exactly one child of ROOT (Chu-Liu-Edmonds).

    Args:
        scores: ``[n+1, n+1]`` float arc scores, ``scores[d, h]`` = score of head ``h``
            for dependent ``d``; index 0 is ROOT (row 0 is ignored).
        length: number of words ``n`` to decode (the top-left ``[n+1, n+1]`` block is
            used); default: all rows.

    Returns:
        ``heads``: ``n`` ints, ``heads[i-1]`` in ``0..n`` is the head of word ``i``;
        exactly one is 0.
    """
    S = _as_matrix(scores, length)
    N = S.shape[0]
    if N == 2:
        return [0]
    greedy = S[1:].argmax(axis=1)
    if int((greedy == 0).sum()) == 1:
        full = np.concatenate([[0], greedy])
        if _find_cycle(full) is None:
            return greedy.tolist()
    body = S[1:]
    ok = np.isfinite(body)
    vals = body[ok]
    M = (float(vals.max()) - float(vals.min()) + 1.0) * N
    S[1:, 0] -= M
    heads = _chu_liu_edmonds(S)
    return heads[1:].tolist()


def eisner_decode(scores: Tensor | np.ndarray, length: int | None = None) -> list[int]:
    """Best projective tree with exactly one child of ROOT (Eisner's algorithm).

    Args and return value as in :func:`mst_decode`.  Time O(n^3), memory O(n^2).
    """
    S = _as_matrix(scores, length)
    N = S.shape[0]
    n = N - 1
    if n == 1:
        return [0]
    A = S.T.copy()  # A[h, d]
    A[:, 0] = -np.inf
    NEG = -np.inf
    Cl = np.full((N, N), NEG)  # complete span s..t headed by t
    Cr = np.full((N, N), NEG)  # complete span s..t headed by s
    Il = np.full((N, N), NEG)  # incomplete, arc t -> s
    Ir = np.full((N, N), NEG)  # incomplete, arc s -> t
    d = np.arange(N)
    Cl[d, d] = 0.0
    Cr[d, d] = 0.0
    bCl = np.zeros((N, N), dtype=np.int64)
    bCr = np.zeros((N, N), dtype=np.int64)
    bI = np.zeros((N, N), dtype=np.int64)
    for w in range(1, N):
        m = N - w
        s = np.arange(m)
        t = s + w
        K = s[:, None] + np.arange(w)[None, :]  # [m, w] split points s..t-1
        rows = np.arange(m)
        vals = Cr[s[:, None], K] + Cl[K + 1, t[:, None]]
        vals[0, 1:] = NEG  # ROOT's incomplete span may only split at k = 0 (one root child)
        kb = vals.argmax(axis=1)
        best = vals[rows, kb]
        bI[s, t] = K[rows, kb]
        Ir[s, t] = best + A[s, t]
        Il[s, t] = best + A[t, s]
        Il[0, t[0]] = NEG  # ROOT is never a dependent
        vals = Cl[s[:, None], K] + Il[K, t[:, None]]
        kb = vals.argmax(axis=1)
        Cl[s, t] = vals[rows, kb]
        bCl[s, t] = K[rows, kb]
        K2 = K + 1  # split points s+1..t
        vals = Ir[s[:, None], K2] + Cr[K2, t[:, None]]
        kb = vals.argmax(axis=1)
        Cr[s, t] = vals[rows, kb]
        bCr[s, t] = K2[rows, kb]
    heads = [0] * N
    stack: list[tuple[int, int, int]] = [(0, n, 0)]  # kinds: 0 Cr, 1 Cl, 2 Ir, 3 Il
    while stack:
        s0, t0, kind = stack.pop()
        if s0 == t0:
            continue
        if kind == 0:
            k = int(bCr[s0, t0])
            stack += [(s0, k, 2), (k, t0, 0)]
        elif kind == 1:
            k = int(bCl[s0, t0])
            stack += [(s0, k, 1), (k, t0, 3)]
        else:
            if kind == 2:
                heads[t0] = s0
            else:
                heads[s0] = t0
            k = int(bI[s0, t0])
            stack += [(s0, k, 0), (k + 1, t0, 1)]
    return heads[1:]


def batch_decode(scores: Tensor, lengths: Tensor | Sequence[int], algorithm: str = "mst") -> list[list[int]]:
    """Decode a padded batch (on the CPU; :func:`decode_heads` is the same on the scores' device, as a tensor).

    Args:
        scores: ``[B, n+1, n+1]`` arc scores (row = dependent, column = head, 0 = ROOT).
        lengths: ``[B]`` number of words of each sentence (ROOT not counted).
        algorithm: ``"mst"`` (non-projective, :func:`mst_decode`) or ``"eisner"``
            (projective, :func:`eisner_decode`).

    Returns:
        ``B`` lists of heads, the ``b``-th of length ``lengths[b]``.
    """
    scores = scores.detach().cpu() if isinstance(scores, Tensor) else torch.from_numpy(np.asarray(scores))
    lens = lengths.tolist() if isinstance(lengths, Tensor) else [int(x) for x in lengths]
    heads = decode_heads(scores, torch.tensor(lens, dtype=torch.long), algorithm)
    return [row[1 : 1 + n] for row, n in zip(heads.tolist(), lens)]


def decode_heads(scores: Tensor, lengths: Tensor, algorithm: str = "mst") -> Tensor:
    """A padded batch's trees as one tensor on the scores' device: for ``"mst"`` the per-word best heads of
    the whole batch and their check (:func:`greedy_heads`) run there as tensor ops, and only the sentences
    whose greedy heads are not a single-rooted tree go to the CPU (one copy of their ``[R, m+1, m+1]`` block,
    ``m`` their longest length) for the tree decoder: the same heads as :func:`mst_decode` /
    :func:`eisner_decode` of each sentence (whose own fast path returns the greedy heads when they are such
    a tree, ties included).

    Args:
        scores: ``[B, N, N]`` arc scores (row = dependent, column = head, 0 = ROOT), on any device.
        lengths: ``[B]`` long, words per sentence (``1 <= lengths[b] <= N - 1``), on any device.
        algorithm: ``"mst"`` (Chu-Liu-Edmonds) or ``"eisner"`` (projective; every sentence is decoded on the CPU).

    Returns:
        ``heads [B, N]`` long on ``scores.device``: ``heads[b, i]`` is the head of word ``i`` for
        ``1 <= i <= lengths[b]``, 0 at ROOT (column 0) and on padding.
    """
    if algorithm not in ("mst", "eisner"):
        raise ValueError(f"unknown tree decoding algorithm {algorithm!r} (expected 'mst' or 'eisner')")
    if scores.dim() != 3:
        raise ValueError(f"expected scores [B, n+1, n+1], got shape {tuple(scores.shape)}")
    B, N, _ = scores.shape
    if lengths.shape != (B,):
        raise ValueError(f"{lengths.numel()} lengths for a batch of {B} score matrices")
    dev = scores.device
    lengths = lengths.to(dev, torch.long)
    if algorithm == "mst" and B:
        heads, ok = greedy_heads(scores, lengths)
        cols = torch.arange(N, device=dev)
        heads = heads.masked_fill_((cols[None, :] == 0) | (cols[None, :] > lengths[:, None]), 0)  # ROOT, padding
    else:
        heads = torch.zeros(B, N, dtype=torch.long, device=dev)
        ok = torch.zeros(B, dtype=torch.bool, device=dev)
    both = torch.stack([ok.long(), lengths]).cpu()  # the one synchronising copy: [2, B]
    rest = (both[0] == 0).nonzero().flatten()
    if rest.numel():
        lens = both[1, rest]
        m = int(lens.max())
        sub = scores[rest.to(dev), : m + 1, : m + 1].detach().cpu().to(torch.float64)
        rows = torch.zeros(len(rest), N, dtype=torch.long)
        ops = _compiled_trees() if algorithm == "mst" else None
        if ops is not None:
            rows[:, 1 : m + 1] = ops.max_spanning_trees(sub, lens)[:, :m]
            rows.masked_fill_(torch.arange(N)[None, :] > lens[:, None], 0)  # padding of the shorter ones
        else:
            fn = mst_decode if algorithm == "mst" else eisner_decode
            arr = sub.numpy()
            for r, n in enumerate(lens.tolist()):
                rows[r, 1 : n + 1] = torch.tensor(fn(arr[r], n), dtype=torch.long)
        heads[rest.to(dev)] = rows.to(dev)
    return heads


def _compiled_trees():
    """The compiled :func:`mst_decode` (``max_spanning_trees`` of :mod:`g2gt.nn.label_cpp`'s library, the
    same steps and ties in C++, ``csrc/arborescence.h``), or None where that library is not there (yet)."""
    from ...nn import label_cpp

    return label_cpp.cpp_kernels()


def greedy_trees(scores: Tensor, lengths: Sequence[int]) -> dict[int, list[int]]:
    """:func:`mst_decode`'s fast path for a whole batch at once: ``{b: heads}`` for the sentences whose
    per-word best head already is a single-rooted tree (:func:`greedy_heads`), which is then the maximum
    spanning tree. The others are left to :func:`mst_decode`."""
    heads, ok = greedy_heads(scores, torch.tensor([int(x) for x in lengths], dtype=torch.long, device=scores.device))
    keep = ok.nonzero().flatten().tolist()
    rows = heads[keep].tolist()
    return {b: row[1 : 1 + int(lengths[b])] for b, row in zip(keep, rows)}


def greedy_heads(scores: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
    """Each word's best head and whether they form a single-rooted tree, for a whole batch on its device.

    The best head of word ``i`` is the row argmax of ``scores[b, i, 0..n]`` with ``i`` itself excluded,
    first index on ties (as ``np.argmax``: :func:`mst_decode`'s fast path). A sentence passes when every
    word's best score is finite (NaN / ``-inf`` rows are left to the tree decoder), exactly one word's best
    head is ROOT and there is no cycle. Acyclicity by pointer doubling: with ``p = heads`` (ROOT and padding
    pointing at 0), ``k = ceil(log2 N)`` squarings ``p <- p[p]`` follow every word ``2^k >= N`` steps up,
    which ends at ROOT iff its path has no cycle: ``O(B N log N)`` gathers, no loop over sentences.

    Args:
        scores: ``[B, N, N]`` arc scores (row = dependent, column = head, 0 = ROOT).
        lengths: ``[B]`` long, words per sentence, on the scores' device.

    Returns:
        ``(heads, ok)``: ``heads [B, N]`` long, the best head of every row (meaningful on words
        ``1..lengths[b]`` only), and ``ok [B]`` bool, True where those heads are a single-rooted tree (the
        maximum spanning tree with one ROOT child).
    """
    B, N, _ = scores.shape
    lens = lengths
    cols = torch.arange(N, device=scores.device)
    s = scores.to(torch.float32 if scores.dtype in (torch.float16, torch.bfloat16) else scores.dtype).clone()
    s[:, cols, cols] = float("-inf")
    s.masked_fill_(cols[None, None, :] > lens[:, None, None], float("-inf"))  # heads beyond the sentence
    best, heads = s.max(-1)  # [B, N]
    word = (cols[None, :] >= 1) & (cols[None, :] <= lens[:, None])  # [B, N]
    ok = (torch.isfinite(best) | ~word).all(1) & ((heads == 0) & word).sum(1).eq(1) & (lens >= 1)
    p = torch.where(word, heads, torch.zeros_like(heads))
    for _ in range(max(N - 1, 1).bit_length()):
        p = p.gather(1, p)
    ok &= p.eq(0).all(1)
    return heads, ok
