"""The result objects: Sentence as a sequence of Word views, surface tokens, Entity / Span, the one surface walk,
notebook display."""

from __future__ import annotations

import pickle

import pytest

from g2gt.ud.document import Document, Entity, Span
from g2gt.ud.io import parse_conllu_string, read_conllu, sentence_from_tokens
from g2gt.ud.io.surface import surface_tokens
from g2gt.ud.io.views import SurfaceToken, Word
from g2gt.core.registry import DEFAULT_MODEL, available_models
from fixture_paths import FIXTURES

CONLLU = FIXTURES / "mwt_empty.conllu"


def test_a_sentence_is_a_sequence_of_words():
    s = read_conllu(CONLLU)[0]
    assert [w.text for w in s] == s.forms == ["I", "do", "n't", "know", "."]
    assert len(s) == 5 and s[0].text == "I" and [w.text for w in s[1:3]] == ["do", "n't"]
    w = s[0]
    assert isinstance(w, Word) and w.id == 1 and w.lemma == "I" and w.upos == "PRON" and w.xpos == "PRP"
    assert w.feats["Case"] == "Nom" and w.head == 4 and w.deprel == "nsubj" and w.sentence is s
    assert w.head_word.text == "know" and w.head_word == s[3]
    know = s[3]
    assert know.head == 0 and know.head_word is None and know.deprel == "root" and s.root == know
    assert [c.text for c in know.children] == ["I", "do", "n't", "."]
    assert know.misc == {"SpaceAfter": "No"} and s[4].misc == {} and s[2].feats == {}
    assert w["misc"] is None and w.get("feats")["Case"] == "Nom"  # the conllu dict spelling still reads


def test_surface_tokens_and_offsets():
    s = read_conllu(CONLLU)[0]
    toks = s.tokens
    assert all(isinstance(t, SurfaceToken) for t in toks)
    assert [(t.id, t.text, t.start_char, t.end_char, t.space_after) for t in toks] == [
        ((1,), "I", 0, 1, True), ((2, 3), "don't", 2, 7, True), ((4,), "know", 8, 12, False), ((5,), ".", 12, 13, True)]
    assert [w.text for w in toks[1].words] == ["do", "n't"] and toks[1].is_mwt and not toks[0].is_mwt
    assert [(w.start_char, w.end_char) for w in s] == [(0, 1), (2, 7), (2, 7), (8, 12), (12, 13)]
    assert s.space_after == [True, False, True, False, True]
    assert s[1].token == toks[1] and s[1].space_after is False
    text = s.text
    assert all(text[t.start_char:t.end_char] == t.text for t in toks)


def test_one_walk_for_every_surface_view():
    s = read_conllu(CONLLU)[1]  # with an empty node
    walk = surface_tokens(s)
    assert [s.rows[t.row]["form"] for t in walk] == [t.text for t in s.tokens]
    assert all(not isinstance(s.rows[k]["id"], tuple) for t in walk for k in t.word_rows)
    built = sentence_from_tokens([("I", ["I"], True), ("don't", ["do", "n't"], True), ("know", ["know"], False)])
    assert [(t.row, t.words) for t in surface_tokens(built)] == [(0, [0]), (1, [1, 2]), (4, [3])]


def test_document_offsets_point_into_its_text():
    sents = read_conllu(CONLLU)
    doc = Document(sents, "  I don't know.\n\nMary won and John too")
    assert [(t.text, t.start_char) for t in doc.tokens][:3] == [("I", 2), ("don't", 4), ("know", 10)]
    assert all(doc.text[w.start_char:w.end_char] in (w.text, w.token.text) for w in doc.words)
    second = doc[1]
    assert second[0].start_char == doc.text.index("Mary")
    again = pickle.loads(pickle.dumps(doc))
    assert [(t.text, t.start_char) for t in again.tokens] == [(t.text, t.start_char) for t in doc.tokens]


def test_repr_html_draws_the_tree():
    s = read_conllu(CONLLU)[0]
    assert s._repr_html_().startswith("<svg") and "nsubj" in s._repr_html_()
    doc = Document(read_conllu(CONLLU))
    assert doc._repr_html_().count("<svg") == len(doc)


COREF = """# newdoc id = d
# global.Entity = eid-etype-head-other
# sent_id = 1
# text = Mary met John.
1\tMary\tMary\tPROPN\tNNP\t_\t2\tnsubj\t_\tEntity=(1-person-1-)
2\tmet\tmeet\tVERB\tVBD\t_\t0\troot\t_\t_
3\tJohn\tJohn\tPROPN\tNNP\t_\t2\tobj\t_\tEntity=(2-person-1-)|SpaceAfter=No
4\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

# sent_id = 2
# text = She saw him.
1\tShe\tshe\tPRON\tPRP\t_\t2\tnsubj\t_\tEntity=(1-person-1-)
2\tsaw\tsee\tVERB\tVBD\t_\t0\troot\t_\t_
3\thim\the\tPRON\tPRP\t_\t2\tobj\t_\tEntity=(2-person-1-)|SpaceAfter=No
4\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

"""


def test_entities_are_objects_with_spans():
    doc = Document(parse_conllu_string(COREF))
    ents = doc.entities
    assert all(isinstance(e, Entity) for e in ents) and [e.id for e in ents] == ["1", "2"]
    mary = ents[0]
    assert mary.type == "person" and all(isinstance(m, Span) for m in mary.mentions)
    assert [(m.text, m.start_char, m.end_char) for m in mary.mentions] == [("Mary", 0, 4), ("She", 15, 18)]
    assert mary.mentions[1].sentence is doc[1] and mary.mentions[0].head.text == "Mary"
    assert mary.mentions[0].root == mary.mentions[0].head and [w.text for w in mary.mentions[1]] == ["She"]
    d = doc.to_dict()
    assert [(m["start_char"], m["end_char"]) for m in d["entities"][1]["mentions"]] == [(9, 13), (23, 26)]
    back = Document.from_dict(d)
    assert back.conllu() == doc.conllu() and back.entities == doc.entities
    assert Document.from_json(doc.to_json()).to_dict() == d


def test_conllu_output_is_unchanged_by_the_views():
    text = CONLLU.read_text(encoding="utf-8")
    sents = parse_conllu_string(text)
    for s in sents:
        _ = [(w.text, w.head_word, w.children, w.start_char) for w in s]
        _ = [(t.text, t.start_char) for t in s.tokens]
    assert "".join(s.serialize() for s in sents) == text


@pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="the shipped model is not here")
def test_views_on_a_parsed_text():
    import g2gt

    nlp = g2gt.load(device="cpu", exclude=("enhance", "coref"))
    doc = nlp("I don't know.  He left.")
    words = doc.words
    assert [w.text for w in words][:3] == ["I", "do", "n't"]
    assert all(doc.text[w.start_char:w.end_char] == w.token.text for w in words)
    roots = [w for w in words if w.head == 0]
    assert len(roots) == len(doc) and all(w.head_word is None for w in roots)
    assert all(w.head_word.sentence is w.sentence for w in words if w.head)
