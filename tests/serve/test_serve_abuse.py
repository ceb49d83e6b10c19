"""``g2gt serve`` under abuse, with a stand-in model (no weights; every word costs a little sleep): text that is
not valid Unicode, a small request behind a big one, a client that goes away mid-request, half-sent requests,
too many connections, and SIGTERM with requests still unfinished."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import pytest

from stub_model import StubModel, word_lists
from test_serve_harness import LiveServer, read_until_closed, wait_for

from g2gt.serve.app import ServeConfig, create_app
from g2gt.serve.batching import Batcher, Job


def stub_server(delay: float = 0.0, graceful_timeout: int = 5, **config) -> tuple[LiveServer, StubModel]:
    model = StubModel(delay=delay)
    app = create_app({"stub": model}, ServeConfig(batch_wait_ms=0, release_memory_s=0, **config))
    return LiveServer(app, graceful_timeout=graceful_timeout), model


@pytest.fixture(scope="module")
def quick():
    live, _ = stub_server(header_timeout_s=0.5, body_timeout_s=0.5, max_connections=50)
    with live:
        yield live


def post_json_raw(port: int, body: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST /v1/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return sock


# --------------------------------------------------------------------------- text that is not Unicode
@pytest.mark.parametrize("payload, field", [
    ('{"text": "fine \\ud800 text"}', "text"),
    ('{"sentences": [["ok"], ["also", "bad\\udc00"]]}', "sentences[1][1]"),
    ('{"conllu": "1\\tx\\ud83d\\t_\\t_\\t_\\t_\\t0\\troot\\t_\\t_\\n"}', "conllu"),
    ('{"text": "Hello.", "model": "\\ud800"}', "model"),
])
def test_a_lone_surrogate_is_400_naming_the_field(quick, payload, field):
    status, data = quick.request("POST", "/v1/parse", payload, {"Content-Type": "application/json"})
    text = data.decode("utf-8")
    assert status == 400, text
    assert text.startswith(f"{field}: character ") and "lone surrogate" in text


# --------------------------------------------------------------------------- fair turns
def test_batcher_gives_a_new_job_the_next_turn():
    gate, calls = threading.Event(), []

    def run(key, payloads):
        gate.wait(5)
        calls.append(list(payloads))
        return [p.upper() for p in payloads]

    batcher = Batcher(run, max_wait=0.0, max_size=2)
    batcher.start()

    async def main():
        big = batcher.submit(Job.of_pieces("k", [(1, f"big{i}") for i in range(6)]))
        while batcher.stats["running"] == 0:  # the worker holds big0 and big1
            await asyncio.sleep(0.005)
        small = batcher.submit(Job("k", 1, "small"))
        gate.set()
        return await asyncio.gather(big, small)

    big, small = asyncio.run(main())
    batcher.close()
    assert calls == [["big0", "big1"], ["small", "big2"], ["big3", "big4"], ["big5"]]
    assert big == [f"BIG{i}" for i in range(6)] and small == "SMALL"


def test_a_small_request_is_answered_before_a_big_one_started_earlier():
    live, model = stub_server(delay=0.002, piece_words=50, batch_words=50)
    big = word_lists(60, 10, "big")  # 600 words: 12 pieces of 0.1 s
    answers: dict[str, tuple[float, int, dict]] = {}

    def send(name: str, sentences: list) -> None:
        status, out = live.json("/v1/parse", {"sentences": sentences})
        answers[name] = (time.monotonic(), status, out)

    with live:
        batcher = live.app.state.batcher
        first = threading.Thread(target=send, args=("big", big))
        first.start()
        assert wait_for(lambda: model.words > 0, timeout=10), "the big request never ran"
        send("small", word_lists(1, 6, "small"))
        first.join(60)
    assert answers["small"][1] == 200 and answers["big"][1] == 200
    assert answers["small"][0] < answers["big"][0]  # not stuck behind the rest of the big one
    assert batcher.stats["pieces"] >= 13
    sentences = answers["big"][2]["sentences"]  # the pieces joined: whole, in order, numbered as one
    assert [[w["text"] for w in s["words"]] for s in sentences] == big
    assert [s["id"] for s in sentences] == [str(k) for k in range(1, 61)]


# --------------------------------------------------------------------------- a client that goes away
def test_a_client_that_goes_away_stops_its_request_between_pieces():
    live, model = stub_server(delay=0.005, piece_words=20, batch_words=20)
    with live:
        batcher = live.app.state.batcher
        sock = post_json_raw(live.port, json.dumps({"sentences": word_lists(40, 10)}).encode())  # 20 pieces
        assert wait_for(lambda: model.words > 0, timeout=10), "the request never ran"
        sock.close()
        assert wait_for(lambda: batcher.stats["cancelled"] == 1 and batcher.stats["running"] == 0, timeout=10)
        words, pieces = model.words, batcher.stats["pieces"]
        time.sleep(0.3)
        assert model.words == words and batcher.stats["pieces"] == pieces  # nothing more of it ran
        assert words <= 100 and pieces <= 5  # of 400 words in 20 pieces
        assert live.json("/v1/parse", {"sentences": [["next"]]})[0] == 200


def test_a_request_over_the_time_limit_is_stopped_with_503():
    live, model = stub_server(delay=0.005, piece_words=20, batch_words=20, request_timeout_s=0.5)
    with live:
        batcher = live.app.state.batcher
        status, data = live.request("POST", "/v1/parse", json.dumps({"sentences": word_lists(40, 10)}),
                                    {"Content-Type": "application/json"})  # 2 s of work
        assert status == 503 and b"not finished within 0.5 s (g2gt serve --request-timeout)" in data
        assert wait_for(lambda: batcher.stats["running"] == 0, timeout=10)
        assert model.words <= 200  # of 400: the rest was dropped
        assert live.json("/v1/parse", {"sentences": [["next"]]})[0] == 200


# --------------------------------------------------------------------------- slow and half-sent clients
@pytest.mark.parametrize("sent, part", [
    (b"", "headers"),
    (b"POST /v1/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", "headers"),
    (b"POST /v1/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
     b'{"text": "half', "body"),
    (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\n", "headers"),  # keep-alive, then half
])
def test_a_half_sent_request_is_closed_after_the_read_timeout(quick, sent, part):
    sock = socket.create_connection(("127.0.0.1", quick.port))
    try:
        if sent:
            sock.sendall(sent)
        data, seconds = read_until_closed(sock, timeout=10)
    finally:
        sock.close()
    last = data[data.rfind(b"HTTP/1.1 "):]
    assert last.startswith(b"HTTP/1.1 408"), data
    assert f"request {part} not received within 0.5 s".encode() in last
    assert seconds < 5  # closed by the server after its 0.5 s, not by this test's 10 s
    assert quick.request("GET", "/health")[0] == 200


def test_at_the_bound_the_longest_waiting_half_sent_request_makes_room():
    live, _ = stub_server(header_timeout_s=10, max_connections=2)
    with live:
        idle = [socket.create_connection(("127.0.0.1", live.port)) for _ in range(2)]
        assert wait_for(lambda: len(live.server.server_state.connections) == 2, timeout=5)
        idle[1].sendall(b"GET /health HTTP/1.1\r\n")  # half of its headers
        time.sleep(1.1)  # a connection that waited less than a second is never closed to make room
        assert live.request("GET", "/health")[0] == 200  # a third connection gets in
        data, seconds = read_until_closed(idle[0], timeout=5)  # the oldest is closed to make room
        assert data.startswith(b"HTTP/1.1 408") and b"needed the connection" in data and seconds < 2
        later = socket.create_connection(("127.0.0.1", live.port))  # the bound again: idle[1] + later
        assert live.request("GET", "/health")[0] == 200  # now idle[1], the older of the two, makes room
        data, _ = read_until_closed(idle[1], timeout=5)
        assert data.startswith(b"HTTP/1.1 408")
        later.close()
        for sock in idle:
            sock.close()


def test_at_the_bound_a_connection_younger_than_a_second_is_not_pushed_out():
    live, _ = stub_server(header_timeout_s=10, max_connections=1)
    with live:
        young = socket.create_connection(("127.0.0.1", live.port))
        assert wait_for(lambda: len(live.server.server_state.connections) == 1, timeout=5)
        assert live.request("GET", "/health")[0] == 503
        young.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # it sends its request: answered
        data, _ = read_until_closed(young, timeout=1)
        young.close()
        assert data.startswith(b"HTTP/1.1 200")


def test_at_the_bound_with_every_connection_busy_a_new_one_gets_503_at_once():
    live, _ = stub_server(body_timeout_s=10, max_connections=2)
    with live:
        busy = []
        for _ in range(2):  # headers sent, body still coming: not waiting for headers
            sock = socket.create_connection(("127.0.0.1", live.port))
            sock.sendall(b"POST /v1/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{")
            busy.append(sock)
        assert wait_for(lambda: len(live.server.server_state.connections) == 2, timeout=5)
        time.sleep(0.2)
        extra = socket.create_connection(("127.0.0.1", live.port))
        data, seconds = read_until_closed(extra, timeout=5)
        extra.close()
        assert data.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in data and seconds < 2
        for sock in busy:
            sock.close()
        assert wait_for(lambda: not live.server.server_state.connections, timeout=5)
        assert live.request("GET", "/health")[0] == 200


# --------------------------------------------------------------------------- SIGTERM
def test_shutdown_answers_unfinished_requests_503_and_exits_promptly():
    live, model = stub_server(delay=0.01, graceful_timeout=2, piece_words=20, batch_words=20)
    answers: list[tuple[int, str, dict]] = []

    def send(n: int) -> None:
        status, data = live.request("POST", "/v1/parse", json.dumps({"sentences": word_lists(n, 10)}),
                                    {"Content-Type": "application/json"}, timeout=30)
        answers.append((status, data.decode("utf-8")))

    with live:
        batcher = live.app.state.batcher
        clients = [threading.Thread(target=send, args=(100,)) for _ in range(2)]  # 10 s of work each
        for t in clients:
            t.start()
        assert wait_for(lambda: batcher.stats["jobs"] == 2 and model.words > 0, timeout=10)
        start = time.monotonic()
        live.server.should_exit = True  # what SIGTERM does
        assert wait_for(lambda: not live.server.servers or not any(x.is_serving() for x in live.server.servers),
                        timeout=5)
        with pytest.raises(OSError):  # no new connections
            live.request("GET", "/health", timeout=5)
        for t in clients:
            t.join(30)
        live.thread.join(30)
        stopped = time.monotonic() - start
    assert [status for status, _ in answers] == [503, 503]
    assert all("shutting down" in text for _, text in answers)
    assert stopped < 2 + 1.5  # the grace period, then at once (not after the queue's 20 s of work)
    assert batcher.stats["refused_at_shutdown"] == 2
