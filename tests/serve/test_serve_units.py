"""The pieces of ``g2gt serve`` without a model or a network: the batcher, formats, offsets, request bodies,
and the batch runner's isolation of a failing request."""

from __future__ import annotations

import asyncio
import base64
import platform
import sys
import threading
import time

import pytest

from g2gt.serve.batching import Batcher, Job, QueueFull
from g2gt.serve.formats import (
    RequestError, decode_utf8, limit_lengths, merge_sentences, read_horizontal, read_vertical,
    surface_tokens, write_plaintext,
)
from g2gt.serve.service import Options, ParseService, Work
from g2gt.ud.io import parse_conllu_string, sentence_from_tokens, sentence_from_words


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate():
        time.sleep(0.01)
    return bool(predicate())


# --------------------------------------------------------------------------- batcher
def _gather(batcher: Batcher, jobs: list[Job], stagger: float = 0.0):
    async def main():
        futures = []
        for job in jobs:
            futures.append(batcher.submit(job))
            if stagger:
                await asyncio.sleep(stagger)
        return await asyncio.gather(*futures, return_exceptions=True)

    return asyncio.run(main())


def test_batcher_groups_jobs_by_key_within_the_size_budget():
    calls = []

    def run(key, payloads):
        calls.append((key, list(payloads)))
        return [f"{key}:{p}" for p in payloads]

    batcher = Batcher(run, max_wait=0.2, max_size=3)
    batcher.start()
    jobs = [Job("a", 1, 1), Job("b", 1, 2), Job("a", 1, 3), Job("a", 1, 4), Job("a", 1, 5)]
    results = _gather(batcher, jobs)
    batcher.close()
    assert results == ["a:1", "b:2", "a:3", "a:4", "a:5"]
    assert calls[0] == ("a", [1, 3, 4])  # same key, arrival order, at most max_size
    assert sorted(calls[1:]) == [("a", [5]), ("b", [2])]


def test_batcher_lone_client_does_not_wait_and_a_queue_forms_one_batch():
    gate = threading.Event()
    calls = []

    def run(key, payloads):
        gate.wait(5)
        calls.append(list(payloads))
        return list(payloads)

    batcher = Batcher(run, max_wait=0.5, max_size=100)
    batcher.start()

    async def main():
        f1 = batcher.submit(Job("k", 1, "first"))
        while batcher.stats["running"] == 0:  # the worker holds "first" (gate closed)
            await asyncio.sleep(0.005)
        rest = [batcher.submit(Job("k", 1, p)) for p in ("a", "b", "c")]
        gate.set()
        await asyncio.gather(f1, *rest)
        await batcher.submit(Job("k", 1, "once"))  # after a batch of 3 it waits (up to max_wait) for 3 clients
        waits = batcher.stats["company_waits"]
        await batcher.submit(Job("k", 1, "alone"))  # then one client, one job: no wait for company
        return waits

    waits = asyncio.run(main())
    batcher.close()
    assert calls == [["first"], ["a", "b", "c"], ["once"], ["alone"]]
    assert waits >= 1  # "once" waited for the company a batch of 3 promised
    assert batcher.stats["company_waits"] == waits  # "alone" was taken at once


def test_batcher_does_not_count_a_job_sent_after_the_answer_as_a_second_client():
    # The race CI met: the client answered by a batch of one sends its next job before the worker asks for
    # the next batch. That job is the same client, not company to wait for.
    batcher = Batcher(lambda key, payloads: payloads, max_wait=0.05)
    answered = time.monotonic()
    job = Job("k", 1, "next")
    job.arrived, job.state = answered + 0.001, "queued"
    batcher._queue.append(job)
    assert batcher._take(1, answered, idle_done=True) == [(job, 0, "next")]
    assert batcher.stats["company_waits"] == 0  # taken at once
    early = Job("k", 1, "other client")  # queued before the answer went out: a second active client
    early.arrived, early.state = answered - 1.0, "queued"
    batcher._queue.append(early)
    assert batcher._take(1, answered, idle_done=True) == [(early, 0, "other client")]
    assert batcher.stats["company_waits"] == 1  # target 2: it waited (up to max_wait) for the company it expected


def test_batcher_isolates_results_and_survives_a_crash():
    def run(key, payloads):
        if "crash" in payloads:
            raise RuntimeError("boom")
        return [ValueError(p) if p == "bad" else p for p in payloads]

    batcher = Batcher(run, max_wait=0.1)
    batcher.start()
    out = _gather(batcher, [Job("k", 1, "good"), Job("k", 1, "bad")])
    assert out[0] == "good" and isinstance(out[1], ValueError)
    out = _gather(batcher, [Job("x", 1, "crash")])
    assert isinstance(out[0], RuntimeError)
    assert _gather(batcher, [Job("k", 1, "after")]) == ["after"]  # the worker lives on
    batcher.close()


