r"""Graph decoding with the guarantees the UD validator checks, and a checker for them.

From edge logits ``s [m, m]`` over the nodes ``0..n`` (0 = ROOT; row = dependent, column = head),
:func:`decode_edges` returns a set of edges ``(d, h)`` such that

1. no self loops, ROOT is never a dependent;
2. every word has at least one head: the pairs with ``s_dh > threshold`` (probability > 0.5 at the
   default 0), else the word's best-scoring head;
3. every word is reachable from ROOT: while some word is not, the best-scoring edge from a reachable
   node to an unreachable word is added (greedy, Prim-like), so repairs cost as little score as possible.

Words with fixed heads (``fixed``, e.g. ``goeswith`` dependents, whose DEPS must equal the basic edge)
get exactly their ``extra_edges``. ``extra_edges`` may name further nodes ``> n`` (the input's empty
nodes, kept as they are); they count for reachability.

:func:`choose_labels` picks each edge's label with ``root`` on exactly the edges from ROOT, and
:func:`deps_problems` lists every violation of the rules above in a sentence's DEPS (empty list = valid).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch
from torch import Tensor

__all__ = ["decode_edges", "choose_labels", "deps_problems", "reachable"]


def reachable(num_nodes: int, edges: Iterable[tuple[int, int]], root: int = 0) -> set[int]:
    """Nodes reachable from ``root`` following ``(dependent, head)`` edges from head to dependent."""
    children: dict[int, list[int]] = {}
    for d, h in edges:
        children.setdefault(h, []).append(d)
    seen = {root}
    stack = [root]
    while stack:
        for c in children.get(stack.pop(), ()):
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return seen


def decode_edges(scores: Tensor, threshold: float = 0.0, extra_edges: Sequence[tuple[int, int]] = (),
                 fixed: Iterable[int] = ()) -> list[tuple[int, int]]:
    """Enhanced edges ``(d, h)`` (sorted) from logits ``scores [n+1, n+1]`` (see the module docstring).

    ``extra_edges`` are always part of the graph (and are *not* repeated in the result); ``fixed``
    words get no predicted heads.
    """
    m = scores.shape[0]
    n = m - 1
    if scores.shape != (m, m):
        raise ValueError(f"scores must be square [n+1, n+1], got {tuple(scores.shape)}")
    s = scores.detach().float().cpu().clone()
    s.fill_diagonal_(float("-inf"))
    s[0] = float("-inf")
    s = torch.nan_to_num(s, nan=float("-inf"))
    fixed_set = set(fixed)
    extra = list(extra_edges)
    has_head = {d for d, _ in extra}
    free = [i for i in range(1, m) if i not in fixed_set]
    chosen: set[tuple[int, int]] = set()
    if free:
        rows = torch.tensor(free)
        sub = s[rows]
        for r, c in (sub > threshold).nonzero().tolist():
            chosen.add((free[r], c))
        best = sub.argmax(-1).tolist()
        has_head |= {d for d, _ in chosen}
        for r, i in enumerate(free):
            if i not in has_head:
                chosen.add((i, best[r] if best[r] != i else 0))
    # reachability repair
    total = max([m - 1] + [max(d, h) for d, h in extra])
    seen = reachable(total + 1, list(chosen) + extra)
    missing = [i for i in range(1, m) if i not in seen]
    while missing:
        cand = [i for i in missing if i not in fixed_set] or missing
        rows = torch.tensor(cand)
        cols = torch.tensor(sorted(j for j in seen if j <= n))
        sub = s[rows][:, cols]
        flat = int(sub.argmax())
        r, c = divmod(flat, len(cols))
        d, h = cand[r], int(cols[c])
        if not torch.isfinite(sub.view(-1)[flat]):
            h = 0  # no finite score (e.g. all masked): attach to ROOT, which is always reachable
        chosen.add((d, h))
        seen = reachable(total + 1, list(chosen) + extra)
        missing = [i for i in range(1, m) if i not in seen]
    return sorted(chosen)


def choose_labels(label_scores: Tensor, heads: Sequence[int], root_label: int) -> list[int]:
    """Label ids for edges with heads ``heads`` (``[E]``) from ``label_scores [E, L]``: ``root_label``
    exactly where the head is ROOT (0), else the best label other than ``root_label``."""
    if len(heads) == 0:
        return []
    s = label_scores.detach().float().cpu().clone()
    s[:, root_label] = float("-inf")
    out = s.argmax(-1).tolist()
    return [root_label if h == 0 else k for h, k in zip(heads, out)]


def _key(head) -> tuple[int, int]:
    if isinstance(head, tuple):  # conllu's (8, '.', 1)
        return (int(head[0]), int(head[2]))
    if isinstance(head, str):
        a, _, b = head.partition(".")
        return (int(a), int(b or 0))
    return (int(head), 0)


def deps_problems(sentence) -> list[str]:
    """What is wrong with a sentence's enhanced graph, one message per problem (empty = valid):
    a word without DEPS, a malformed or unsorted DEPS, a repeated (head, relation), a self loop, a
    ``root`` relation not from 0 (or from 0 and not ``root``), or a node not reachable from ROOT."""
    probs: list[str] = []
    nodes: list[tuple[int, int]] = []
    edges: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for tok in sentence.rows:
        tid = tok["id"]
        if isinstance(tid, tuple) and tid[1] == "-":
            continue
        me = _key(tid)
        nodes.append(me)
        deps = tok["deps"]
        if not isinstance(deps, list) or not deps:
            probs.append(f"node {tid}: DEPS is {deps!r} (expected at least one HEAD:DEPREL)")
            continue
        keys = [(_key(h), lab) for lab, h in deps]
        if keys != sorted(keys):
            probs.append(f"node {tid}: DEPS not sorted by head, then relation: {deps}")
        if len(set(keys)) != len(keys):
            probs.append(f"node {tid}: DEPS repeats a (head, relation): {deps}")
        for (h, lab) in keys:
            if h == me:
                probs.append(f"node {tid}: self loop in DEPS")
            if (h == (0, 0)) != (lab.split(":")[0] == "root"):
                probs.append(f"node {tid}: relation {lab!r} from head {h[0]} (root iff the head is 0)")
            edges.append((me, h))
    index = {k: i + 1 for i, k in enumerate(nodes)}
    index[(0, 0)] = 0
    seen = reachable(len(index), [(index[d], index[h]) for d, h in edges if h in index and d in index])
    for k in nodes:
        if index[k] not in seen:
            probs.append(f"node {k[0]}{'' if not k[1] else '.' + str(k[1])}: not reachable from ROOT")
    return probs
