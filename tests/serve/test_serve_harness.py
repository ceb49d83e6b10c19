"""Helpers for the ``g2gt serve`` tests (no tests here): a real uvicorn server on a free loopback port, in a
thread of the test process (so the model is loaded once), and a small HTTP client on ``http.client``."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import uuid

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'g2gt[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install 'g2gt[serve]'")

from g2gt.serve.server import bind, make_server  # noqa: E402


class LiveServer:
    """``app`` served by uvicorn on ``127.0.0.1:<free port>`` in a daemon thread."""

    def __init__(self, app, graceful_timeout: int = 5) -> None:
        self.app = app
        self.sock = bind("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.server = make_server(app, graceful_timeout=graceful_timeout)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: bytes | str | None = None,
                headers: dict | None = None, timeout: float = 60) -> tuple[int, bytes]:
        return http_request(self.port, method, path, body, headers, timeout)

    def json(self, path: str, payload: dict) -> tuple[int, dict | str]:
        status, data = self.request("POST", path, json.dumps(payload), {"Content-Type": "application/json"})
        text = data.decode("utf-8")
        return status, (json.loads(text) if status == 200 else text)

    def health(self) -> dict:
        return json.loads(self.request("GET", "/health")[1])


def http_request(port: int, method: str, path: str, body: bytes | str | None = None, headers: dict | None = None,
                 timeout: float = 60) -> tuple[int, bytes]:
    """One request on a fresh connection: ``(status, body)``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if isinstance(body, str):
            body = body.encode("utf-8")
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def multipart(fields: dict[str, str | bytes]) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body (raw 8-bit parts) and its Content-Type."""
    boundary = uuid.uuid4().hex
    out = []
    for name, value in fields.items():
        data = value.encode("utf-8") if isinstance(value, str) else value
        out.append(f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n"
                   "Content-Type: text/plain; charset=utf-8\r\n\r\n".encode("ascii") + data + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode("ascii"))
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


def read_until_closed(sock: socket.socket, timeout: float) -> tuple[bytes, float]:
    """Everything ``sock`` receives until the server closes it (or ``timeout`` passes), and the seconds taken."""
    start = time.monotonic()
    sock.settimeout(timeout)
    data = b""
    try:
        while time.monotonic() - start < timeout:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return data, time.monotonic() - start


def wait_for(predicate, timeout: float = 10.0, step: float = 0.02) -> bool:
    """Poll ``predicate()`` until it is true (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())
