"""Lemma edit rules: every (form, lemma) pair round-trips; unseen words get lemmas from seen rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from g2gt.data import EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu
from g2gt.ud.parse.lemma_rules import apply_rule, rule_applies, rule_for


def test_every_pair_of_the_sample_round_trips():
    pairs = {(f, lem) for s in read_conllu(EWT_SAMPLE_TRAIN) for f, lem in zip(s.forms, s.lemmas)}
    assert len(pairs) > 1000
    for form, lemma in pairs:
        rule = rule_for(form, lemma)
        assert rule_applies(form, rule)
        assert apply_rule(form, rule) == lemma, (form, lemma, rule)


@pytest.mark.parametrize("form, lemma, rule", [("Running", "run", "l|4|"), ("mice", "mouse", "l|3|ouse"),
                                               ("was", "be", "l|3|be"), ("Paris", "Paris", "k|0|"),
                                               ("NASA", "NASA", "k|0|")])
def test_documented_rules(form, lemma, rule):
    assert rule_for(form, lemma) == rule


def test_a_rule_generalises_to_unseen_words():
    assert apply_rule("Walking", rule_for("talking", "talk")) == "walk"
    assert apply_rule("Berlin", rule_for("Paris", "Paris")) == "Berlin"


def test_rules_that_do_not_fit_the_form_do_not_apply():
    assert not rule_applies("ab", "l|3|")  # strips more than the form has
    assert not rule_applies("ab", "l|2|")  # would leave an empty lemma
    assert rule_applies("ab", "l|2|x") and apply_rule("ab", "l|2|x") == "x"
    assert apply_rule("Ab", "l|3|") == "ab"  # not applicable: the lowercased form
    assert not rule_applies("ab", "garbage")


@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_round_trip_on_any_text(form, lemma):
    rule = rule_for(form, lemma)
    if lemma != "_":
        assert apply_rule(form, rule) == lemma


@pytest.mark.parametrize("form, lemma, rule", [("İzini", "iz", "l|3|"), ("izini", "iz", "l|3|"),
                                               ("İstanbul'da", "İstanbul", "k|3|"), ("İÇERİ", "içeri", "l|0|")])
def test_dotted_capital_i_lowercases_to_plain_i(form, lemma, rule):
    """Turkish İ: the rule is the one of the lowercase word (Python's lower() would give i + combining dot)."""
    assert rule_for(form, lemma) == rule and apply_rule(form, rule) == lemma
