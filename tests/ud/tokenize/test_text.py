"""Tests for g2gt.ud.tokenize.text: rule-based sentence splitting / EWT-style tokenization, stanza wrapper."""

from __future__ import annotations

import re
import warnings

import pytest

from g2gt.ud.io import parse_conllu_string, to_conllu_string
from g2gt.ud.limits import drop_control_characters
from g2gt.ud.tokenize.text import (
    StanzaUnavailable,
    detokenize,
    lines_to_sentences,
    load_stanza_tokenizer,
    split_sentences,
    stanza_tokenize,
    text_to_sentences,
    tokenize,
)

TEXT = ('Mr. Smith doesn\'t like the U.S. economy. He said: "I can\'t believe it!" Really? '
        "Yes... e.g. this costs $5.50, or 50%. Mail me@x.org today. Bush's 15-year-old kids cannot wait.\n\n"
        "New paragraph without a full stop")


def _words(sent) -> list[str]:
    return [w for t in sent for w in t.words]


def test_sentence_split_keeps_abbreviations() -> None:
    sents = split_sentences(TEXT)
    assert sents[0] == "Mr. Smith doesn't like the U.S. economy."
    assert sents[1] == 'He said: "I can\'t believe it!"'
    assert sents[2] == "Really?"
    assert sents[3].startswith("Yes... e.g. this")  # '...' + lower case and 'e.g.' do not split
    assert sents[-1] == "New paragraph without a full stop"  # blank line ends a sentence
    assert len(sents) == 7


def test_tokens_and_contractions() -> None:
    sents = tokenize(TEXT)
    assert _words(sents[0]) == ["Mr.", "Smith", "does", "n't", "like", "the", "U.S.", "economy", "."]
    assert _words(sents[1]) == ["He", "said", ":", '"', "I", "ca", "n't", "believe", "it", "!", '"']
    assert _words(sents[3])[-7:] == ["$", "5.50", ",", "or", "50", "%", "."]
    assert "me@x.org" in _words(sents[4])
    assert _words(sents[5]) == ["Bush", "'s", "15", "-", "year", "-", "old", "kids", "can", "not", "wait", "."]
    # contraction = one surface token with two words
    tok = [t for t in sents[0] if t.text == "doesn't"][0]
    assert tok.words == ["does", "n't"]
    for word, split in [("I'm", ["I", "'m"]), ("they're", ["they", "'re"]), ("won't", ["wo", "n't"]),
                        ("we'll", ["we", "'ll"]), ("gonna", ["gon", "na"]), ("She’s", ["She", "’s"])]:
        (t,), = tokenize(word)
        assert t.words == split, word


def test_text_reconstruction_and_offsets() -> None:
    for sent, raw in zip(tokenize(TEXT), split_sentences(TEXT)):
        assert detokenize(sent) == re.sub(r"\s+", " ", raw)
        for t in sent:
            assert TEXT[t.start:t.end] == t.text
            assert "".join(t.words) == t.text  # words concatenate to the surface form


def test_text_to_sentences_conllu() -> None:
    sents = text_to_sentences(TEXT, sent_id_prefix="doc-")
    assert sents[0].sent_id == "doc-1" and sents[0].text == "Mr. Smith doesn't like the U.S. economy."
    conllu = to_conllu_string(sents)
    assert "3-4\tdoesn't\t" in conllu  # multiword token line
    back = parse_conllu_string(conllu)
    assert [s.forms for s in back] == [s.forms for s in sents]
    assert back[0].space_after[-2] is False  # "economy" is followed by "."
    with pytest.raises(ValueError, match="unknown tokenizer"):
        text_to_sentences("Hi.", tokenizer="spacy")


def test_lines_to_sentences_one_per_line_never_split() -> None:
    lines = ["A man sleeps. A dog barks.", "Two kids don't play !"]
    sents = lines_to_sentences(lines, "src.en")
    assert [s.sent_id for s in sents] == ["1", "2"]
    assert sents[0].forms == ["A", "man", "sleeps", ".", "A", "dog", "barks", "."]  # not split in two
    assert "n't" in sents[1].forms and sents[1].text == "Two kids don't play !"
    with pytest.raises(ValueError, match=r"src\.en:2: empty line"):
        lines_to_sentences(["Fine.", "   ", "Also fine."], "src.en")


