"""``g2gt serve`` under mixed load and abuse, on loopback only: latency per request size, with and without pieces.

For each ``--piece-words`` value, starts ``g2gt serve --port 0 --threads T --piece-words P`` as a child process,
then for ``--seconds`` runs at once:

* ``--small-clients`` clients sending one sentence of raw text per request (``POST /v1/parse``),
* ``--medium-clients`` clients sending ``--medium-words`` words (consecutive sentences of the data),
* ``--large-clients`` clients sending ``--large-words`` words,
* ``--slow-clients`` clients that send half a request's headers, then a byte a second (each is reopened as
  soon as the server closes it; counted: how many were closed, and after how long),

each client sending its next request when the last is answered (one connection per request). Then sends
SIGTERM and times the exit. Prints per setting and size: requests, words per request, latency p50 / p99 / max,
answers that were not 200, and the words answered per second; ``--markdown`` prints the table for
docs/benchmarks.md.

    python benchmarks/serve_load.py --threads 1 --seconds 60 --piece-words 500 0 --markdown

``--piece-words 0`` never cuts a request: the order of arrival decides, as before pieces took turns. Data:
``--data FILE`` or the EWT dev sample shipped with g2gt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from g2gt.data import EWT_SAMPLE_DEV  # noqa: E402
from g2gt.ud.io import read_conllu  # noqa: E402

SIZES = ("small", "medium", "large")


async def post(port: int, body: bytes, timeout: float) -> int:
    """One ``POST /v1/parse`` on a fresh connection: the status (0 = no answer)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"POST /v1/parse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        line = await asyncio.wait_for(reader.readline(), timeout)
        await asyncio.wait_for(reader.read(), timeout)
        return int(line.split()[1]) if line else 0
    finally:
        writer.close()


async def slow_client(port: int, until: float, closed: list[float]) -> None:
    """Half a request's headers, then a byte a second, reopened whenever the server closes it."""
    while time.monotonic() < until:
        t0 = time.monotonic()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.5)
            continue
        try:
            writer.write(b"POST /v1/parse HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while time.monotonic() < until:
                try:
                    data = await asyncio.wait_for(reader.read(1024), 1.0)
                    if not data or data.startswith(b"HTTP/1.1 408"):
                        closed.append(time.monotonic() - t0)
                        break
                except asyncio.TimeoutError:
                    writer.write(b"X")
        except (ConnectionError, OSError):
            closed.append(time.monotonic() - t0)
        finally:
            writer.close()


async def run_load(port: int, bodies: dict[str, tuple[bytes, int]], clients: dict[str, int], slow: int,
                   seconds: float) -> tuple[dict, list[float]]:
    until = time.monotonic() + seconds
    results: dict[str, list[tuple[float, int]]] = {size: [] for size in SIZES}
    closed: list[float] = []

    async def client(size: str) -> None:
        body = bodies[size][0]
        while time.monotonic() < until:
            t0 = time.monotonic()
            try:
                status = await post(port, body, timeout=600)
            except (ConnectionError, OSError, asyncio.TimeoutError):
                status = 0
            results[size].append((time.monotonic() - t0, status))

    tasks = [client(size) for size in SIZES for _ in range(clients[size])]
    tasks += [slow_client(port, until, closed) for _ in range(slow)]
    start = time.monotonic()
    await asyncio.gather(*tasks)
    results["wall_s"] = time.monotonic() - start  # type: ignore[assignment]
    return results, closed


def start_server(args, piece_words: int) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "g2gt", "serve", "--port", "0", "--threads", str(args.threads), "--model",
           args.model, "--piece-words", str(piece_words), "--header-timeout", str(args.header_timeout),
           "--request-timeout", str(args.request_timeout)]
    if args.max_connections is not None:
        cmd += ["--max-connections", str(args.max_connections)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=Path(__file__).resolve().parents[1])
    while True:
        line = proc.stderr.readline()
        if not line:
            raise SystemExit(f"g2gt serve did not start (exit {proc.wait()})")
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1))


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] if values else float("nan")


