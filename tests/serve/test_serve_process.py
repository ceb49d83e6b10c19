"""``g2gt serve`` as a process: it binds 127.0.0.1 by default, a port in use is a one-line error, and SIGTERM
lets the request in flight finish before the process exits 0."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from test_serve_harness import http_request, wait_for

from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.io import read_conllu


def _start(*args: str) -> tuple[subprocess.Popen, int, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "g2gt", "serve", "--port", "0", "--threads", "1", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    line = ""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        m = re.search(r"listening on http://([\d.]+):(\d+)", line)
        if m:
            return proc, int(m.group(2)), m.group(1)
    proc.kill()
    raise AssertionError(f"g2gt serve did not start: {line!r} {proc.stderr.read()}")


def test_sigterm_finishes_the_request_in_flight_then_exits():
    proc, port, host = _start()
    try:
        assert host == "127.0.0.1"  # loopback unless --host says otherwise
        busy = subprocess.run([sys.executable, "-m", "g2gt", "serve", "--port", str(port)], capture_output=True,
                              text=True, timeout=120)
        assert busy.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in busy.stderr
        text = " ".join(s.text for s in read_conllu(EWT_SAMPLE_DEV)[:120])  # a few seconds of parsing
        answer = {}

        def client():
            answer["reply"] = http_request(port, "POST", "/v1/parse", json.dumps({"text": text}),
                                           {"Content-Type": "application/json"}, timeout=120)

        t = threading.Thread(target=client)
        t.start()

        def running() -> bool:
            status, data = http_request(port, "GET", "/health")
            return status == 200 and json.loads(data)["running"] > 0

        assert wait_for(running, timeout=30, step=0.01), "the request never reached a worker"
        proc.send_signal(signal.SIGTERM)
        t.join(120)
        status, data = answer["reply"]
        assert status == 200
        words = sum(len(s["words"]) for s in json.loads(data)["sentences"])
        assert words > 1000  # the whole answer, not a cut one
        assert proc.wait(60) == 0
        with pytest.raises(OSError):
            http_request(port, "GET", "/models", timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
