"""What keeps ``g2gt parse``'s memory flat over a long input: chunks bounded by sentences and words, the same
in one process and its workers; the JSON writer holds no sentence it has written; the command runs without
oneDNN's primitive cache (one compiled kernel per input shape)."""

from __future__ import annotations

import gc
import io
import random
import weakref
from itertools import islice

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.document_stream import write_document_json
from g2gt.ud.io.conllu import iter_conllu, read_conllu
from g2gt.ud.limits import CHUNK_WORDS, iter_chunks


@pytest.mark.parametrize("seed", range(5))
def test_fuzz_chunks_are_bounded_by_sentences_and_words(seed):
    """Attack: random sentence lengths, from one word to far over the word budget."""
    rng = random.Random(seed)
    items = ["x" * rng.choice([1, 5, 30, 300, 5000]) for _ in range(rng.randint(0, 400))]
    chunks = list(iter_chunks(items, 50, 1000))
    assert [x for c in chunks for x in c] == items  # nothing lost, nothing reordered
    for c in chunks:
        assert 1 <= len(c) <= 50
        assert sum(map(len, c[:-1])) < 1000  # only the last item may take a chunk over the budget
    assert CHUNK_WORDS == 20_000


def test_the_stream_cuts_its_chunks_by_words(monkeypatch):
    import g2gt

    nlp = g2gt.load("en_combined", device="cpu", tokenizer="rule", exclude=["enhance"])
    seen = []
    call = type(nlp).__call__

    def spy(self, x, **kw):
        seen.append(sum(len(s) for s in x))
        return call(self, x, **kw)

    monkeypatch.setattr(type(nlp), "__call__", spy)
    sents = read_conllu(EWT_SAMPLE_DEV)[:60]
    out = list(nlp.stream(sents, 2000, {}, chunk_words=300, refine_steps=0))
    assert [s.forms for s in out] == [s.forms for s in sents]
    assert len(seen) > 1 and all(n < 300 + 160 for n in seen)


def test_the_json_writer_holds_no_sentence_it_has_written():
    alive = set()

    def sentences():
        for k, s in enumerate(islice(iter_conllu(EWT_SAMPLE_DEV), 80)):
            alive.add(k)
            weakref.finalize(s, alive.discard, k)
            yield s
            gc.collect()
            assert len(alive) <= 2, f"{len(alive)} sentences alive"

    out = io.StringIO()
    assert write_document_json(sentences(), out) == 80


def test_the_command_runs_without_onednns_primitive_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    assert main(["parse", "--text", "He sat.", "-o", str(tmp_path / "o.conllu"), "--threads", "1"]) == 0
    import os

    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "0"
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "64")  # the user's own setting is kept
    assert main(["parse", "--text", "He sat.", "-o", str(tmp_path / "o.conllu"), "--threads", "1"]) == 0
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "64"