def test_batcher_cancel_frees_the_slot_and_full_queue_refuses():
    gate = threading.Event()

    def run(key, payloads):
        gate.wait(5)
        return list(payloads)

    batcher = Batcher(run, max_wait=0.0, max_pending=2)
    batcher.start()

    async def main():
        first = Job("k", 1, "running")
        f1 = batcher.submit(first)
        while batcher.stats["running"] == 0:  # the worker holds the first job
            await asyncio.sleep(0.005)
        queued = [Job("k", 1, "q1"), Job("k", 1, "q2")]
        futures = [batcher.submit(j) for j in queued]
        with pytest.raises(QueueFull):
            batcher.submit(Job("k", 1, "one too many"))
        batcher.cancel(queued[0])  # the client went away: its slot is free again
        assert batcher.pending == 1 and futures[0].cancelled()
        f3 = batcher.submit(Job("k", 1, "q3"))
        gate.set()
        return await asyncio.gather(f1, futures[1], f3)

    assert asyncio.run(main()) == ["running", "q2", "q3"]
    assert batcher.stats["cancelled"] == 1
    batcher.close()


def test_batcher_close_finishes_the_queue():
    done = []

    def run(key, payloads):
        time.sleep(0.05)
        done.extend(payloads)
        return list(payloads)

    batcher = Batcher(run, max_wait=0.0, max_size=1)
    batcher.start()

    async def main():
        futures = [batcher.submit(Job("k", 1, i)) for i in range(4)]
        await asyncio.get_running_loop().run_in_executor(None, batcher.close)
        return await asyncio.gather(*futures)

    assert asyncio.run(main()) == [0, 1, 2, 3] and done == [0, 1, 2, 3]


def test_batcher_calls_on_idle_once_per_busy_period():
    idle = []
    batcher = Batcher(lambda key, payloads: list(payloads), max_wait=0.0, on_idle=lambda: idle.append(1),
                      idle_after=0.05)
    batcher.start()
    time.sleep(0.2)
    assert idle == []  # nothing ran yet: nothing to give back
    assert _gather(batcher, [Job("k", 1, "x")]) == ["x"]
    assert wait_for(lambda: idle == [1], timeout=5)
    time.sleep(0.2)
    assert idle == [1]  # once, not every idle_after
    _gather(batcher, [Job("k", 1, "y")])
    assert wait_for(lambda: idle == [1, 1], timeout=5)
    batcher.close()


def _rss_bytes() -> int:
    import resource

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
                    reason="malloc_trim is glibc's; elsewhere release_free_memory is a no-op returning False")
def test_release_free_memory_gives_freed_heap_back():
    """200 MB of heap blocks freed behind one live block stay in the process until malloc_trim returns them."""
    from g2gt.serve.memory import release_free_memory

    release_free_memory()
    blocks = [bytearray(100_000) for _ in range(2000)]  # below glibc's mmap threshold: on the heap
    keep = bytearray(100_000)  # a live block above them, so free() cannot shrink the heap by itself
    del blocks
    before = _rss_bytes()
    assert release_free_memory() is True
    assert before - _rss_bytes() > 100_000_000
    del keep


# --------------------------------------------------------------------------- formats
def test_decode_utf8_names_the_offset():
    assert decode_utf8("é".encode(), "x") == "é"
    with pytest.raises(RequestError, match=r"field: byte 3 \(0xff\)"):
        decode_utf8(b"abc\xffd", "field")


def test_horizontal_and_vertical_readers():
    sents = read_horizontal("The cat .\n\n  It sat\n")
    assert [s.forms for s in sents] == [["The", "cat", "."], ["It", "sat"]]
    sents = read_vertical("The\ncat\n\n\nIt\tPRON\nsat\n")
    assert [s.forms for s in sents] == [["The", "cat"], ["It", "sat"]]


def _mwt_sentence():
    s = sentence_from_tokens([("I", ["I"], True), ("don't", ["do", "n't"], True), ("know", ["know"], False),
                              (".", ["."], True)], sent_id="7")
    return s


