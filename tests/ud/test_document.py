"""The result object: Document offsets (text[start:end] is every token and word), JSON round trip, CoNLL-U bytes,
pre-tokenized text, the stanza / networkx / PyG bridges."""

from __future__ import annotations

import json
import pickle
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.document import Document, token_spans
from g2gt.ud.io import parse_conllu_string, read_conllu, sentence_from_tokens, sentence_from_words
from g2gt.ud.limits import drop_control_characters
from g2gt.core.registry import DEFAULT_MODEL, available_models
from g2gt.ud.pipeline import Pipeline, RuleTokenizer

PIECES = list(" \n\r\t  \u200b\u00a0\u0301\x00\u2028👍🏽中文שלום.,'\"!?") + [
    "\r\n", "\n\n", "   ", "👩\u200d💻", "don't", "I'm", "can't", "Müller's", "café", "naïve", "Mr.", "U.S.", "e-mail",
    "#", "_", "word", "Cat", "2019", "(", ")", "—"]
TEXTS = ["He sat. Then he left.", "  I don't know.\n\nHe left  early.  ", "Müller's café — naïve?  Yes!\r\n",
         "\n\n\tWe can't go.\u00a0They won't.\n", "中文 and שלום, 👩\u200d💻 e-mail: a@b.com."]
needs_model = pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="the shipped model is not here")


def check_offsets(doc: Document, text: str) -> None:
    """Every token and word is its slice of the text; a multiword token's words share its span. ``doc.text`` is
    the text less its control characters (which UD does not allow in a word)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = drop_control_characters(text)
    assert doc.text == text
    for t in doc.tokens:
        assert t.start_char is not None and text[t.start_char:t.end_char] == t.text
    tokens = {w: t for t in doc.tokens for w in t.words}
    for w in doc.words:
        t = tokens[w]
        assert t == w.token and w in t.words
        assert (w.start_char, w.end_char) == (t.start_char, t.end_char)
        if len(t.words) == 1:
            assert w.text == t.text
    starts = [t.start_char for t in doc.tokens]
    assert starts == sorted(starts)  # in reading order
    for d in doc.to_dict()["sentences"]:
        for t in d["tokens"]:
            assert text[t["start_char"]:t["end_char"]] == t["text"]


@pytest.fixture(scope="module")
def segmenter_only():
    """The shipped learned tokenizer alone (no parser): raw text -> Document quickly."""
    if DEFAULT_MODEL not in available_models():
        pytest.skip("the shipped model is not here")
    from g2gt.ud.tokenize import Segmenter

    return Pipeline(tokenize=Segmenter.load(DEFAULT_MODEL, "cpu"))


@pytest.fixture(scope="module")
def nlp():
    if DEFAULT_MODEL not in available_models():
        pytest.skip("the shipped model is not here")
    import g2gt

    return g2gt.load(device="cpu")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PIECES), max_size=25).map("".join))
def test_learned_tokenizer_offsets_slice_the_text(segmenter_only, text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # control characters are dropped with a warning
        check_offsets(segmenter_only(text), text)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25).map("".join))
def test_rule_tokenizer_offsets_slice_the_text(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_offsets(Pipeline(tokenize=RuleTokenizer("rule"))(text), text)


@needs_model
@pytest.mark.parametrize("text", TEXTS)
def test_parsed_documents_have_offsets_for_every_token_and_word(nlp, text):
    doc = nlp(text)
    check_offsets(doc, text)
    assert isinstance(doc, list) and len(doc) == len(doc.sentences) and doc[0] is doc.sentences[0]
    for s, d in zip(doc, doc.to_dict()["sentences"]):
        assert d["text"] == s.text and d["id"] == s.sent_id and len(d["words"]) == len(s)
        assert text[d["start_char"]:d["end_char"]].split() == s.text.split()


@needs_model
def test_a_multiword_token_and_its_words_share_one_span(nlp):
    text = "  I don't know."
    d = nlp(text).to_dict()["sentences"][0]
    mwt = [t for t in d["tokens"] if len(t["words"]) > 1]
    assert [(t["id"], t["text"], t["start_char"], t["end_char"]) for t in mwt] == [("2-3", "don't", 4, 9)]
    assert [(w["text"], w["start_char"]) for w in d["words"][1:3]] == [("do", 4), ("n't", 4)]


@needs_model
@pytest.mark.parametrize("enhanced", [False, True])
def test_json_round_trip_gives_the_same_json_and_conllu(nlp, enhanced):
    doc = nlp(TEXTS[1] + TEXTS[2], enhanced=enhanced)
    again = Document.from_json(doc.to_json())
    assert again.conllu() == doc.conllu()
    assert again.to_dict() == doc.to_dict() == json.loads(doc.to_json())
    assert again.text == doc.text and again.model == doc.model == "en_combined"
    assert ("enhanced" in doc.to_dict()["sentences"][0]) == enhanced


def test_gold_conllu_round_trips_through_json_byte_for_byte():
    """Comments, multiword tokens, empty nodes and every column of a treebank sample survive to_dict/from_dict."""
    sents = read_conllu(EWT_SAMPLE_DEV)
    doc = Document(sents)
    assert doc.conllu() == EWT_SAMPLE_DEV.read_text(encoding="utf-8")
    again = Document.from_json(doc.to_json())
    assert again.conllu() == doc.conllu() and again.to_dict() == doc.to_dict()
    d = doc.to_dict()
    assert any("empty_nodes" in s for s in d["sentences"]) and any("enhanced" in s for s in d["sentences"])
    check_offsets(doc, doc.text)


def test_pretokenized_text_is_the_tokens_joined_by_spaces():
    a = sentence_from_tokens([("I", ["I"], True), ("don't", ["do", "n't"], True), ("know", ["know"], False),
                              (".", ["."], True)], sent_id="1")
    b = sentence_from_words(["Yes", "!"], space_after=[False, True])
    doc = Document([a, b])
    assert doc.text == "I don't know. Yes!"
    check_offsets(doc, doc.text)
    assert [t.start_char for t in doc.tokens] == [0, 2, 8, 12, 14, 17]


def test_token_spans_leave_a_form_that_is_not_there_unplaced():
    text = "  I don't\nknow.  Yes!"
    b = sentence_from_words(["Yes", "!"], space_after=[False, True])
    assert token_spans([b], text) == [[(17, 20), (20, 21)]]
    assert token_spans([sentence_from_words(["zzz"])], text) == [[None]]


def test_from_dict_says_what_it_expects():
    with pytest.raises(ValueError, match="sentences"):
        Document.from_dict({"words": []})


def test_documents_pickle_with_their_text_and_model():
    doc = Document(parse_conllu_string("1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n\n"), "Hi", "m")
    again = pickle.loads(pickle.dumps(doc))
    assert isinstance(again, Document) and again.text == "Hi" and again.model == "m"
    assert again.conllu() == doc.conllu()


@needs_model
def test_bridges_to_stanza_networkx_and_pyg(nlp):
    text = "  I don't know. He left."
    doc = nlp(text)
    st_doc = doc.to_stanza()
    assert st_doc.text == text
    assert [(t.text, t.start_char, t.end_char) for t in st_doc.sentences[0].tokens][:2] == [("I", 2, 3),
                                                                                          ("don't", 4, 9)]
    assert [w.text for w in st_doc.sentences[0].words] == doc[0].forms
    graphs = doc.to_networkx()
    assert len(graphs) == 2 and graphs[0].number_of_nodes() == len(doc[0])
    pytest.importorskip("torch_geometric")
    data = doc.to_pyg()
    assert len(data) == 2 and data[1].num_nodes == len(doc[1])
