"""The ASGI app of ``g2gt serve``: UDPipe's REST API, a JSON API, a web page; one dynamic batcher.

Routes::

    GET  /                  the web page (static/index.html; app.js and style.css under /static/)
    GET  /models            UDPipe: {"models": {name: components}, "default_model": name}
    GET|POST /process       UDPipe: tokenize / tag / parse (see g2gt.serve.udpipe)
    GET  /v1/models         the models with their descriptions, whether they predict enhanced UD, coreference
    POST /v1/parse          JSON in, a Document's JSON out (g2gt.ud.document; OpenAPI at /docs): its
                            sentences, and its entities with coref=true
    GET  /health            queue and batch counters (requests and words waiting, batches, pieces run ...)

Every request that needs a model becomes one job of the :class:`~g2gt.serve.batching.Batcher`, cut into
pieces of about ``piece_words`` words (:mod:`g2gt.serve.pieces`) that take turns with other requests' pieces;
while it runs, the handler also listens for the client going away and then takes the job back (its pieces not
run yet are dropped, its slot is free again), and stops it after ``request_timeout_s``. Mistakes are answered
400 (413 for a body over the limit, 503 with ``Retry-After`` when the queue is full, the time limit ran out or
the server is stopping) with one line of plain text. No route reads or writes a file named by the client: the
page's three files are read once, here, at start-up.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from ..ud.io import sentence_from_words
from .adapter import LoadedModel
from .batching import Batcher, Job, QueueFull, ShuttingDown
from .formats import RequestError, check_unicode, read_conllu_text
from .limits import BodyLimit
from .memory import release_free_memory
from .openapi_page import openapi_html
from .pieces import join_pieces, split_work
from .protocol import default_max_connections
from .schema import ParseRequest, ParseResponse
from .service import Options, ParseService, Work
from .udpipe import finish_process, models_json, plan_process, read_params, resolve_model

__all__ = ["ServeConfig", "create_app"]

log = logging.getLogger("g2gt.serve")
STATIC = Path(__file__).resolve().parent / "static"
STATIC_TYPES = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}


@dataclass
class ServeConfig:
    """Limits and batching of the server (the ``g2gt serve`` options of the same names)."""

    max_body_bytes: int = 4 * 2**20
    max_sentence_words: int = 500
    batch_wait_ms: float = 5.0
    batch_words: int = 2000
    max_pending: int = 1024
    workers: int = 1
    release_memory_s: float = 2.0  # give freed memory back after this long without requests (0 = never)
    batch_tokens: int = 500  # padded words per model call within a batch (length-sorted)
    piece_words: int = 500  # requests are cut into pieces of about this many words that take turns (0 = never)
    request_timeout_s: float = 120.0  # a request not answered after this long is stopped: 503 (0 = no limit)
    header_timeout_s: float = 10.0  # request line and headers must arrive within this (0 = no limit)
    body_timeout_s: float = 30.0  # the body must arrive within this after the headers (0 = no limit)
    # open connections (g2gt.serve.protocol: who makes room, who gets 503; 0 = no limit)
    max_connections: int = field(default_factory=default_max_connections)


class ClientGone(Exception):
    """The client closed the connection before its answer was ready."""


async def _disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def run_job(request: Request, batcher: Batcher, options: Options, work: Work, config: ServeConfig):
    """The request's :class:`~g2gt.ud.document.Document` (its pieces' joined), or the exception of the piece
    that failed; :class:`ClientGone` after taking the job back when the client disconnects first; a 503
    :class:`RequestError` when the queue is full, the server stops, or ``config.request_timeout_s`` passes."""
    if work.size > 8 * max(config.piece_words, 1):  # a large text's cuts are looked for off the event loop
        pieces = await asyncio.to_thread(split_work, work, config.piece_words, options.coref)
    else:
        pieces = split_work(work, config.piece_words, coref=options.coref)
    job = Job.of_pieces(options, [(p.size, p) for p in pieces])
    try:
        future = batcher.submit(job)
    except ShuttingDown as e:
        raise RequestError(f"{e}; try again shortly", status=503) from None
    except QueueFull as e:
        raise RequestError(f"server busy: {e}; try again shortly", status=503) from None
    gone = asyncio.ensure_future(_disconnected(request.receive))
    limit = config.request_timeout_s if config.request_timeout_s > 0 else None
    try:
        done, _ = await asyncio.wait((future, gone), timeout=limit, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        batcher.cancel(job)
        raise
    finally:
        if not gone.done():
            gone.cancel()
    if future in done:
        try:
            return join_pieces(work, future.result())
        except ShuttingDown as e:
            raise RequestError(str(e), status=503) from None
    batcher.cancel(job)
    if gone in done:
        raise ClientGone()
    raise RequestError(f"the request was not finished within {limit:g} s (g2gt serve --request-timeout) and was "
                       "stopped; send less text per request, or try again when the server is less busy",
                       status=503)


def _parse_answer(doc, req: ParseRequest) -> JSONResponse:
    """The JSON answer of ``/v1/parse``: the document's JSON, with each sentence's SVG and the CoNLL-U when asked."""
    try:
        out = doc.to_dict()  # the same JSON as g2gt.load()(text).to_json() and g2gt parse --format json
    except ValueError as e:  # CoNLL-U input whose Entity= brackets do not read
        raise RequestError(str(e)) from None
    if req.svg:
        from ..ud.draw import coref_marks
        from ..ud.io.svg import render_svg

        marks = coref_marks(doc) if "entities" in out else [()] * len(doc)
        for s, d, m in zip(doc, out["sentences"], marks):
            d["svg"] = render_svg(s, marks=m)
    if req.return_conllu:
        out["conllu"] = doc.conllu()
    return JSONResponse(out)


def _check_unicode(req: ParseRequest) -> None:
    """Every text field of ``req`` is valid Unicode (JSON lets a lone surrogate such as \\ud800 through)."""
    for name in ("text", "conllu", "model"):
        value = getattr(req, name)
        if value is not None:
            check_unicode(value, name)
    for i, words in enumerate(req.sentences or ()):
        for j, word in enumerate(words):
            check_unicode(word, f"sentences[{i}][{j}]")


def _plain(text: str, status: int, headers: dict | None = None) -> PlainTextResponse:
    """A plain-text answer; characters UTF-8 cannot encode (lone surrogates) are written as escapes."""
    return PlainTextResponse(text.encode("utf-8", "backslashreplace").decode("utf-8"), status_code=status,
                             headers=headers)


def _tokens_input(sentences: list[list[str]]) -> list:
    out = []
    for k, words in enumerate(sentences, 1):
        try:
            out.append(sentence_from_words(words, sent_id=str(k)))
        except ValueError as e:
            raise RequestError(f"sentences[{k - 1}]: {e}") from None
    return out


def _validation_message(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "invalid request"
    e = errors[0]
    loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"invalid request: {loc}: {e.get('msg', 'invalid')}{more}"


def create_app(models: Mapping[str, LoadedModel], config: ServeConfig | None = None) -> FastAPI:
    """The app serving ``models`` (name -> :class:`LoadedModel`; the first is the default)."""
    if not models:
        raise ValueError("create_app needs at least one model")
    config = config or ServeConfig()
    models = dict(models)
    service = ParseService(models, config.max_sentence_words, config.batch_tokens)
    batcher = Batcher(service.run, max_wait=config.batch_wait_ms / 1000, max_size=config.batch_words,
                      max_pending=config.max_pending, workers=config.workers,
                      on_idle=release_free_memory if config.release_memory_s > 0 else None,
                      idle_after=config.release_memory_s or 1.0)
    page = {name: (STATIC / name).read_text(encoding="utf-8") for name in ("index.html", *STATIC_TYPES)}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        batcher.start()
        yield
        await asyncio.get_running_loop().run_in_executor(None, batcher.close)

    app = FastAPI(title="g2gt serve", version=_version(), lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Universal Dependencies parsing over HTTP: UDPipe-compatible /models and /process, "
                              "a JSON API (/v1/parse) and a web page (/).")
    app.state.batcher, app.state.models, app.state.config = batcher, models, config
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)

    @app.exception_handler(RequestError)
    async def _request_error(request: Request, exc: RequestError):
        return _plain(str(exc), exc.status, {"Retry-After": "1"} if exc.status == 503 else None)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return _plain(_validation_message(exc), 400)

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone):
        return Response(status_code=499)  # nobody reads it

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):
        log.exception("internal error", exc_info=exc)
        return _plain(f"internal error: {type(exc).__name__}: {exc} (a bug: please report it)", 500)

    # ------------------------------------------------------------------ page
    @app.get("/", include_in_schema=False)
    async def index() -> HTMLResponse:
        return HTMLResponse(page["index.html"])

    @app.get("/docs", include_in_schema=False)
    async def api_docs() -> HTMLResponse:  # the OpenAPI schema as plain HTML: no CDN, works offline
        return HTMLResponse(openapi_html(app.openapi()))

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in STATIC_TYPES:
            return PlainTextResponse(f"no such file: {name}", status_code=404)
        return Response(page[name], media_type=STATIC_TYPES[name])

    # ------------------------------------------------------------------ UDPipe
    @app.get("/models", summary="UDPipe: the models and their components")
    async def udpipe_models() -> dict:
        return models_json(models)

    process_doc = dict(summary="UDPipe: tokenize, tag and parse",
                       description="UDPipe 2's parameters: data, model, tokenizer, input, tagger, parser, output "
                                   "(query string, url-encoded or multipart/form-data body).")

    @app.get("/process", operation_id="udpipe_process_get", **process_doc)
    @app.post("/process", operation_id="udpipe_process_post", **process_doc)
    async def udpipe_process(request: Request) -> JSONResponse:
        body = await request.body() if request.method == "POST" else b""
        params = read_params(request.scope.get("query_string", b""), request.method,
                             request.headers.get("content-type", ""), body)
        plan = plan_process(models, params)
        sentences = plan.work.sentences
        if plan.options is not None:
            sentences = await run_job(request, batcher, plan.options, plan.work, config)
        return await asyncio.to_thread(lambda: JSONResponse(finish_process(plan, sentences)))

    # ------------------------------------------------------------------ JSON API
    @app.get("/v1/models", summary="the models served")
    async def v1_models() -> dict:
        return {"default_model": next(iter(models)),
                "models": [{"name": n, "description": m.description, "components": m.components,
                            "enhanced": m.has_enhancer, "coref": m.has_coref} for n, m in models.items()]}

    @app.post("/v1/parse", summary="parse text, tokenized sentences or CoNLL-U",
              responses={200: {"model": ParseResponse}})
    async def v1_parse(req: ParseRequest, request: Request) -> JSONResponse:
        _check_unicode(req)
        given = [k for k in ("text", "sentences", "conllu") if getattr(req, k) is not None]
        if len(given) != 1:
            raise RequestError("give exactly one of text, sentences or conllu" +
                               (f" (got {', '.join(given)})" if given else ""))
        model = resolve_model(models, req.model)
        if req.enhanced and not model.has_enhancer:
            raise RequestError(f"enhanced: the model {model.name!r} has no enhanced-UD part")
        if req.coref and not model.has_coref:
            with_coref = [n for n, m in models.items() if m.has_coref]
            raise RequestError(f"coref: the model {model.name!r} has no coreference stage (coref.pt in its "
                               "folder); " + (f"models with one: {', '.join(with_coref)}" if with_coref else
                                              "none of the models served has one"))
        if req.text is not None:
            work = Work(text=req.text, presegmented=req.presegmented, id_prefix="s")
        elif req.sentences is not None:
            work = Work(sentences=_tokens_input(req.sentences))
        else:
            work = Work(sentences=read_conllu_text(req.conllu or ""), split_long=False)
        doc = await run_job(request, batcher, Options(model.name, enhanced=req.enhanced, coref=req.coref), work,
                            config)
        # written in a thread: a large answer's JSON would hold the event loop (every other client) meanwhile
        return await asyncio.to_thread(_parse_answer, doc, req)

    @app.get("/health", summary="queue and batch counters")
    async def health() -> dict:
        return {"status": "ok", "pending": batcher.pending, "queued_words": batcher.queued_size, **batcher.stats}

    return app


def _version() -> str:
    from .._version import __version__

    return __version__