def test_surface_tokens_merge_and_split_keep_multiword_tokens():
    s = _mwt_sentence()
    assert [(t["form"], w) for t, w in surface_tokens(s)] == [("I", [0]), ("don't", [1, 2]), ("know", [3]),
                                                               (".", [4])]
    pieces = limit_lengths([s], max_words=3, split=True)
    assert [p.forms for p in pieces] == [["I", "do", "n't"], ["know", "."]]
    assert [p.sent_id for p in pieces] == ["7.1", "7.2"]
    assert surface_tokens(pieces[1])[0][0]["misc"] == {"SpaceAfter": "No"}  # MISC kept
    merged = merge_sentences(pieces, "m")
    assert merged.forms == s.forms and merged.sent_id == "m"
    with pytest.raises(RequestError, match="5 words, over the limit of 3"):
        limit_lengths([s], max_words=3, split=False)
    assert limit_lengths([s], max_words=0, split=False) == [s]


def test_plaintext_writer_rebuilds_or_normalizes():
    (s,) = parse_conllu_string("1\tHi\t_\t_\t_\t_\t_\t_\t_\tSpacesBefore=\\s|SpacesAfter=\\n\\n\n"
                               "2\tthere\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n3\t!\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    assert write_plaintext([s]) == " Hi\n\nthere!\n"
    assert write_plaintext([s], normalized=True) == "Hi there!\n"


# --------------------------------------------------------------------------- request bodies
def test_urlencoded_and_multipart_bodies():
    pytest.importorskip("python_multipart")
    from g2gt.serve.udpipe import parse_multipart, parse_urlencoded

    assert parse_urlencoded(b"data=caf%C3%A9+au+lait&tagger=&x", "form") == {"data": "café au lait", "tagger": "",
                                                                            "x": ""}
    with pytest.raises(RequestError, match=r"form: parameter 'data': byte 1"):
        parse_urlencoded(b"data=a%E9", "form")
    encoded = base64.b64encode("naïve text".encode()).decode()
    body = ("--XYZ\r\nContent-Disposition: form-data; name=\"data\"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            f"{encoded}\r\n--XYZ\r\nContent-Disposition: form-data; name=\"parser\"\r\n\r\n\r\n--XYZ--\r\n").encode()
    assert parse_multipart(body, "multipart/form-data; boundary=XYZ") == {"data": "naïve text", "parser": ""}
    with pytest.raises(RequestError, match="boundary"):
        parse_multipart(body, "multipart/form-data")


# --------------------------------------------------------------------------- the batch runner
class _FakeParser:
    """A parse stage that 'parses' by copying and fails on the word BOOM."""

    calls = 0

    def parse(self, sentences, refine_steps=None, algorithm="mst", use_input_graph=False, batch_tokens=500,
              progress=False, keep=()):
        self.calls += 1
        if any("BOOM" in s.forms for s in sentences):
            raise ValueError("word BOOM cannot be parsed")
        return [s.copy() for s in sentences]


def _fake_model():
    from g2gt.serve.adapter import LoadedModel
    from g2gt.ud.pipeline import Pipeline

    nlp = Pipeline(tokenize=lambda t: [sentence_from_words(t.split())] if t.split() else [], parse=_FakeParser())
    return LoadedModel("fake", nlp)


def test_parse_service_isolates_the_request_that_fails():
    model = _fake_model()
    service = ParseService({"fake": model}, max_sentence_words=4)
    works = [Work(text="one two"), Work(text="x BOOM y"), Work(sentences=[sentence_from_words(["a", "b"])]),
             Work(text="far too many words here now")]
    out = service.run(Options("fake"), works)
    assert [s.forms for s in out[0]] == [["one", "two"]]
    assert isinstance(out[1], RequestError) and "BOOM" in str(out[1])
    assert [s.forms for s in out[2]] == [["a", "b"]]
    assert [len(s) for s in out[3]] == [4, 2]  # cut, not refused: raw text
    assert out[0].text == "one two" and out[0].model == "fake"
    assert model.nlp.parser.calls == 1 + 4  # one joint call, then each request alone to find the bad one
    assert [s.sent_id for s in out[0]] == ["1"]


def test_split_text_cuts_after_white_space_preferring_paragraphs():
    from g2gt.serve.pieces import split_text

    text = "One two three. Four five six.\n\nSeven eight. Nine ten eleven twelve.\nThirteen fourteen. " * 20
    for size in (15, 40, 90, 400):
        pieces = split_text(text, size)
        assert "".join(pieces) == text
        assert all(p and not p[0].isspace() for p in pieces)
        assert all(len(p.rstrip()) <= 2 * size for p in pieces)
    assert all(p.endswith("\n\n") for p in split_text(text, 90)[:-1])  # a blank line in every window
    assert split_text("x" * 35, 10) == ["x" * 10, "x" * 10, "x" * 15]  # no white space: hard cuts
    assert split_text("", 10) == [""]
