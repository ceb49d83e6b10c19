"""Spans -> CoNLL-U sentences -> text: whitespace in MISC, exact round trips, hard segmentation rules.

No model here: the per-character decisions are given (or random), so these properties hold whatever a
trained model predicts.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g2gt.ud.io import parse_conllu_string, to_conllu_string
from g2gt.ud.tokenize.chars import CharVocab
from g2gt.ud.tokenize.mwt import MWTLexicon
from g2gt.ud.tokenize.output import build_sentences, escape_spaces, text_from_sentences, unescape_spaces
from g2gt.ud.tokenize.spans import decode_spans

VOCAB = CharVocab(list("abcdefghijklmnopqrstuvwxyz.,'"))
LEX = MWTLexicon({"don't": ["do", "n't"]})
SPECIAL = list(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u2029\u3000\u200b\u200c\u200d\ufeff\u2060\u0301\u20e3"
               "\U0001f3fd\x00\x07\x1b|\\=#_.!?'\"-") + ["\r\n", "👩\u200d💻", "中文", "שלום", "é"]
TEXTS = st.lists(st.one_of(st.sampled_from(SPECIAL), st.characters(exclude_categories=("Cs",)),
                           st.sampled_from(["the", "cat", "sat", "don't", "Mr", "A"])), max_size=60).map("".join)


def segment_with(text: str, ends, sents, mwts, max_tokens: int = 0):
    """Sentences for ``text`` with the given per-character decisions."""
    _, _, is_space, is_glue = VOCAB.lookup(text)
    spans = decode_spans(text, np.asarray(ends, bool), np.asarray(sents, bool), np.asarray(mwts, bool),
                         is_space, is_glue, None, max_tokens)
    return spans, build_sentences(text, spans, LEX)


def whitespace_tokens(text: str):
    n = len(text)
    return segment_with(text, [False] * n, [False] * n, [False] * n)


def misc(sentences):
    return [(t["form"], t["misc"]) for s in sentences for t in s.rows]


@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40) | TEXTS)
def test_escape_round_trip(s):
    e = escape_spaces(s)
    assert unescape_spaces(e) == s
    assert e.isascii() and not any(c in e for c in " \t\n\r|")


def test_udpipe_escapes():
    assert escape_spaces(" \t\r\n|\\") == "\\s\\t\\r\\n\\p\\\\"
    assert escape_spaces("\u00a0\u200b\U0001f3fd") == "\\u00A0\\u200B\\U0001F3FD"
    assert unescape_spaces("\\s\\x") == " \\x"  # an unknown escape is kept as written


def test_misc_conventions():
    _, sents = whitespace_tokens("  a b  c\td\ne\n")
    assert misc(sents) == [("a", {"SpacesBefore": "\\s\\s"}), ("b", {"SpacesAfter": "\\s\\s"}),
                           ("c", {"SpacesAfter": "\\t"}), ("d", {"SpacesAfter": "\\n"}), ("e", {"SpacesAfter": "\\n"})]
    _, sents = whitespace_tokens("a b")
    assert misc(sents) == [("a", None), ("b", None)]  # nothing after the very last token: no SpaceAfter=No
    _, sents = whitespace_tokens("a b ")
    assert misc(sents)[-1] == ("b", {"SpacesAfter": "\\s"})


def test_space_after_no_and_mwt_line():
    text = "I don't."
    ends = [False] * len(text)
    for i in (0, 6, 7):
        ends[i] = True
    mwts = [i == 6 for i in range(len(text))]
    _, sents = segment_with(text, ends, [False] * len(text), mwts)
    (s,) = sents
    assert s.forms == ["I", "do", "n't", "."]
    lines = to_conllu_string(sents).splitlines()
    assert "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No" in lines
    assert "2\tdo\t_\t_\t_\t_\t_\t_\t_\t_" in lines
    assert text_from_sentences(sents) == text


def test_sentence_text_ids_and_paragraphs():
    text = "a b\nc\n\nd e"
    n = len(text)
    sent = [False] * n
    sent[2] = True  # after "b"
    _, sents = segment_with(text, [False] * n, sent, [False] * n)
    assert [s.metadata["text"] for s in sents] == ["a b", "c", "d e"]  # a blank line always ends a sentence
    assert [s.metadata["sent_id"] for s in sents] == ["1", "2", "3"]
    assert ["newdoc" in s.metadata for s in sents] == [True, False, False]
    assert ["newpar" in s.metadata for s in sents] == [True, False, True]
    _, sents = whitespace_tokens("a\nb c")
    assert sents[0].metadata["text"] == "a b c"  # a comment is one line


def test_zero_width_and_combining_characters_are_never_words():
    text = "x \u200b y\u200d z \ufeffw e\u0301 👩\u200d💻"
    n = len(text)
    _, sents = segment_with(text, [True] * n, [False] * n, [False] * n)  # the model wants to split everywhere
    forms = sents[0].forms
    assert "\u200b" not in forms and "\ufeff" not in forms and "\u0301" not in forms
    assert "e\u0301" in forms and "👩\u200d💻" in forms
    assert text_from_sentences(sents) == text


def test_long_sentences_are_cut():
    text = " ".join(["w"] * 25)
    spans, _ = whitespace_tokens(text)
    assert spans.sentences == [(0, 25)]
    _, _, is_space, is_glue = VOCAB.lookup(text)
    n = len(text)
    score = np.zeros(n)
    score[2 * 7] = 1.0  # the 8th token ends where the model is most confident
    z = np.zeros(n, bool)
    spans = decode_spans(text, z, z, z, is_space, is_glue, score, max_sentence_tokens=10)
    assert spans.sentences[0] == (0, 8)
    assert all(b - a <= 10 for a, b in spans.sentences) and spans.sentences[-1][1] == 25


@pytest.mark.parametrize("text", ["", " ", "\n\t ", "\u200b", " \u200d \ufeff "])
def test_text_without_tokens_gives_no_sentences(text):
    _, sents = whitespace_tokens(text)
    assert sents == []
    assert text_from_sentences([]) == ""


@settings(max_examples=150, deadline=None)
@given(TEXTS, st.randoms(use_true_random=False))
def test_round_trip_with_any_decisions(text, rnd):
    n = len(text)
    flips = [[rnd.random() < 0.4 for _ in range(n)] for _ in range(3)]
    spans, sents = segment_with(text, *flips, max_tokens=rnd.choice([0, 3]))
    forms = [t["form"] for s in sents for t in s.rows]
    if not sents:
        rest = "".join(c for c in text if not c.isspace())
        assert all(VOCAB.lookup(c)[3][0] for c in rest)  # only zero-width / combining characters
        return
    assert text_from_sentences(sents) == text
    for f in forms:
        assert f and not any(c.isspace() for c in f)
    for s in sents:
        assert not any(c in s.metadata["text"] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
    written = to_conllu_string(sents)
    again = parse_conllu_string(written)
    assert text_from_sentences(again) == text
    assert [s.forms for s in again] == [s.forms for s in sents]
