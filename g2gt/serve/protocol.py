"""HTTP connections with deadlines and a bound on their number: uvicorn's httptools protocol, stricter.

* ``header_timeout``: a request's line and headers must arrive within this many seconds, counted from the
  connection's start (or from the first byte of a later request on a keep-alive connection); else the
  connection gets ``408`` and is closed. A client that connects and sends nothing is closed the same way.
* ``body_timeout``: the body must arrive within this many seconds after the headers; else ``408`` and closed
  (the app sees the client go away, so a request that is still being read never reaches a worker).
* ``max_connections``: at most this many connections are open. One more makes room by closing the connection
  that has waited longest for its request's headers, if that is at least a second (a quarter of
  ``header_timeout`` if less; it gets ``408``): clients that send a request at once still get in while slow
  ones hold the slots. Otherwise (all connections are younger, reading a body or being answered) the new one
  gets ``503`` with ``Retry-After`` and is closed at once. So half-sent requests can neither use up the
  process's file descriptors nor lock out other clients.

Idle keep-alive connections are closed by uvicorn after ``timeout_keep_alive`` seconds, as before.
"""

from __future__ import annotations

import asyncio
import logging

__all__ = ["limited_protocol", "default_max_connections"]

log = logging.getLogger("g2gt.serve")
REASONS = {408: b"Request Timeout", 503: b"Service Unavailable"}


def _response(status: int, text: str, retry_after: int | None = None) -> bytes:
    body = text.encode("utf-8")
    head = [b"HTTP/1.1 %d %s\r\n" % (status, REASONS[status]), b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: %d\r\n" % len(body), b"connection: close\r\n"]
    if retry_after is not None:
        head.append(b"retry-after: %d\r\n" % retry_after)
    return b"".join(head) + b"\r\n" + body


def default_max_connections() -> int:
    """The default bound on open connections: the process's open-file limit less 128 (for the models, logs and
    listening socket), at most 10,000, at least 64; 1,000 where the limit cannot be read."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 1000
    if soft == resource.RLIM_INFINITY:
        return 10_000
    return max(64, min(10_000, soft - 128))


def limited_protocol(header_timeout: float, body_timeout: float, max_connections: int) -> type:
    """uvicorn's ``HttpToolsProtocol`` with the limits of the module docstring (0 = no limit), for
    ``uvicorn.Config(http=...)``."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError as e:  # httptools is part of the serve extra
        raise ImportError(f"g2gt serve needs httptools ({e}): pip install 'g2gt[serve]'") from None

    waiting: dict[LimitedProtocol, float] = {}  # connections waiting for headers, oldest first: when it started
    # a connection younger than this is never closed to make room (a client that sends its request at once is
    # read within milliseconds; a flood of new connections must not push it out before)
    min_wait = min(1.0, header_timeout / 4) if header_timeout > 0 else 1.0

    class LimitedProtocol(HttpToolsProtocol):
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if max_connections and len(self.connections) > max_connections:
                oldest, since = next(iter(waiting.items()), (None, 0.0))
                if oldest is not None and self.loop.time() - since >= min_wait:  # it makes room
                    oldest._close(408, f"request headers not received after {self.loop.time() - since:.1f} s, "
                                       "and the server needed the connection (g2gt serve --max-connections); "
                                       "send the whole request at once")
                else:
                    log.debug("refused a connection: %d open (g2gt serve --max-connections)",
                              len(self.connections) - 1)
                    transport.write(_response(503, f"server busy: {max_connections} connections are open "
                                                   "(g2gt serve --max-connections); try again shortly", 1))
                    transport.close()
                    return
            self._arm(header_timeout, "headers")

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._timer is None:  # a later request on a keep-alive connection: its own deadline
                self._arm(header_timeout, "headers")

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()
            if not self.pipeline:  # a pipelined request is not read until the one before it is answered
                self._arm(body_timeout, "body")

        def on_message_complete(self) -> None:
            self._disarm()
            super().on_message_complete()

        def _arm(self, seconds: float, part: str) -> None:
            self._disarm()
            if part == "headers":
                waiting[self] = self.loop.time()
            if seconds > 0:
                self._timer = self.loop.call_later(seconds, self._expired, seconds, part)

        def _disarm(self) -> None:
            waiting.pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self, seconds: float, part: str) -> None:
            option = "--header-timeout" if part == "headers" else "--body-timeout"
            self._close(408, f"request {part} not received within {seconds:g} s (g2gt serve {option}); send the "
                             "whole request at once", part == "body")

        def _close(self, status: int, text: str, reading_body: bool = False) -> None:
            """Answer ``status`` (unless an answer has started) and close; the app, if it runs, sees the client
            go away and answers nothing more."""
            self._disarm()
            if self.transport.is_closing():
                return
            cycle = self.cycle if reading_body else None
            if cycle is None or not cycle.response_started:
                self.transport.write(_response(status, text))
            if cycle is not None:
                cycle.disconnected = True
                cycle.message_event.set()
            self.transport.close()

    return LimitedProtocol
