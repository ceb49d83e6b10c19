"""Run the app under uvicorn on a socket bound here (so ``port=0`` gets a free port whose number we can print).

uvicorn handles SIGTERM and SIGINT when it runs in the main thread: it stops accepting connections and lets the
requests in flight finish (up to ``graceful_timeout`` seconds), then runs the app's shutdown. The server made
here also tells the app's batcher (``app.state.batcher``) at once: it refuses new requests (503), keeps
working through the accepted ones, and a little before the grace period ends answers those still unfinished
with 503 (:meth:`g2gt.serve.batching.Batcher.drain`), so every client gets an answer, never a 500, and the
process exits as soon as the answers are out.

Connections get the read deadlines and the bound of :mod:`g2gt.serve.protocol`.
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


def drain_grace(graceful_timeout: float) -> float:
    """Seconds after SIGTERM at which requests still unfinished get 503: the grace period less a margin (a
    fifth of it, at most 2 s) for those answers to go out before uvicorn would cancel the handlers."""
    return max(0.0, graceful_timeout - min(2.0, graceful_timeout / 5))


def make_server(app: Callable, access_log: bool = False, graceful_timeout: int | None = 30,
                log_level: str = "warning", keep_alive: float = 5.0):
    """A ``uvicorn.Server`` for ``app`` (run it with ``server.run(sockets=[sock])``); the read timeouts and the
    bound on connections (:mod:`g2gt.serve.protocol`) are those of the app's ``ServeConfig``."""
    import uvicorn

    from .app import ServeConfig
    from .protocol import limited_protocol

    limits = getattr(getattr(app, "state", None), "config", None) or ServeConfig()

    class Server(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            batcher = getattr(getattr(app, "state", None), "batcher", None)
            if batcher is not None:
                batcher.drain(None if graceful_timeout is None else drain_grace(graceful_timeout))
            await super().shutdown(sockets)

    config = uvicorn.Config(app, access_log=access_log, log_level=log_level, lifespan="on",
                            timeout_graceful_shutdown=graceful_timeout, server_header=False,
                            http=limited_protocol(limits.header_timeout_s, limits.body_timeout_s,
                                                  limits.max_connections),
                            timeout_keep_alive=keep_alive)
    return Server(config)


def announce(sock: socket.socket, models: list[str], workers: int, threads: int) -> None:
    """The line a person (or a test) waits for: where the server listens."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"g2gt serve: listening on http://{shown}:{port} (models: {', '.join(models)}; parse workers: "
          f"{workers}; torch threads: {threads})", file=sys.stderr, flush=True)
