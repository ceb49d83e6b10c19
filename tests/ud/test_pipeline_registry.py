"""The Pipeline as spaCy / Stanza users expect it: load options (device auto, threads, exclude, config), a stage
registry and add_stage, stages without side effects, repr, pipe() batching across texts, old keyword names."""

from __future__ import annotations

import warnings

import pytest
import torch

import g2gt
from g2gt.ud.document import Document
from g2gt.ud.io import sentence_from_words
from g2gt.core.registry import DEFAULT_MODEL, available_models
from g2gt.ud.pipeline import Pipeline
from g2gt.ud.stage import LazyStage, register_stage, registered_stages, unregister_stage

needs_model = pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="the shipped model is not here")


class CopyParser:
    """A parse stage that copies its input and counts its calls and the sentences it saw."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def parse(self, sentences, refine_steps=None, algorithm="mst", use_input_graph=False, batch_tokens=3000,
              progress=False, keep=()):
        self.calls.append(len(sentences))
        return [s.copy() for s in sentences]


def words(text: str):
    return [sentence_from_words(line.split()) for line in text.splitlines() if line.split()]


class Marker:
    """A stage of one's own: writes ``Seen=<deps?>`` into every word's MISC."""

    def __call__(self, sentences):
        for s in sentences:
            for w in s.words:
                w["misc"] = {**(w["misc"] or {}), "Seen": "deps" if w["deps"] else "nodeps"}
        return sentences


# ---------------------------------------------------------------------------- in memory
def test_add_stage_runs_in_order_and_repr_names_every_class():
    nlp = Pipeline(tokenize=words, parse=CopyParser())
    order = []
    nlp.add_stage("first", lambda sents: order.append("first") or sents, after="parse")
    nlp.add_stage("second", Marker())
    nlp.add_stage("zeroth", lambda sents: order.append("zeroth") or sents, before="first")
    assert list(nlp.stages) == ["tokenize", "parse", "zeroth", "first", "second"]
    doc = nlp("a b\nc")
    assert order == ["zeroth", "first"] and doc[0].words[0]["misc"] == {"Seen": "nodeps"}
    text = repr(nlp)
    assert "tokenize=words()" in text and "parse=CopyParser" in text and "second=Marker" in text
    assert "function" not in text
    with pytest.raises(ValueError, match="already a stage"):
        nlp.add_stage("second", Marker())
    with pytest.raises(ValueError, match="no stage 'nope'"):
        nlp.add_stage("x", Marker(), after="nope")
    assert isinstance(nlp.remove_stage("second"), Marker) and "second" not in nlp.stages


def test_pipe_batches_sentences_across_texts_and_keeps_the_order():
    parser = CopyParser()
    nlp = Pipeline(tokenize=words, parse=parser)
    texts = [f"text {i} has words\nand a second line" for i in range(10)] + ["", "last one"]
    docs = list(nlp.pipe(texts))
    assert all(isinstance(d, Document) for d in docs) and len(docs) == len(texts)
    assert [d.text for d in docs] == texts
    assert [[s.forms for s in d] for d in docs] == [[s.forms for s in nlp(t)] for t in texts]
    assert parser.calls[:1] == [21]  # one parser call for all the texts' sentences
    assert [len(d) for d in docs][-2:] == [0, 1]


def test_pipe_groups_texts_by_words():
    from g2gt.ud.pipe import text_groups

    groups = list(text_groups(iter(["x" * 50] * 7), group_words=25))  # 10 estimated words each, size unknown
    assert [len(g) for g in groups] == [3, 3, 1]
    assert [len(g) for g in text_groups(iter(["x" * 500, "y"]), group_words=25)] == [1, 1]  # a big one goes alone
    texts = ["x" * 50] * 40  # a list: 400 words, the groups of its last 50 get smaller
    sizes = [len(g) for g in text_groups(texts, group_words=25)]
    assert sum(sizes) == 40 and sizes[:8] == [3] * 8 and sizes[-3:] == [2, 1, 1]


def test_pipe_n_process_needs_a_loaded_pipeline():
    nlp = Pipeline(tokenize=words, parse=CopyParser())
    with pytest.raises(ValueError, match="Pipeline.load"):
        list(nlp.pipe(["a b"], n_process=2))


def test_unknown_keywords_are_refused():
    nlp = Pipeline(tokenize=words, parse=CopyParser())
    with pytest.raises(TypeError, match="max_tokens"):
        nlp("a b", max_tokens=100)
    with pytest.raises(TypeError, match="colour"):
        nlp("a", colour="red")


def test_register_stage_refuses_a_built_in_name():
    with pytest.raises(ValueError, match="tokenize, parse, enhance"):
        register_stage("parse")


# ---------------------------------------------------------------------------- the shipped model
@pytest.fixture
def marker_registered():
    seen = {}

    @register_stage("marker", after="enhance")
    def make_marker(context, tag="Seen"):
        seen["context"], seen["tag"] = context, tag
        return Marker()

    yield seen
    unregister_stage("marker")
    assert "marker" not in registered_stages()


@needs_model
def test_a_registered_stage_after_enhance_runs_in_every_load(marker_registered):
    nlp = g2gt.load(config={"marker": {"tag": "mine"}})
    assert list(nlp.stages) == ["tokenize", "parse", "coref", "enhance", "marker"]
    assert marker_registered["tag"] == "mine" and marker_registered["context"].folder.name == DEFAULT_MODEL
    plain = nlp("He sat down.")
    assert {w["misc"]["Seen"] for w in plain[0].words} == {"nodeps"}  # enhance skipped, the marker still runs
    enhanced = nlp("He sat down.", enhanced=True)
    assert {w["misc"]["Seen"] for w in enhanced[0].words} == {"deps"}  # it ran after the enhancer
    assert "Seen=deps" in enhanced.conllu()
    assert "marker" not in g2gt.load(exclude=("marker", "enhance")).stages


@needs_model
def test_stages_and_repr_load_nothing():
    nlp = g2gt.load()
    stage = nlp.stages["enhance"]
    assert isinstance(stage, LazyStage) and not stage.loaded
    text = repr(nlp)
    assert text == ("Pipeline(en_combined: tokenize=Segmenter, parse=Parser, coref=Coreferencer (not loaded yet), "
                    "enhance=Enhancer (not loaded yet))")
    assert not stage.loaded
    assert nlp.enhancer is not None and stage.loaded and "enhance=Enhancer (not loaded" not in repr(nlp)


@needs_model
def test_load_exclude_config_device_threads():
    before = torch.get_num_threads()
    try:
        nlp = g2gt.load(DEFAULT_MODEL, device="auto", dtype="auto", threads=1, exclude=("enhance", "coref"),
                        config={"parse": {"refine_steps": 1}})
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert list(nlp.stages) == ["tokenize", "parse"] and nlp.enhancer is None and nlp.parser.refine_steps == 1
    with pytest.raises(ValueError, match="no enhanced-UD stage"):
        nlp("He sat.", enhanced=True)
    enh = g2gt.load(config={"enhance": {"threshold": 0.6}})
    assert not enh.stages["enhance"].loaded and enh.enhancer.threshold == 0.6
    assert g2gt.load(exclude="tokenize").learned_tokenizer is False
    with pytest.raises(ValueError, match="unknown stage"):
        g2gt.load(exclude=("enhancer",))
    with pytest.raises(ValueError, match="has no option 'treshold'"):
        g2gt.load(config={"parse": {"treshold": 1}})


@needs_model
def test_inputs_that_are_not_text_or_words_get_errors_that_say_what_to_do():
    nlp = g2gt.load(device="cpu")
    with pytest.raises(TypeError, match="got bytes: decode them first"):
        nlp(b"The cat sat.")
    with pytest.raises(TypeError, match="got NoneType"):
        nlp(None)
    with pytest.raises(TypeError, match="for several texts use nlp.pipe"):
        nlp(["The cat sat.", "Dogs bark."])  # two texts, not the words of one sentence
    assert len(nlp(["học sinh", "đi", "học"])[0]) == 3  # a word may hold a space
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = nlp([["a\rb", "c\x00d", "e\u2028f", "g\x85h"]])
    forms = doc[0].forms
    assert forms == ["a b", "cd", "e f", "g h"]  # the control-character filter of raw text
    from g2gt.ud.io import parse_conllu_string

    assert parse_conllu_string(doc.conllu())[0].forms == forms  # and they read back the same
    with pytest.raises(ValueError, match="word 2"):
        nlp([["a", "\x00"]])
