"""``g2gt enhance`` and ``g2gt coref`` stream: the input is read a bounded chunk (enhance) or a bounded part of a
document (coref) ahead of what is written, never whole, and the bytes are those of the chunk (the document) at
once. The guard: the reader raises once it has handed out more than one chunk beyond what was processed."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

import g2gt.ud.io.conllu as conllu_module
from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.coref.data import windows
from g2gt.ud.coref.io import documents
from g2gt.ud.coref.parts import document_parts
from g2gt.ud.io.conllu import parse_conllu_string, read_conllu, to_conllu_string
from g2gt.ud.limits import CHUNK_SENTENCES, CHUNK_WORDS


def _sentence(k: int, n: int, newdoc: bool = False) -> str:
    """CoNLL-U of one sentence of ``n`` words, a chain: word 1 the root, word i headed by word i - 1."""
    lines = ([f"# newdoc id = d{k}"] if newdoc else []) + [f"# sent_id = s{k}", f"# text = {' '.join(['w'] * n)}"]
    for i in range(1, n + 1):
        lines.append(f"{i}\tw\tw\tNOUN\tNN\t_\t{i - 1}\t{'root' if i == 1 else 'nmod'}\t_\t_")
    return "\n".join(lines) + "\n\n"


class Guard:
    """Counts sentences read (a wrapped ``iter_conllu``) and processed; raises when the reader runs more than
    ``sentences`` sentences or ``words`` words ahead of the processing (the input would be read whole)."""

    def __init__(self, monkeypatch, sentences: int | None, words: int | None) -> None:
        self.read = self.read_words = self.done = self.done_words = 0
        self.max_ahead = 0
        self.bound = (sentences, words)
        real = conllu_module.iter_conllu

        def guarded(*args, **kw):
            for s in real(*args, **kw):
                self.read += 1
                self.read_words += len(s)
                ahead, ahead_words = self.read - self.done, self.read_words - self.done_words
                self.max_ahead = max(self.max_ahead, ahead)
                if (sentences is not None and ahead > sentences) or (words is not None and ahead_words > words):
                    raise AssertionError(f"read {ahead} sentences ({ahead_words} words) ahead of the work")
                yield s

        monkeypatch.setattr(conllu_module, "iter_conllu", guarded)

    def processed(self, part) -> None:
        self.done += len(part)
        self.done_words += sum(len(s) for s in part)


# ---------------------------------------------------------------------------- enhance
@pytest.mark.parametrize("count,length", [(2 * CHUNK_SENTENCES + 300, 3), (150, 400)])
def test_enhance_copy_basic_reads_a_chunk_at_a_time_and_writes_the_same_bytes(monkeypatch, tmp_path, count, length):
    """Many short sentences (cut by sentences) and few long ones (cut by words)."""
    import g2gt.ud.enhance.enhancer as enhancer_module

    inp, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    inp.write_text("".join(_sentence(k, length) for k in range(count)), encoding="utf-8")
    expected = to_conllu_string(enhancer_module.copy_basic(read_conllu(inp)))
    guard = Guard(monkeypatch, CHUNK_SENTENCES, CHUNK_WORDS + length)
    real = enhancer_module.copy_basic

    def counted(part):
        guard.processed(part)
        return real(part)

    monkeypatch.setattr(enhancer_module, "copy_basic", counted)
    assert main(["enhance", "--copy-basic", str(inp), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == expected
    assert guard.read == count and guard.max_ahead < count


@pytest.fixture(scope="module")
def enhancer():
    from g2gt.ud.enhance import Enhancer

    return Enhancer.load("en_combined", "cpu", "float32")


def test_enhance_stream_is_each_chunks_enhancement_and_of_one_chunk_the_whole(enhancer):
    from g2gt.ud.enhance import enhance_stream

    sents = read_conllu(EWT_SAMPLE_DEV)[:40]
    seen = []

    def run(part):
        seen.append(len(part))
        return enhancer.enhance(part)

    def lazy():
        for k, s in enumerate(sents):
            assert k - sum(seen) <= 15, "read more than a chunk ahead"
            yield s

    streamed = to_conllu_string(enhance_stream(run, lazy(), chunk_sentences=15))
    assert seen == [15, 15, 10]
    assert streamed == to_conllu_string(x for a in (0, 15, 30) for x in enhancer.enhance(sents[a:a + 15]))
    assert to_conllu_string(enhance_stream(enhancer.enhance, iter(sents))) == to_conllu_string(enhancer.enhance(sents))


def test_enhance_stream_checks_a_chunks_trees_before_its_work():
    from g2gt.ud.enhance import enhance_stream
    from g2gt.ud.io.conllu import CoNLLUError

    bad = parse_conllu_string(_sentence(0, 3).replace("\t0\troot", "\t2\tnmod"), name="bad.conllu")
    calls = []
    with pytest.raises(CoNLLUError, match="bad.conllu:"):
        list(enhance_stream(lambda part: calls.append(part) or part, bad))
    assert calls == []


# ---------------------------------------------------------------------------- coref: parts of documents
def _lengths_doc(lengths: list[int]):
    bounds = [0]
    for n in lengths:
        bounds.append(bounds[-1] + n)
    return SimpleNamespace(bounds=bounds)


@pytest.mark.parametrize("seed", range(6))
def test_fuzz_document_parts_cut_only_between_windows_and_stay_bounded(seed):
    """Attack: random documents, sentence lengths from 1 word to over a window, some over the word limit."""
    rng = random.Random(seed)
    text = "".join(_sentence(k, rng.choice([1, 4, 20, 60, 130]), newdoc=k == 0 or rng.random() < 0.05)
                   for k in range(rng.randint(1, 300)))
    sents = parse_conllu_string(text)
    is_long = (lambda s: len(s) > 100) if seed % 2 else (lambda s: False)
    window, bound = 120, 500
    parts = list(document_parts(iter(sents), window, bound, is_long))
    assert [s for p, _ in parts for s in p] == sents  # nothing lost, nothing reordered
    docs = documents(sents)
    assert sum(first for _, first in parts) == len(docs)
    k = 0
    for doc in docs:  # a document's parts: its windows cut at part boundaries (the whole document's windows)
        mine = []
        while k < len(parts) and (not mine or not parts[k][1]):
            mine.append(parts[k][0])
            k += 1
        assert [s for p in mine for s in p] == doc
        whole = windows(_lengths_doc([len(s) for s in doc if not is_long(s)]), window)
        got, off = [], 0
        for p in mine:
            short = [len(s) for s in p if not is_long(s)]
            got += [(a + off, b + off) for a, b in windows(_lengths_doc(short), window)]
            off += sum(short)
        if not any(is_long(s) for s in doc):
            assert got == whole
        for p in mine[:-1]:
            assert sum(len(s) for s in p) <= bound + window + 130
    assert k == len(parts)


def test_document_parts_of_none_are_whole_documents():
    sents = parse_conllu_string("".join(_sentence(k, 30, newdoc=k % 50 == 0) for k in range(200)))
    assert [p for p, _ in document_parts(sents, 64, None)] == documents(sents)


# ---------------------------------------------------------------------------- coref: the resolver and the command
@pytest.fixture(scope="module")
def resolver():
    from g2gt.ud.coref.resolver import Coreferencer

    return Coreferencer.load("en_combined", "cpu")


def _sample(n: int, every: int | None) -> str:
    """The first ``n`` sentences of the EWT sample, a document every ``every`` sentences (``None``: one document)."""
    blocks = [b for b in EWT_SAMPLE_DEV.read_text(encoding="utf-8").split("\n\n") if b.strip()][:n]
    out = []
    for k, b in enumerate(blocks):
        lines = [x for x in b.split("\n") if not x.startswith("# newdoc")]
        if every is not None and k % every == 0:
            lines.insert(0, f"# newdoc id = doc{k}")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out)


def test_coref_stream_cuts_a_long_document_into_parts_with_the_bytes_of_the_whole(resolver, monkeypatch):
    sents = parse_conllu_string(_sample(60, None))
    monkeypatch.setattr(resolver, "max_words", 150)  # windows of 150 words: parts of several windows
    whole = to_conllu_string(resolver.resolve(sents))
    assert whole.count("Entity=") > 5
    sizes = []
    real = resolver._resolve_part

    def spy(part, *a):
        sizes.append(sum(len(s) for s in part))
        return real(part, *a)

    monkeypatch.setattr(resolver, "_resolve_part", spy)
    assert to_conllu_string(resolver.stream(iter(sents), max_words=400)) == whole
    assert len(sizes) >= 2 and max(sizes) <= 400 + 150 + max(len(s) for s in sents)


def test_coref_command_reads_a_document_at_a_time(resolver, monkeypatch, tmp_path):
    """Many documents: the command never reads more than one document ahead; the bytes are the resolver's."""
    import g2gt.ud.coref.resolver as resolver_module

    inp, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    inp.write_text(_sample(40, 5), encoding="utf-8")
    expected = to_conllu_string(resolver.resolve(read_conllu(inp)))
    guard = Guard(monkeypatch, 6, None)  # a document of 5 sentences, and the next one's first sentence
    real = resolver_module.Coreferencer._resolve_part

    def counted(self, part, *a):
        guard.processed(part)
        return real(self, part, *a)

    monkeypatch.setattr(resolver_module.Coreferencer, "_resolve_part", counted, raising=False)
    assert main(["coref", str(inp), "-o", str(out), "--threads", "1"]) == 0
    assert out.read_text(encoding="utf-8") == expected
    assert guard.read == 40
