"""Run the app under uvicorn on a socket bound here (so ``port=0`` gets a free port whose number we can print).

uvicorn handles SIGTERM and SIGINT when it runs in the main thread: it stops accepting connections, lets the
requests in flight finish (up to ``graceful_timeout`` seconds), then runs the app's shutdown, which lets the
batcher finish its queue.
"""

from __future__ import annotations

import socket
import sys
from typing import Callable

__all__ = ["bind", "make_server", "announce"]


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: any free port; IPv6 when ``host`` has a colon)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on accepted sockets whose proto says TCP, and
    # without it a keep-alive response written in two parts waits ~40 ms for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def make_server(app: Callable, access_log: bool = False, graceful_timeout: int | None = 30,
                log_level: str = "warning"):
    """A ``uvicorn.Server`` for ``app`` (run it with ``server.run(sockets=[sock])``)."""
    import uvicorn

    config = uvicorn.Config(app, access_log=access_log, log_level=log_level, lifespan="on",
                            timeout_graceful_shutdown=graceful_timeout, server_header=False)
    return uvicorn.Server(config)


def announce(sock: socket.socket, models: list[str], workers: int, threads: int) -> None:
    """The line a person (or a test) waits for: where the server listens."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"g2gt serve: listening on http://{shown}:{port} (models: {', '.join(models)}; parse workers: "
          f"{workers}; torch threads: {threads})", file=sys.stderr, flush=True)
