"""Coreference in ``g2gt serve``: ``coref=true`` on ``/v1/parse`` gives the library's entities (the shipped
model's coref stage), a model without the stage answers 400 naming it, requests batched together stay
separate documents, the drawings mark the mentions, and the OpenAPI schema documents the option."""

from __future__ import annotations

import re

import pytest

from test_serve_harness import LiveServer

from g2gt.serve.adapter import LoadedModel, load_models
from g2gt.serve.app import create_app
from g2gt.serve.service import Options, ParseService, Work
from g2gt.ud.io import parse_conllu_string, sentence_from_words
from g2gt.core.registry import DEFAULT_MODEL

TEXT = "Mary met John. She gave him her book."
BAD_ENTITY = "1\tMary\t_\t_\t_\t_\t0\troot\t_\tEntity=(1-person\n\n"  # opened, never closed


@pytest.fixture(scope="module")
def models():
    from g2gt.ud.pipeline import Pipeline

    loaded = load_models([DEFAULT_MODEL])
    plain = Pipeline.load(DEFAULT_MODEL, device="cpu", exclude=("coref", "enhance"))
    loaded["plain"] = LoadedModel("plain", plain, dict(loaded[DEFAULT_MODEL].card))
    return loaded


@pytest.fixture(scope="module")
def server(models):
    with LiveServer(create_app(models)) as live:
        yield live


def _entity_misc(out: dict) -> list[str]:
    return [w["misc"] for s in out["sentences"] for w in s["words"] if "Entity=" in (w["misc"] or "")]


def test_v1_parse_coref_gives_the_libraries_entities(server, models):
    status, out = server.json("/v1/parse", {"text": TEXT, "coref": True})
    assert status == 200, out
    expected = models[DEFAULT_MODEL].nlp(TEXT, coref=True).to_dict()
    assert out["entities"] == expected["entities"] and out["sentences"] == expected["sentences"]
    assert any(len(e["mentions"]) >= 2 for e in out["entities"])  # something to colour
    for e in out["entities"]:
        for m in e["mentions"]:
            words = out["sentences"][m["sentence"]]["words"]
            assert m["text"] == " ".join(w["text"] for w in words[m["start"] - 1:m["end"]])
    status, plain = server.json("/v1/parse", {"text": TEXT})
    assert status == 200 and "entities" not in plain and not _entity_misc(plain)


def test_v1_parse_coref_needs_the_stage(server, models):
    status, message = server.json("/v1/parse", {"text": TEXT, "coref": True, "model": "plain"})
    assert status == 400
    assert message.startswith("coref: the model 'plain' has no coreference stage")
    assert DEFAULT_MODEL in message  # where to find one
    status, info = server.request("GET", "/v1/models")
    import json

    flags = {m["name"]: m["coref"] for m in json.loads(info)["models"]}
    assert flags == {DEFAULT_MODEL: True, "plain": False}


def test_entities_of_conllu_input_come_back_and_bad_brackets_are_400(server):
    conllu = ("# global.Entity = eid-etype-head-other\n1\tMary\t_\t_\t_\t_\t2\tnsubj\t_\tEntity=(1-person-1)\n"
              "2\tslept\t_\t_\t_\t_\t0\troot\t_\t_\n3\t.\t_\t_\t_\t_\t2\tpunct\t_\t_\n\n"
              "1\tShe\t_\t_\t_\t_\t2\tnsubj\t_\tEntity=(1-person-1)\n2\twoke\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    status, out = server.json("/v1/parse", {"conllu": conllu, "svg": True})  # no coref: the input's are kept
    assert status == 200, out
    assert [(m["sentence"], m["text"]) for m in out["entities"][0]["mentions"]] == [(0, "Mary"), (1, "She")]
    assert all('class="mention"' in s["svg"] for s in out["sentences"])
    status, message = server.json("/v1/parse", {"conllu": BAD_ENTITY})
    assert status == 400 and "open mentions" in message


def test_svg_marks_mentions_in_their_entitys_colour(server):
    status, out = server.json("/v1/parse", {"text": TEXT, "coref": True, "svg": True})
    assert status == 200, out
    colours: dict[str, set[str]] = {}
    for s in out["sentences"]:
        for eid, fill in re.findall(r'<g class="mention" data-entity="([^"]+)">.*?fill="([^"]+)"', s["svg"]):
            colours.setdefault(eid, set()).add(fill)
    shared = {e["id"] for e in out["entities"] if len(e["mentions"]) >= 2}
    assert set(colours) == shared  # singletons are not marked
    assert all(len(c) == 1 for c in colours.values())
    assert len({next(iter(c)) for c in colours.values()}) == len(colours)


def test_requests_batched_together_stay_separate_documents(models):
    """Two requests of pre-tokenized sentences (no '# newdoc') in one batch: each is resolved as the library
    resolves it alone (entity ids from 1 in each, no mention across them) and its comments are its own."""
    model = models[DEFAULT_MODEL]
    first = [["Mary", "met", "John", "."], ["She", "smiled", "."]]
    second = [["Tom", "left", "."], ["He", "was", "tired", "."]]

    def sentences(words):
        return [sentence_from_words(w, sent_id=str(k)) for k, w in enumerate(words, 1)]

    docs = ParseService({model.name: model}).run(Options(model.name, coref=True),
                                                  [Work(sentences=sentences(first)), Work(sentences=sentences(second))])
    for doc, words in zip(docs, (first, second)):
        alone = model.nlp(sentences(words), coref=True)
        assert doc.conllu() == alone.conllu()
        assert doc.entities == alone.entities and doc.entities
        assert not any("newdoc" in s.metadata for s in doc)
    assert parse_conllu_string(docs[1].conllu())[0].metadata.get("global.Entity")  # a document of its own


def test_presegmented_text_is_one_document(server):
    """Every line is a sentence, but the text stays one document: an entity links mentions across lines."""
    status, out = server.json("/v1/parse", {"text": "Mary met John.\nShe smiled.\n", "presegmented": True,
                                            "coref": True})
    assert status == 200, out
    assert [s["comments"][0] == "# newdoc" for s in out["sentences"]] == [True, False]
    assert {e["document"] for e in out["entities"]} == {0}
    assert len(out["entities"]) == len({e["id"] for e in out["entities"]})


def test_openapi_documents_the_option(server):
    import json

    schema = json.loads(server.request("GET", "/openapi.json")[1])
    props = schema["components"]["schemas"]["ParseRequest"]["properties"]
    assert "coreference" in props["coref"]["description"]
    assert "entities" in schema["components"]["schemas"]["ParseResponse"]["properties"]
    assert {"sentence", "start", "end", "text"} <= set(schema["components"]["schemas"]["MentionOut"]["properties"])
    assert "<code>coref</code>" in server.request("GET", "/docs")[1].decode("utf-8")  # the offline API page
