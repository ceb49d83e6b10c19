"""ASGI middleware that reads each request body once, within a size limit, before the app sees it.

* a body over ``max_bytes`` (by its ``Content-Length`` or by what arrives) -> ``413`` with a plain-text message,
  without reading the rest;
* a JSON or ``text/*`` body that is not UTF-8 -> ``400`` naming the offset of the first bad byte (form bodies
  are checked field by field by :mod:`g2gt.serve.udpipe`);
* otherwise the app gets the whole body in one message, and later ``receive()`` calls go to the server, so a
  handler can still learn that the client went away (``http.disconnect``).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from .formats import RequestError, decode_utf8

__all__ = ["BodyLimit"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


async def plain_response(send: Send, status: int, text: str) -> None:
    """Send a whole plain-text response from ASGI middleware."""
    body = text.encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode("ascii")), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """See the module docstring. ``max_bytes``: the largest body accepted."""

    def __init__(self, app: Callable, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> str:
        return (f"request body too large: the limit is {self.max_bytes:,} bytes (g2gt serve --max-body-mb); "
                "send less text per request")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"").strip()
        if length.isdigit() and int(length) > self.max_bytes:
            await plain_response(send, 413, self._too_large())
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # nobody to answer
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await plain_response(send, 413, self._too_large())
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        ctype = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if body and (ctype == b"application/json" or ctype.startswith(b"text/")):
            try:
                decode_utf8(body, "request body")
            except RequestError as e:
                await plain_response(send, 400, str(e))
                return
        delivered = False

        async def replay() -> dict:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
