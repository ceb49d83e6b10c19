"""g2gt inside spaCy: Document.to_spacy and the Language whose tokenizer runs a g2gt pipeline (real spaCy)."""

from __future__ import annotations

import pytest

from g2gt.ud.document import Document
from g2gt.ud.io import parse_conllu_string, read_conllu
from g2gt.core.registry import DEFAULT_MODEL, available_models
from fixture_paths import FIXTURES
from test_document_objects import COREF

spacy = pytest.importorskip("spacy")
needs_model = pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="the shipped model is not here")


@pytest.fixture(scope="module")
def nlp():
    if DEFAULT_MODEL not in available_models():
        pytest.skip("the shipped model is not here")
    import g2gt

    return g2gt.load(device="cpu", threads=1, exclude=("enhance",))


def test_words_become_tokens_with_the_text_kept():
    sents = read_conllu(FIXTURES / "mwt_empty.conllu")
    doc = Document(sents, "  I don't know. Mary won and John too\n")
    sd = doc.to_spacy()
    assert sd.text == doc.text
    words = [t for t in sd if t.pos_ != "SPACE"]
    assert [t.text for t in words] == [w.text for w in doc.words]
    assert all(sd.text[t.idx:t.idx + len(t)] == t.text for t in sd) and words[0].idx == 2
    do, nt = words[1], words[2]
    assert (do.text, do.whitespace_, nt.text, nt.whitespace_) == ("do", "", "n't", " ")  # space after the token only
    assert (do.pos_, do.tag_, do.lemma_, str(do.morph)) == ("AUX", "VBP", "do", "Mood=Ind|Tense=Pres|VerbForm=Fin")
    know = words[3]
    assert know.dep_ == "ROOT" and know.head == know and words[0].head == know and words[0].dep_ == "nsubj"
    assert [s.text.strip() for s in sd.sents] == ["I don't know.", "Mary won and John too"]
    assert sd[0].text == "  " and sd[0].pos_ == "SPACE" and sd[0].tag_ == "_SP"  # the leading whitespace is a token, as spaCy writes it


def test_unparsed_sentences_keep_their_boundaries():
    from g2gt.ud.io import sentence_from_words

    doc = Document([sentence_from_words(["Hi", "."], space_after=[False, True]), sentence_from_words(["Bye"])])
    sd = doc.to_spacy()
    assert sd.text == "Hi. Bye" and [s.text for s in sd.sents] == ["Hi.", "Bye"]
    assert [t.dep_ for t in sd] == ["", "", ""]  # no parse: no relations


def test_coreference_clusters_in_doc_spans():
    doc = Document(parse_conllu_string(COREF))
    sd = doc.to_spacy(spacy.vocab.Vocab())
    assert sorted(sd.spans) == ["coref_clusters_1", "coref_clusters_2"]
    assert [s.text for s in sd.spans["coref_clusters_1"]] == ["Mary", "She"]
    assert [(s.start_char, s.end_char) for s in sd.spans["coref_clusters_2"]] == [(9, 13), (23, 26)]


def test_displacy_renders_the_result():
    from spacy import displacy

    sd = Document(read_conllu(FIXTURES / "mwt_empty.conllu")).to_spacy()
    svg = displacy.render(sd, style="dep")
    assert "<svg" in svg and "nsubj" in svg


@needs_model
def test_language_from_a_loaded_pipeline(nlp):
    from g2gt.ud.spacy import from_pipeline

    snlp = from_pipeline(nlp, coref=True)
    text = "Mary met John. She gave him her book.\nHe didn't read it."
    sd = snlp(text)
    assert sd.text == text and snlp.lang == "en"
    assert len(list(sd.sents)) == 3 and all(t.head.sent == t.sent for t in sd)
    assert {t.dep_ for t in sd if t.head == t and not t.is_space} == {"ROOT"}
    assert any(t.text == "n't" and t.lemma_ == "not" for t in sd)
    assert sd.spans and all(k.startswith("coref_clusters_") for k in sd.spans)
    assert [d.text for d in snlp.pipe(["A cat sat.", "It left."])] == ["A cat sat.", "It left."]


@needs_model
def test_load_pipeline_by_name_builds_from_its_config():
    import g2gt.spacy

    snlp = g2gt.spacy.load_pipeline(DEFAULT_MODEL, device="cpu", exclude=["enhance", "coref"])
    assert snlp.config["nlp"]["tokenizer"]["@tokenizers"] == "g2gt.PipelineAsTokenizer.v1"
    sd = snlp("The cat sat on the mat.")
    assert [t.pos_ for t in sd][:3] == ["DET", "NOUN", "VERB"] and sd[2].dep_ == "ROOT"
    again = spacy.blank("en", config=snlp.config)
    assert [t.dep_ for t in again("The cat sat on the mat.")] == [t.dep_ for t in sd]
