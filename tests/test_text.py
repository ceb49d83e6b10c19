"""Tests for g2gt.io.text: rule-based sentence splitting / EWT-style tokenization, stanza wrapper."""

from __future__ import annotations

import re

import pytest

from g2gt.io import parse_conllu_string, to_conllu_string
from g2gt.io.text import (
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
