"""Graph decoding guarantees (a head for every word, reachable from ROOT, no self loops, root labels) and the
checker that verifies them."""

from __future__ import annotations

import random

import pytest
import torch

from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.enhance.data import sentence_edges
from g2gt.ud.enhance.decode import choose_labels, decode_edges, deps_problems, reachable
from g2gt.ud.io.conllu import parse_conllu_string, read_conllu


def _check(n: int, edges: list[tuple[int, int]], extra=()) -> None:
    assert all(d != h for d, h in edges), "self loop"
    assert all(1 <= d <= n and 0 <= h <= n for d, h in edges)
    assert len(set(edges)) == len(edges)
    deps = {d for d, _ in edges} | {d for d, _ in extra}
    assert deps >= set(range(1, n + 1)), "a word without a head"
    seen = reachable(n + 1, list(edges) + list(extra))
    assert set(range(1, n + 1)) <= seen, "a word not reachable from ROOT"


@pytest.mark.parametrize("seed", range(40))
def test_random_scores_give_a_valid_graph(seed):
    g = torch.Generator().manual_seed(seed)
    n = 1 + seed % 23
    scale = [0.1, 1.0, 5.0, 20.0][seed % 4]
    bias = [-8.0, -2.0, 0.0, 1.0][(seed // 4) % 4]  # from "almost no edge" to "many edges"
    scores = torch.randn(n + 1, n + 1, generator=g) * scale + bias
    edges = decode_edges(scores)
    _check(n, edges)
    assert edges == sorted(edges)


def test_cycles_of_confident_edges_are_repaired():
    # words 1 <-> 2 and 3 -> 1 are confident, nothing reaches ROOT: one repair edge from ROOT is needed
    s = torch.full((4, 4), -5.0)
    s[1, 2] = s[2, 1] = s[3, 1] = 5.0
    s[2, 0] = -1.0  # the best way in from ROOT
    edges = decode_edges(s)
    _check(3, edges)
    assert (2, 0) in edges and {(1, 2), (2, 1), (3, 1)} <= set(edges)


def test_all_masked_scores_still_give_a_valid_graph():
    edges = decode_edges(torch.full((6, 6), float("-inf")))
    _check(5, edges)


def test_gold_scores_give_back_the_gold_graph():
    sents = read_conllu(EWT_SAMPLE_DEV)
    checked = 0
    for s in sents:
        if any(isinstance(t["id"], tuple) and t["id"][1] == "." for t in s.rows):
            continue  # multiword tokens are fine, empty nodes are not predicted
        n = len(s)
        gold = {(d, h) for d, h, _ in sentence_edges(s)}
        scores = torch.full((n + 1, n + 1), -10.0)
        for d, h in gold:
            scores[d, h] = 10.0
        assert set(decode_edges(scores)) == gold
        checked += 1
    assert checked > 250


def test_fixed_words_and_extra_edges():
    # word 2 is fixed (goeswith) with head 1; word 3 hangs from empty node 4 (index n+1) whose head is 1
    s = torch.zeros(4, 4) - 5.0
    s[1, 0] = 5.0
    s[2, 3] = 9.0  # must be ignored: 2 is fixed
    extra = [(2, 1), (3, 4), (4, 1)]
    edges = decode_edges(s, extra_edges=extra, fixed=[2])
    assert all(d != 2 for d, _ in edges)
    assert not any(d == 3 for d, _ in edges)  # already has a head and is reachable through the empty node
    _check(3, edges, extra)


def test_choose_labels_puts_root_exactly_on_root_edges():
    scores = torch.tensor([[0.0, 9.0, 1.0], [5.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    assert choose_labels(scores, [0, 2, 3], root_label=1) == [1, 0, 2]
    assert choose_labels(torch.zeros(0, 3), [], root_label=1) == []


def _deps_sentence(deps: list[str]) -> object:
    lines = [f"{i}\tw{i}\tw\tX\t_\t_\t{0 if i == 1 else 1}\t{'root' if i == 1 else 'dep'}\t{d}\t_"
             for i, d in enumerate(deps, 1)]
    return parse_conllu_string("\n".join(lines) + "\n\n")[0]


def test_deps_problems_accepts_valid_and_names_each_violation():
    assert deps_problems(_deps_sentence(["0:root", "1:dep|3:conj", "1:obj"])) == []
    cases = {
        "not sorted": ["0:root", "3:conj|1:dep", "1:obj"],
        "self loop": ["0:root", "1:dep|2:conj", "1:obj"],
        "root iff": ["0:root", "1:root", "1:obj"],
        "not reachable": ["0:root", "3:dep", "2:dep"],
        "expected at least one": ["0:root", "_", "1:obj"],
    }
    for what, deps in cases.items():
        probs = deps_problems(_deps_sentence(deps))
        assert any(what in p for p in probs), (what, probs)


def test_deps_problems_of_the_gold_sample_is_empty():
    for s in read_conllu(EWT_SAMPLE_DEV):
        assert deps_problems(s) == []


def test_decode_breaks_ties_towards_the_lowest_numbers():
    """The documented tie-break (torch.argmax returns the first maximum): among equal scores a word takes the
    lowest-numbered head, and the reachability repair attaches the lowest-numbered dependent first. So tied
    scores decode exactly like the same scores with a tiny penalty growing with (dependent, head) in
    row-major order, and a case worked by hand gives the expected edges."""
    rng = random.Random(0)
    for n in (3, 5, 7, 9):
        m = n + 1
        for _ in range(20):
            scores = torch.tensor([[float(rng.choice([-2, -1, 1])) for _ in range(m)] for _ in range(m)])
            order = torch.arange(m * m, dtype=torch.float32).view(m, m)
            assert decode_edges(scores) == decode_edges(scores - 1e-4 * order), scores
    # 1 and 2 tie between heads 2 / 3 and 1 / 3 (all below the threshold); 3 prefers ROOT
    tied = torch.full((4, 4), -5.0)
    tied[1, 2] = tied[1, 3] = -1.0
    tied[2, 1] = tied[2, 3] = -1.0
    tied[3, 0] = -1.0
    got = decode_edges(tied)
    assert (1, 2) in got and (2, 1) in got and (3, 0) in got  # lowest-numbered of the tied heads
    # 1 <-> 2 is a cycle unreachable from ROOT: the repair ties at -1 between (1, 3) and (2, 3) and takes 1 first
    assert got == [(1, 2), (1, 3), (2, 1), (3, 0)]
