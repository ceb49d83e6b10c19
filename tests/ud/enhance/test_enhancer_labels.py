"""Case-marked label templates: round trip on the sample's DEPS, the marker rules, unseen markers."""

from __future__ import annotations

import pytest

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.enhance.data import sentence_edges, template_coverage
from g2gt.ud.enhance.labels import (
    PLACEHOLDER, TreeView, fill_template, is_template, sentence_markers, template_label, valid_marker,
)
from g2gt.ud.io.conllu import parse_conllu_string, read_conllu


@pytest.fixture(scope="module")
def samples():
    return read_conllu(EWT_SAMPLE_TRAIN) + read_conllu(EWT_SAMPLE_DEV)


def _sent(rows: list[tuple]) -> object:
    """A sentence from (form, lemma, upos, head, deprel[, feats]) rows; DEPS = basic edge."""
    lines = []
    for i, r in enumerate(rows, 1):
        form, lemma, upos, head, rel = r[:5]
        feats = r[5] if len(r) > 5 else "_"
        lines.append(f"{i}\t{form}\t{lemma}\t{upos}\t_\t{feats}\t{head}\t{rel}\t{head}:{rel}\t_")
    return parse_conllu_string("\n".join(lines) + "\n\n")[0]


def test_template_then_fill_gives_back_every_label_of_the_samples(samples):
    n = 0
    for s in samples:
        markers = sentence_markers(TreeView.of(s))
        for d, _, label in sentence_edges(s):
            assert fill_template(template_label(label, d, markers), d, markers) == label
            n += 1
    assert n > 20000


def test_most_case_marked_labels_become_templates(samples):
    cov = template_coverage(samples)
    assert cov["templated_pct"] > 95.0
    assert cov["classes_after"] < 0.7 * cov["classes_before"]


def test_template_fills_an_unseen_preposition():
    # "sat underneath the table": obl:<case> learnt on "in" is filled with "underneath"
    s = _sent([("She", "she", "PRON", 2, "nsubj"), ("sat", "sit", "VERB", 0, "root"),
               ("underneath", "underneath", "ADP", 5, "case"), ("the", "the", "DET", 5, "det"),
               ("table", "table", "NOUN", 2, "obl")])
    markers = sentence_markers(TreeView.of(s))
    assert fill_template("obl:" + PLACEHOLDER, 5, markers) == "obl:underneath"
    assert template_label("obl:underneath", 5, markers) == "obl:" + PLACEHOLDER


def test_fixed_multiword_marker_and_conjunct_fallbacks():
    # "left because of rain and snow , cats , dogs and mice": because_of; snow takes rain's case;
    # "dogs" (no cc of its own) takes the cc of the next conjunct "mice"
    s = _sent([("left", "leave", "VERB", 0, "root"), ("because", "because", "ADP", 4, "case"),
               ("of", "of", "ADP", 2, "fixed"), ("rain", "rain", "NOUN", 1, "obl"), ("and", "and", "CCONJ", 6, "cc"),
               ("snow", "snow", "NOUN", 4, "conj"), ("cats", "cat", "NOUN", 1, "obj"), ("dogs", "dog", "NOUN", 7, "conj"),
               ("&", "and", "CCONJ", 10, "cc"), ("mice", "mouse", "NOUN", 7, "conj")])
    case, cc = sentence_markers(TreeView.of(s))
    assert case[4 - 1] == "because_of" and case[6 - 1] == "because_of"
    assert cc[10 - 1] == "and"  # the lemma of '&'
    assert cc[8 - 1] == "and"
    assert fill_template("conj:" + PLACEHOLDER, 8, (case, cc)) == "conj:and"


def test_wh_adverb_marks_an_adverbial_clause_only_with_prontype():
    rows = [("call", "call", "VERB", 0, "root"), ("when", "when", "ADV", 4, "advmod", "PronType=Int"),
            ("you", "you", "PRON", 4, "nsubj"), ("arrive", "arrive", "VERB", 1, "advcl")]
    case, _ = sentence_markers(TreeView.of(_sent(rows)))
    assert case[4 - 1] == "when"
    rows[1] = ("then", "then", "ADV", 4, "advmod")
    case, _ = sentence_markers(TreeView.of(_sent(rows)))
    assert case[4 - 1] is None


def test_invalid_marker_falls_back_to_the_bare_relation():
    s = _sent([("Smith", "Smith", "PROPN", 0, "root"), ("vs.", "vs.", "ADP", 3, "case"),
               ("Jones", "Jones", "PROPN", 1, "nmod")])
    markers = sentence_markers(TreeView.of(s))
    assert not valid_marker("vs.") and valid_marker("according_to") and not valid_marker("2")
    assert fill_template("nmod:" + PLACEHOLDER, 3, markers) == "nmod"
    assert template_label("nmod:versus", 3, markers) == "nmod:versus"  # stays literal
    assert not is_template("nmod:versus") and is_template("nmod:" + PLACEHOLDER)