def test_stanza_tokenizer_if_installed() -> None:
    nlp = load_stanza_tokenizer()
    if nlp is None:
        with pytest.raises(StanzaUnavailable, match="not installed"):
            load_stanza_tokenizer(required=True)
        pytest.skip("stanza's English tokenize model is not installed locally")
    sents = stanza_tokenize("Mr. Smith doesn't like it. He left.", nlp)
    assert len(sents) == 2 and "n't" in _words(sents[0])
    assert text_to_sentences("I left. She stayed.", tokenizer="stanza", pipeline=nlp)[1].forms[0] == "She"


# --------------------------------------------------------------------------- reading text
def test_read_text_and_iter_lines(tmp_path, monkeypatch) -> None:
    import gzip
    import io

    from g2gt.core.files import InputError, iter_lines, read_text

    p = tmp_path / "a.txt"
    p.write_bytes(b"\xef\xbb\xbfOne.\r\nTwo.\n\nThree")
    assert read_text(p) == "One.\r\nTwo.\n\nThree"  # BOM dropped, line ends kept
    assert list(iter_lines(p)) == ["One.", "Two.", "", "Three"]
    gz = tmp_path / "a.txt.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    assert read_text(gz) == read_text(p) and list(iter_lines(gz)) == list(iter_lines(p))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x\ny\n\xff\n"), encoding="utf-8"))
    with pytest.raises(InputError, match=r"^<stdin>:3: not valid UTF-8 \(byte 0xff at byte column 1\)"):
        iter_lines("-")
    with pytest.raises(InputError, match=r"is a directory, expected a text file"):
        read_text(tmp_path)
    bad = tmp_path / "b.txt.gz"
    bad.write_bytes(b"plain")
    with pytest.raises(InputError, match=r"b\.txt\.gz: is not gzip-compressed"):
        list(iter_lines(bad))


def test_iter_text_sentences_matches_text_to_sentences(tmp_path) -> None:
    from g2gt.ud.tokenize.text import iter_text_sentences

    p = tmp_path / "doc.txt"
    p.write_text(TEXT + "\n\n\nLast one. Really.\n", encoding="utf-8")
    a = text_to_sentences(p.read_text(encoding="utf-8"))
    b = list(iter_text_sentences(p))
    assert to_conllu_string(a) == to_conllu_string(b) and len(a) == 9


# --------------------------------------------------------------------------- odd text
def _invisible(ch: str) -> bool:
    import unicodedata

    return unicodedata.category(ch) in ("Cf", "Cc") and not ch.isspace()


def _surface(sent) -> str:
    """The sentence text rebuilt from FORM and SpaceAfter (multiword tokens by their surface form)."""
    out, covered = [], 0
    for t in sent.rows:
        tid = t["id"]
        if isinstance(tid, tuple) and tid[1] == "-":
            covered = tid[2]
        elif isinstance(tid, tuple) or tid <= covered:
            continue
        misc = t["misc"] or {}
        out.append(t["form"] + ("" if misc.get("SpaceAfter") == "No" else " "))
    return "".join(out).rstrip(" ")


def test_sentence_ends_after_ordinary_words_that_look_like_abbreviations() -> None:
    assert split_sentences("He sat. Then he left.") == ["He sat.", "Then he left."]
    assert [s.forms for s in text_to_sentences("He sat. Then he left.")] == [["He", "sat", "."],
                                                                             ["Then", "he", "left", "."]]
    assert split_sentences("See No. 5 and p. 7. He said no. Then Mr. Li left.") == [
        "See No. 5 and p. 7.", "He said no.", "Then Mr. Li left."]