def text_of(texts: list[str], words: int, start: int) -> str:
    out, n, k = [], 0, start
    while n < words:
        t = texts[k % len(texts)]
        out.append(t)
        n += len(t.split())
        k += 1
    return " ".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="CoNLL-U whose sentences are sent (default: the EWT dev sample)")
    ap.add_argument("--model", default="en_combined")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the server")
    ap.add_argument("--seconds", type=float, default=60.0, help="load time per setting")
    ap.add_argument("--piece-words", type=int, nargs="+", default=[500, 0])
    ap.add_argument("--small-clients", type=int, default=4)
    ap.add_argument("--medium-clients", type=int, default=2)
    ap.add_argument("--medium-words", type=int, default=300)
    ap.add_argument("--large-clients", type=int, default=1)
    ap.add_argument("--large-words", type=int, default=20000)
    ap.add_argument("--slow-clients", type=int, default=200)
    ap.add_argument("--header-timeout", type=float, default=10.0)
    ap.add_argument("--request-timeout", type=float, default=120.0)
    ap.add_argument("--max-connections", type=int, default=None, help="the server's (default: its own)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)

    sentences = read_conllu(Path(args.data) if args.data else EWT_SAMPLE_DEV)
    texts = [s.text for s in sentences if s.text and s.text.strip()]
    small = min(texts, key=lambda t: abs(len(t.split()) - 12))  # one sentence of about 12 words
    bodies = {size: (json.dumps({"text": text}).encode(), len(text.split()))
              for size, text in (("small", small), ("medium", text_of(texts, args.medium_words, 0)),
                                 ("large", text_of(texts, args.large_words, 0)))}
    clients = {"small": args.small_clients, "medium": args.medium_clients, "large": args.large_clients}
    print(f"server threads {args.threads}; machine: {os.cpu_count()} CPUs; {args.seconds:g} s per setting; "
          f"clients {clients}, slow clients {args.slow_clients}", file=sys.stderr)
    rows, notes = [], []
    for piece_words in args.piece_words:
        proc, port = start_server(args, piece_words)
        try:
            results, closed = asyncio.run(run_load(port, bodies, clients, args.slow_clients, args.seconds))
        finally:
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(300)
            stop_s = time.monotonic() - t0
            proc.stderr.close()
        for size in SIZES:
            latencies = [t for t, _ in results[size]]
            bad = sum(1 for _, status in results[size] if status != 200)
            rows.append((piece_words, size, bodies[size][1], len(latencies), percentile(latencies, 50),
                         percentile(latencies, 99), max(latencies, default=float("nan")), bad))
        wall = results.pop("wall_s")
        counts: dict[int, int] = {}
        for size in SIZES:
            for _, status in results[size]:
                counts[status] = counts.get(status, 0) + 1
        words = sum(bodies[size][1] for size in SIZES for _, status in results[size] if status == 200)
        notes.append(f"--piece-words {piece_words}: {words:,} words answered in {wall:.0f} s ({words / wall:,.0f} "
                     f"words/s, the last answers after the {args.seconds:g} s of sending); {len(closed)} slow "
                     f"connections closed by the server, median after {percentile(closed, 50):.1f} s; SIGTERM -> "
                     f"exit {code} after {stop_s:.1f} s; answers by status (0 = none): "
                     + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    head = ("| --piece-words | size | words / request | requests | p50 s | p99 s | max s | not 200 |\n"
            "|---:|---|---:|---:|---:|---:|---:|---:|")
    lines = [f"| {p or '0 (never cut)'} | {size} | {words:,} | {n} | {p50:.2f} | {p99:.2f} | {mx:.2f} | {bad} |"
             for p, size, words, n, p50, p99, mx, bad in rows]
    if args.markdown:
        print("\n".join([head, *lines]))
        print("\n" + "\n".join(f"* {n}" for n in notes))
    else:
        for row in rows:
            print(row)
        print("\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
