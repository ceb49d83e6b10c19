"""The input guards every entry point shares (g2gt.ud.limits): a sentence over the word limit is split into
pieces (or refused) with one line naming it, and control characters never reach FORM or LEMMA."""

from __future__ import annotations

import warnings

import pytest

from g2gt.ud.io import sentence_from_tokens
from g2gt.ud.io.conllu import parse_conllu_string
from g2gt.ud.limits import (DEFAULT_MAX_WORDS, SentenceTooLong, drop_control_characters, limit_sentence_words,
                            max_sentence_words)


def _mwt_sentence():
    return sentence_from_tokens([("I", ["I"], True), ("don't", ["do", "n't"], True), ("know", ["know"], False),
                                 (".", ["."], True)], sent_id="7")


def _caught(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_the_limit_defaults_to_1000_words_and_follows_the_environment(monkeypatch):
    monkeypatch.delenv("G2GT_MAX_SENTENCE_WORDS", raising=False)
    assert max_sentence_words() == DEFAULT_MAX_WORDS == 1000
    monkeypatch.setenv("G2GT_MAX_SENTENCE_WORDS", "0")
    assert max_sentence_words() == 0
    monkeypatch.setenv("G2GT_MAX_SENTENCE_WORDS", "many")
    with pytest.raises(ValueError, match="G2GT_MAX_SENTENCE_WORDS must be a whole number"):
        max_sentence_words()


def test_a_long_sentence_is_split_between_surface_tokens_with_one_warning_line():
    s = _mwt_sentence()
    short = sentence_from_tokens([("Yes", ["Yes"], True)], sent_id="8")
    out, notes = _caught(limit_sentence_words, [s, short], 3)
    assert [p.forms for p in out] == [["I", "do", "n't"], ["know", "."], ["Yes"]]
    assert [p.sent_id for p in out] == ["7.1", "7.2", "8"]
    assert out[2] is short  # sentences within the limit are passed through as they are
    assert len(notes) == 1 and "\n" not in notes[0]
    assert "sentence 7" in notes[0] and "5 words" in notes[0] and "limit of 3" in notes[0]
    assert "7.1 ... 7.2" in notes[0]


def test_pieces_keep_the_input_columns_but_not_the_tree():
    text = ("# sent_id = a\n"
            "1\tHe\the\tPRON\tPRP\tCase=Nom\t2\tnsubj\t_\t_\n"
            "2\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\tSpaceAfter=No\n"
            "3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\tGloss=stop\n\n")
    s = parse_conllu_string(text, name="x.conllu")[0]
    out, _ = _caught(limit_sentence_words, [s], 2)
    first, second = out
    assert first.lemmas == ["he", "sit"] and first.upos == ["PRON", "VERB"] and second.upos == ["PUNCT"]
    assert first.words[0]["feats"] == {"Case": "Nom"} and second.words[0]["misc"] == {"Gloss": "stop"}
    assert first.words[1]["misc"] == {"SpaceAfter": "No"}
    assert first.heads == [None, None] and second.heads == [None]


def test_refusing_names_the_file_line_and_length():
    text = "# sent_id = a\n" + "".join(f"{i}\tw{i}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i in range(1, 6)) + "\n"
    s = parse_conllu_string("\n\n" + text, name="in.conllu")[0]
    with pytest.raises(SentenceTooLong, match=r"in.conllu:3: sentence a has 5 words, over the limit of 4") as e:
        limit_sentence_words([s], 4, on_long="error")
    assert "\n" not in str(e.value) and isinstance(e.value, ValueError)
    assert limit_sentence_words([s], 0, on_long="error") == [s]  # 0: no limit


def test_a_multiword_token_longer_than_the_limit_is_refused():
    with pytest.raises(SentenceTooLong, match="multiword token"):
        limit_sentence_words([_mwt_sentence()], 1)


def test_control_characters_are_dropped_with_a_count():
    clean, notes = _caught(drop_control_characters, "He\x00 sat\x07.\x0bThen\x7f he\x9b left.\tOK\r\n")
    assert clean == "He sat. Then he left.\tOK\r\n"
    assert len(notes) == 1 and "removed 5 control character(s)" in notes[0] and "U+0000 x1" in notes[0]
    same, notes = _caught(drop_control_characters, "no controls here\n")
    assert same == "no controls here\n" and notes == []
