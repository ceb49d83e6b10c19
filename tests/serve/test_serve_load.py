"""``g2gt serve`` with the shipped model under a mixed load for ~20 s (slow suite: ``pytest -m slow``): clients
sending one sentence, a client sending ~4,000 words at a time, and 100 clients that send half a request's
headers and then trickle a byte now and then. Every real request is answered 200, the small ones far sooner
than the large ones, every slow client is closed after the header timeout, and the connections are all gone
after the load."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from test_serve_harness import LiveServer, wait_for

from g2gt.data import EWT_SAMPLE_DEV
from g2gt.serve.adapter import load_models
from g2gt.serve.app import ServeConfig, create_app
from g2gt.ud.io import read_conllu

SECONDS = 20.0
HEADER_TIMEOUT = 1.0


def _slow_client(port: int, until: float, closed: list[tuple[float, bytes]]) -> None:
    while time.monotonic() < until:
        start = time.monotonic()
        sock = socket.create_connection(("127.0.0.1", port))
        sock.settimeout(0.3)
        sock.sendall(b"POST /v1/parse HTTP/1.1\r\nHost: x\r\n")
        data = b""
        try:
            while time.monotonic() < until + 5:
                try:
                    chunk = sock.recv(4096)
                except socket.timeout:
                    sock.sendall(b"X")  # one more byte of a header that never ends
                    continue
                if not chunk:
                    closed.append((time.monotonic() - start, data))
                    break
                data += chunk
        except OSError:
            closed.append((time.monotonic() - start, data))
        finally:
            sock.close()


@pytest.mark.slow
def test_mixed_sizes_and_slow_clients():
    models = load_models(["en_combined"])
    texts = [s.text for s in read_conllu(EWT_SAMPLE_DEV)]
    small = [t for t in texts if 8 <= len(t.split()) <= 15][:20]
    large = " ".join(texts[:240])  # ~4,500 words
    config = ServeConfig(header_timeout_s=HEADER_TIMEOUT, body_timeout_s=HEADER_TIMEOUT, release_memory_s=0)
    latencies: dict[str, list[float]] = {"small": [], "large": []}
    statuses: list[int] = []
    closed: list[tuple[float, bytes]] = []
    with LiveServer(create_app(models, config)) as live:
        until = time.monotonic() + SECONDS

        def client(size: str) -> None:
            k = 0
            while time.monotonic() < until:
                text = large if size == "large" else small[k % len(small)]
                k += 1
                t0 = time.monotonic()
                status, _ = live.request("POST", "/v1/parse", json.dumps({"text": text}),
                                         {"Content-Type": "application/json"}, timeout=120)
                latencies[size].append(time.monotonic() - t0)
                statuses.append(status)

        threads = [threading.Thread(target=client, args=(size,)) for size in ("large", "small", "small", "small")]
        threads += [threading.Thread(target=_slow_client, args=(live.port, until, closed)) for _ in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        assert wait_for(lambda: not live.server.server_state.connections, timeout=10)
        assert live.request("GET", "/health")[0] == 200
    assert statuses and set(statuses) == {200}
    assert len(latencies["large"]) >= 1 and len(latencies["small"]) >= 10
    small_sorted = sorted(latencies["small"])
    p99 = small_sorted[min(len(small_sorted) - 1, int(0.99 * len(small_sorted)))]
    assert p99 < max(latencies["large"])  # a sentence never waits for a whole large request
    assert len(closed) >= 100
    assert all(data.startswith(b"HTTP/1.1 408") for _, data in closed if data)
    assert max(seconds for seconds, _ in closed) < HEADER_TIMEOUT + 5
