"""MUC, B3, CEAF-e and CoNLL F1 (hand-computed values of the textbook examples)."""

import pytest

from g2gt.ud.coref.io import Mention
from g2gt.ud.coref.metrics import assignment, coref_scores, mention_scores


def ents(*clusters):
    """Entities of one-word mentions: ``ents([0, 1], [2, 3])``."""
    return [Mention(str(e), [w], "person") for e, c in enumerate(clusters, 1) for w in c]


def test_identical_documents_score_100():
    doc = ents([0, 3, 5], [1, 4])
    s = coref_scores([doc], [doc])
    assert s["conll"] == pytest.approx(100.0)
    assert s["muc_f1"] == s["bcub_f1"] == s["ceafe_f1"] == pytest.approx(100.0)


def test_cai_strube_example():
    # key {a b c}, response {a b d} {i j}: MUC R 1/2 P 1/3; B3 R 4/9 P 4/15 (without singletons none removed)
    key = ents([0, 1, 2])
    sys = ents([0, 1, 3], [8, 9])
    s = coref_scores([key], [sys])
    assert s["muc_r"] == pytest.approx(50.0) and s["muc_p"] == pytest.approx(100 / 3)
    assert s["bcub_r"] == pytest.approx(400 / 9) and s["bcub_p"] == pytest.approx(400 / 15)
    # CEAF-e: phi4({abc}, {abd}) = 2*2/6; recall / 1 key entity, precision / 2 response entities
    assert s["ceafe_r"] == pytest.approx(200 / 3) and s["ceafe_p"] == pytest.approx(100 / 3)


def test_singletons_are_dropped_unless_asked():
    key = ents([0, 1], [5])
    sys = ents([0, 1], [6])
    assert coref_scores([key], [sys])["conll"] == pytest.approx(100.0)
    assert coref_scores([key], [sys], singletons=True)["bcub_r"] < 100.0


def test_head_match_accepts_a_different_extent_with_the_same_first_word():
    key = [Mention("1", [0, 1, 2]), Mention("1", [5])]
    sys = [Mention("9", [0, 1]), Mention("9", [5])]
    assert coref_scores([key], [sys], "head")["conll"] == pytest.approx(100.0)
    assert coref_scores([key], [sys], "exact")["conll"] < 100.0
    assert coref_scores([key], [sys], "partial")["conll"] == pytest.approx(100.0)  # inside the key, has its head
    wider = [Mention("9", [0, 1, 2, 3]), Mention("9", [5])]
    assert coref_scores([key], [wider], "partial")["conll"] < 100.0


def test_mention_scores_and_type_accuracy():
    key = [Mention("1", [0], "person"), Mention("1", [3], "person"), Mention("2", [5], "place")]
    sys = [Mention("1", [0], "person"), Mention("2", [5], "object"), Mention("3", [7], "time")]
    m = mention_scores([key], [sys])
    assert m["mention_p"] == pytest.approx(200 / 3) and m["mention_r"] == pytest.approx(200 / 3)
    assert m["type_acc"] == pytest.approx(50.0)


def test_assignment_is_optimal():
    w = {(0, 0): 1.0, (0, 1): 0.9, (1, 0): 0.8}
    assert sorted(assignment(w)) == [(0, 1), (1, 0)]
    assert assignment({}) == []


def test_documents_must_align():
    with pytest.raises(ValueError, match="documents"):
        coref_scores([[]], [[], []])
    with pytest.raises(ValueError, match="match"):
        coref_scores([[]], [[]], "fuzzy")


def test_mentions_move_onto_gold_words_by_characters():
    from g2gt.ud.coref.align import project_mentions

    gold = ["Mary", "'s", "book", "is", "n't", "here", "."]
    pred = ["Mary's", "book", "isn't", "here."]
    got = project_mentions([Mention("1", [0, 1]), Mention("2", [3])], pred, gold)
    assert [m.words for m in got] == [[0, 1, 2], [5, 6]]
    changed = project_mentions([Mention("1", [1])], ["``", "book", "''"], ['"', "book", '"'])
    assert changed[0].words == [1]
