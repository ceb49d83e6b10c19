"""token_budget_batches(): the one length-bucketed token-budget batcher (integer properties only)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2gt.core.batch import token_budget_batches

lengths_st = st.lists(st.integers(1, 60), max_size=80)
limits_st = dict(budget=st.integers(1, 200), max_items=st.one_of(st.none(), st.integers(1, 6)),
                 max_pairs=st.one_of(st.none(), st.integers(1, 5000)))


def _cost_ok(lengths, batch, budget, max_items, max_pairs):
    m, k = max(lengths[i] for i in batch), len(batch)
    return m * k <= budget and (max_items is None or k <= max_items) and (max_pairs is None or m * m * k <= max_pairs)


@settings(max_examples=200, deadline=None)
@given(lengths=lengths_st, shuffle=st.booleans(), seed=st.integers(0, 10**6), **limits_st)
def test_every_index_once_and_budget_respected_except_singletons(lengths, budget, max_items, max_pairs,
                                                                  shuffle, seed):
    batches = token_budget_batches(lengths, budget, max_items=max_items, max_pairs=max_pairs,
                                   shuffle=shuffle, seed=seed, bucket_size=3)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(b for b in batches)
    for b in batches:
        assert len(b) == 1 or _cost_ok(lengths, b, budget, max_items, max_pairs)


@settings(max_examples=200, deadline=None)
@given(lengths=lengths_st, **limits_st)
def test_unshuffled_batches_follow_the_stable_length_order(lengths, budget, max_items, max_pairs):
    batches = token_budget_batches(lengths, budget, max_items=max_items, max_pairs=max_pairs)
    assert [i for b in batches for i in b] == sorted(range(len(lengths)), key=lengths.__getitem__)


@settings(max_examples=200, deadline=None)
@given(lengths=lengths_st, **limits_st)
def test_greedy_no_batch_could_take_the_next_item(lengths, budget, max_items, max_pairs):
    batches = token_budget_batches(lengths, budget, max_items=max_items, max_pairs=max_pairs)
    for b, nxt in zip(batches, batches[1:]):
        assert not _cost_ok(lengths, b + nxt[:1], budget, max_items, max_pairs)


def test_an_over_long_item_gets_a_batch_of_its_own():
    assert token_budget_batches([3, 50, 2, 4, 60], 10) == [[2, 0], [3], [1], [4]]
    assert token_budget_batches([2, 2, 9], 4, max_pairs=8) == [[0, 1], [2]]


def test_shuffle_is_deterministic_in_the_seed():
    lengths = [(i * 37) % 23 + 1 for i in range(200)]
    a = token_budget_batches(lengths, 40, shuffle=True, seed=1)
    assert a == token_budget_batches(lengths, 40, shuffle=True, seed=1)
    assert a != token_budget_batches(lengths, 40, shuffle=True, seed=2)


def test_bad_limits_are_errors():
    with pytest.raises(ValueError, match="batch_tokens"):
        token_budget_batches([1, 2], 0)
    with pytest.raises(ValueError, match="max_items"):
        token_budget_batches([1, 2], 10, max_items=0)