@pytest.mark.parametrize("text, forms", [
    ("Hi \u200b there\u200b!", ["Hi", "there", "!"]),  # ZWSP: a separator, never a word
    ("a\u200bb", ["a", "b"]),
    ("\u200d\u200c x \u200d", ["x"]),  # joiners alone are not words
    ("👨\u200d👩\u200d👧 ok 👍🏽 🇺🇸", ["👨\u200d👩\u200d👧", "ok", "👍🏽", "🇺🇸"]),
    ("café नमस्ते", ["café", "नमस्ते"]),  # combining marks stay in their word
    ("日本語です。", ["日本語です", "。"]),
    ("שלום, עולם. \u200fمرحبا!", ["שלום", ",", "עולם", ".", "مرحبا", "!"]),
    ("a\x00 \x07 b\x1b", ["a", "b"]),
])
def test_odd_unicode(text: str, forms: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sents = text_to_sentences(text)
        kept = drop_control_characters(text)  # control characters are dropped (UD allows none in FORM)
    assert [w for s in sents for w in s.forms] == forms
    back = parse_conllu_string(to_conllu_string(sents))
    assert "".join(s.text for s in back).replace(" ", "") == "".join(kept.split())  # every other character kept


def test_empty_and_invisible_only_text() -> None:
    assert text_to_sentences("") == [] and text_to_sentences(" \n\t ") == []
    assert text_to_sentences("\u200b\u200d") == []


@pytest.mark.parametrize("text", [
    "a" + ".," * 20000, "$" * 20000 + "5", "(" * 40000 + "a", "A. " * 20000, "5" + "%" * 20000,
    "a-" * 20000, "\u200b" * 40000, "👨\u200d" * 20000, "!?" * 20000 + "a", "a@" * 20000, "x" + " \n " * 40000 + "y",
])
def test_pathological_text_is_linear(text: str) -> None:
    import time

    t = time.process_time()
    sents = tokenize(text)
    assert time.process_time() - t < 3.0  # quadratic behaviour would take minutes
    for sent in sents:
        for tok in sent:
            assert text[tok.start:tok.end] == tok.text


def test_tokenizer_never_fails_on_any_unicode() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    alphabet = st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list(" .!?,'’\"()-$%@\n\u200b\u200c\u200d\u200e\u200f\ufeff\x00\x1c\u2028\u0301🇺👍🏽")),
    )

    @settings(max_examples=300, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.text(alphabet, max_size=80))
    def check(text: str) -> None:
        sents = tokenize(text)
        prev = 0
        for sent in sents:
            for t in sent:
                assert prev <= t.start < t.end and text[t.start:t.end] == t.text == "".join(t.words)
                assert all(t.words) and not all(_invisible(c) for c in t.text)
                assert not any(c.isspace() for c in t.text)
                prev = t.end
        covered = {i for sent in sents for t in sent for i in range(t.start, t.end)}
        assert all(i in covered for i, c in enumerate(text) if not c.isspace() and not _invisible(c) and c != "\u200b")
        out = parse_conllu_string(to_conllu_string(text_to_sentences(text)))
        visible = [c for c in text if not c.isspace() and not _invisible(c)]
        assert [c for s in out for c in s.text if not c.isspace() and not _invisible(c)] == visible
        for s in out:
            if not any(_invisible(c) for c in s.text):
                assert _surface(s) == s.text  # FORM + SpaceAfter rebuild # text exactly

    check()


def test_raw_text_round_trip_on_ewt_dev() -> None:
    from pathlib import Path
    import os

    from g2gt.ud.io import read_conllu

    path = Path(os.environ.get("G2GT_DATA", "/nonexistent")) / "ud-en-ewt" / "en_ewt-ud-dev.conllu"
    if not path.exists():
        pytest.skip(f"{path} not present")
    docs: list[list[str]] = []
    for s in read_conllu(path):
        if "newdoc id" in s.metadata or not docs:
            docs.append([])
        docs[-1].append(("\n\n" if "newpar id" in s.metadata else " ") + s.text)
    n = 0
    for doc in docs:
        text = "".join(doc).strip()
        out = parse_conllu_string(to_conllu_string(text_to_sentences(text)))
        assert " ".join(s.text for s in out) == " ".join(text.split())  # every character, in order
        for s in out:
            assert _surface(s) == s.text, s.text  # and FORM / SpaceAfter give # text back exactly
        n += len(out)
    assert n > 1500
