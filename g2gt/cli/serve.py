"""``g2gt serve``: the parsing server (:mod:`g2gt.serve`; needs ``pip install 'g2gt[serve]'``)."""

from __future__ import annotations

import argparse
import signal
import sys

from .common import UsageError, add_common_options, apply_runtime, non_negative_int, positive_int

EXAMPLES = (
    "  g2gt serve                                   # en_combined on http://127.0.0.1:8000 (web page at /)\n"
    "  g2gt serve --model en_combined --model mine=runs/export --port 8080 --threads 2\n"
    "  curl -s http://127.0.0.1:8000/process -d tokenizer= -d tagger= -d parser= --data-urlencode 'data=Hi there.'\n"
)


def register(subparsers) -> None:
    subparsers.add_parser("serve", help="serve models over HTTP: UDPipe-compatible API, JSON API, web page",
                          configure=_configure)


def _configure(p: argparse.ArgumentParser) -> None:
    p.description = ("Load the models once and parse over HTTP: UDPipe's REST API (GET /models, GET|POST "
                     "/process), a JSON API (POST /v1/parse, OpenAPI at /docs) and a web page at /. "
                     "Concurrent requests are parsed together in one batch; large requests are cut into pieces "
                     "that take turns with the others, so a short request never waits for a long one to finish. "
                     "SIGTERM (or Ctrl-C) stops accepting, finishes the requests accepted within "
                     "--graceful-timeout, answers any still unfinished 503, then exits.")
    p.epilog = "examples:\n" + EXAMPLES
    p.add_argument("--model", action="append", metavar="NAME|DIR|NAME=DIR",
                   help="a shipped model, a model folder, or NAME=DIR to serve it as NAME; repeat for several "
                        "(the first is the default; default: en_combined)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=non_negative_int, default=8000, help="TCP port (default: 8000; 0 = any free port)")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="parse workers: batches run at once, threads sharing the loaded models (default: 1)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "int8"],
                   help="the parser's inference precision (default: auto, see 'g2gt parse --help')")
    p.add_argument("--max-body-mb", type=float, default=4.0,
                   help="largest request body in MiB; larger ones get 413 (default: 4)")
    p.add_argument("--max-sentence-words", type=non_negative_int, default=500,
                   help="longest sentence in words: longer ones from raw text or word lists are cut, from "
                        "CoNLL-U refused with 400 (default: 500; 0 = no limit)")
    p.add_argument("--batch-wait-ms", type=float, default=5.0,
                   help="longest wait of a request for others to share its batch (default: 5)")
    p.add_argument("--batch-words", type=positive_int, default=2000,
                   help="words per batch, about (default: 2000)")
    p.add_argument("--max-pending", type=positive_int, default=1024,
                   help="requests that may wait for a worker; more get 503 with Retry-After (default: 1024)")
    p.add_argument("--piece-words", type=non_negative_int, default=500,
                   help="requests are cut into pieces of about this many words, and the workers take the "
                        "pieces of all waiting requests in turn (default: 500; 0 = never cut)")
    p.add_argument("--request-timeout", type=float, default=120.0, metavar="SECONDS",
                   help="a request not answered after this long is stopped and gets 503 (default: 120; "
                        "0 = no limit)")
    p.add_argument("--header-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="a request's line and headers must arrive within this long after it starts, else "
                        "408 and the connection is closed (default: 10; 0 = no limit)")
    p.add_argument("--body-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="a request's body must arrive within this long after its headers, else 408 and the "
                        "connection is closed (default: 30; 0 = no limit)")
    from ..serve.protocol import default_max_connections

    p.add_argument("--max-connections", type=non_negative_int, default=default_max_connections(),
                   help="open connections; one more closes the connection that has waited longest (a second or "
                        "more) for its request's headers (408), else it is answered 503 (default: the open-file "
                        "limit less 128, at most 10,000: here %(default)s; 0 = no limit)")
    p.add_argument("--release-memory-after", type=float, default=2.0, metavar="SECONDS",
                   help="give freed memory back to the system after this long without requests (default: 2; "
                        "0 = never)")
    p.add_argument("--graceful-timeout", type=non_negative_int, default=30,
                   help="seconds to finish the requests accepted before SIGTERM; those still unfinished a "
                        "little before it ends get 503 (default: 30)")
    p.add_argument("--access-log", action="store_true", help="log every request on stdout")
    add_common_options(p, uses=("device", "threads", "batch_tokens", "debug"), batch_tokens=500)
    p.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    try:
        import fastapi  # noqa: F401
        import httptools  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise UsageError(f"g2gt serve needs the serve extra ({e.name} is missing): pip install 'g2gt[serve]'") from None
    if args.max_body_mb <= 0 or args.batch_wait_ms < 0:
        raise UsageError("--max-body-mb must be > 0 and --batch-wait-ms >= 0")
    for flag in ("request_timeout", "header_timeout", "body_timeout"):
        if getattr(args, flag) < 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be >= 0 seconds (0 = no limit)")
    device = apply_runtime(args)
    from ..serve.server import announce, bind, make_server

    try:
        sock = bind(args.host, args.port)  # before loading: a port in use fails at once
    except OSError as e:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    import torch

    from ..core.registry import DEFAULT_MODEL
    from ..serve.adapter import load_models
    from ..serve.app import ServeConfig, create_app

    specs = args.model or [DEFAULT_MODEL]
    try:
        models = load_models(specs, device=device, dtype=args.dtype)
    except FileNotFoundError as e:
        raise UsageError(f"--model {e}") from None
    config = ServeConfig(max_body_bytes=int(args.max_body_mb * 2**20), max_sentence_words=args.max_sentence_words,
                         batch_wait_ms=args.batch_wait_ms, batch_words=args.batch_words,
                         max_pending=args.max_pending, workers=args.workers,
                         release_memory_s=max(0.0, args.release_memory_after), batch_tokens=args.batch_tokens,
                         piece_words=args.piece_words, request_timeout_s=args.request_timeout,
                         header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout,
                         max_connections=args.max_connections)
    app = create_app(models, config)
    server = make_server(app, access_log=args.access_log, graceful_timeout=args.graceful_timeout,
                         log_level="debug" if args.debug else "warning")
    announce(sock, list(models), args.workers, torch.get_num_threads())
    # uvicorn stops gracefully on SIGTERM, then raises the signal again once it has restored the handler it
    # found: this one, so that a graceful stop ends with status 0 instead of death by signal
    stopped: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopped.append(signum))
    try:
        server.run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)
    stats = app.state.batcher.stats
    print(f"g2gt serve: stopped{' (SIGTERM)' if stopped else ''} after {stats['jobs']} parse requests",
          file=sys.stderr, flush=True)
    return 0
