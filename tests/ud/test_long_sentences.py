"""The one sentence-length guard (g2gt.ud.limits) at every entry point: enhance and coref (Python and CLI) keep a
long sentence's tree and skip the quadratic model for it with one warning line, --refine refuses it saying why,
and the counts are of what was written. Small sizes: the limit is lowered through $G2GT_MAX_SENTENCE_WORDS."""

from __future__ import annotations

import warnings

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.io.conllu import parse_conllu_string, read_conllu, write_conllu

LIMIT = 12


@pytest.fixture
def sample(monkeypatch):
    monkeypatch.setenv("G2GT_MAX_SENTENCE_WORDS", str(LIMIT))
    sents = read_conllu(EWT_SAMPLE_DEV)[:12]
    assert any(len(s) > LIMIT for s in sents) and any(len(s) <= LIMIT for s in sents)
    return sents


def _caught(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def test_enhancer_gives_a_long_sentence_its_basic_tree(sample):
    from g2gt.ud.enhance import Enhancer
    from g2gt.ud.enhance.enhancer import copy_basic

    enhancer = Enhancer.load("en_combined", "cpu", "float32")
    out, notes = _caught(enhancer.enhance, sample)
    long = [i for i, s in enumerate(sample) if len(s) > LIMIT]
    assert len(out) == len(sample) and len(notes) == len(long)
    assert all("\n" not in n and "DEPS" in n and f"limit of {LIMIT}" in n for n in notes)
    basic = copy_basic(sample)
    for i in long:
        assert out[i].serialize() == basic[i].serialize()
    for a, b in zip(out, sample):  # nothing but DEPS changes
        assert [(w["form"], w["head"], w["deprel"]) for w in a.words] == [(w["form"], w["head"], w["deprel"])
                                                                           for w in b.words]


def test_coreferencer_leaves_a_long_sentence_out_of_the_model_not_out_of_the_output(sample):
    from g2gt.ud.coref.resolver import Coreferencer

    resolver = Coreferencer.load("en_combined", "cpu")
    out, notes = _caught(resolver, sample)
    long = [i for i, s in enumerate(sample) if len(s) > LIMIT]
    assert len(out) == len(sample) and len(notes) == len(long) and "coreference" in notes[0]
    for i in long:
        assert not any("Entity" in (w["misc"] or {}) for w in out[i].words)
        assert out[i].forms == sample[i].forms and out[i].heads == sample[i].heads
    assert [s.forms for s in out] == [s.forms for s in sample]


@pytest.mark.parametrize("command", ["enhance", "coref"])
def test_the_commands_apply_the_guard(sample, tmp_path, recwarn, command):
    inp, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    write_conllu(sample, inp)
    assert main([command, str(inp), "-o", str(out), "--threads", "1"]) == 0
    got = read_conllu(out)
    assert [s.forms for s in got] == [s.forms for s in sample]  # nothing lost, nothing split
    notes = [str(w.message) for w in recwarn if "over the limit" in str(w.message)]
    assert len(notes) == sum(len(s) > LIMIT for s in sample)


def test_refine_refuses_a_long_sentence_saying_why(sample, tmp_path, capsys):
    inp = tmp_path / "in.conllu"
    write_conllu(sample, inp)
    assert main(["parse", str(inp), "--refine", "-o", str(tmp_path / "o.conllu"), "--threads", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"over the limit of {LIMIT}" in err and "--refine" in err and "cannot be cut" in err
    assert "found '_'" not in err and str(inp) in err
    assert not (tmp_path / "o.conllu").exists()


def test_lines_counts_the_sentences_written(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("G2GT_MAX_SENTENCE_WORDS", "10")
    inp, out = tmp_path / "in.txt", tmp_path / "out.conllu"
    inp.write_text(" ".join(["word"] * 35) + "\nA short line .\n", encoding="utf-8")
    assert main(["parse", "--lines", str(inp), "-o", str(out), "--threads", "1", "--no-progress"]) == 0
    written = parse_conllu_string(out.read_text(encoding="utf-8"))
    assert len(written) == 5 and sum(len(s) for s in written) == 39
    err = capsys.readouterr().err
    assert "parsed 5 sentences, 39 words" in err


@pytest.mark.parametrize("words", [13, 25, 60])
def test_fuzz_long_sentences_are_never_lost(monkeypatch, words):
    """Attack: sentences just over, and far over, the limit through the Python pipeline and the stream."""
    import g2gt

    monkeypatch.setenv("G2GT_MAX_SENTENCE_WORDS", str(LIMIT))
    nlp = g2gt.load("en_combined", device="cpu", tokenizer="rule")
    tokens = [f"w{k}" for k in range(words)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = nlp([tokens, ["Short", "."]], enhanced=True)
        stats: dict = {}
        streamed = list(nlp.stream(doc and [s for s in nlp.to_sentences([tokens, ["Short", "."]])], 3, stats))
    assert [f for s in doc for f in s.forms] == tokens + ["Short", "."]
    assert all(len(s) <= LIMIT for s in doc)
    assert [f for s in streamed for f in s.forms] == tokens + ["Short", "."]
    assert stats == {"sentences": len(streamed), "words": words + 2}
