"""``g2gt serve`` under load, on loopback only: 1, 8 and 32 concurrent clients sending UD EWT dev sentences.

Starts ``g2gt serve --port 0 --threads T`` as a child process (127.0.0.1), then for each client count runs
keep-alive clients that each send one dev sentence's raw text per request (``POST /v1/parse``, or UDPipe's
``/process`` with ``--endpoint process``) until ``--requests`` requests or ``--seconds`` have passed.
Reports requests/s, words/s (words in the answers), latency p50 / p95 / p99, errors (any non-200 or a broken
connection), the server's CPU time per word, and its RSS after the first ``--rss-warmup`` requests and after
``--rss-requests`` more (both at 8 clients, before the table's runs), read at once and again after
``--settle`` seconds idle (the server gives freed heap memory back to the system after 2 s without requests). The baseline of the words/s ratio is the offline pipeline on the same threads in this process,
as ``g2gt parse --raw`` runs it: the same sentences as one raw document (a blank line between sentences),
``nlp(document)``, best of two, measured before and after the load (their mean is the baseline).

    python benchmarks/serve.py --threads 1 --clients 1 8 32 --requests 1000 --rss-requests 2000 --markdown

Data: ``--data FILE`` or ``$G2GT_DATA/ud-en-ewt/en_ewt-ud-dev.conllu``. Targets (issue 26): 0 errors; at 8
clients >= 0.80 of the offline words/s; p99 <= 150 ms at 8 clients on one thread; RSS after the long run within
100 MB of RSS after the warm-up.
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
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from g2gt.data import EWT_DEV, find_data  # noqa: E402
from g2gt.ud.io import read_conllu  # noqa: E402


# --------------------------------------------------------------------------- a small keep-alive client
class Connection:
    """One HTTP/1.1 keep-alive connection (asyncio streams; the client stays light so the server gets the CPU)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, path: str, body: bytes, ctype: str) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode("ascii")
        self.writer.write(head + body)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        length, close = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "connection" and value.strip().lower() == "close":
                close = True
        data = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def make_body(endpoint: str, text: str) -> tuple[str, bytes, str]:
    if endpoint == "process":
        form = urlencode({"data": text, "tokenizer": "", "tagger": "", "parser": ""})
        return "/process", form.encode(), "application/x-www-form-urlencoded"
    return "/v1/parse", json.dumps({"text": text}).encode(), "application/json"


def count_words(endpoint: str, data: bytes) -> int:
    if endpoint == "process":
        result = json.loads(data)["result"]
        return sum(1 for line in result.split("\n") if line and line[0].isdigit() and re.match(r"\d+\t", line))
    return data.count(b'"upos":')  # words have it, multiword tokens do not (no empty nodes without "enhanced")


async def load(port: int, endpoint: str, texts: list[str], clients: int, requests: int, seconds: float,
               start_at: int = 0) -> dict:
    """``clients`` concurrent keep-alive clients, ``requests`` requests in all (or until ``seconds``)."""
    bodies = [make_body(endpoint, t) for t in texts]
    latencies: list[float] = []
    stats = {"errors": 0, "words": 0, "requests": 0}
    counter = iter(range(start_at, start_at + requests))
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        conn = Connection(port)
        try:
            for i in counter:
                if time.perf_counter() > deadline:
                    break
                path, body, ctype = bodies[i % len(bodies)]
                t0 = time.perf_counter()
                try:
                    status, data = await conn.request(path, body, ctype)
                except (ConnectionError, OSError, asyncio.IncompleteReadError):
                    stats["errors"] += 1
                    conn.close()
                    continue
                latencies.append(time.perf_counter() - t0)
                stats["requests"] += 1
                if status != 200:
                    stats["errors"] += 1
                else:
                    stats["words"] += count_words(endpoint, data)
        finally:
            conn.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - t0
    latencies.sort()

    def pct(p: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] if latencies else float("nan")

    return {"clients": clients, "requests": stats["requests"], "words": stats["words"], "wall_s": wall,
            "req_s": stats["requests"] / wall,
            "words_s": stats["words"] / wall, "p50_ms": pct(50), "p95_ms": pct(95), "p99_ms": pct(99),
            "errors": stats["errors"]}


# --------------------------------------------------------------------------- server and baseline
def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (all its threads)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_server(args) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "g2gt", "serve", "--host", "127.0.0.1", "--port", "0", "--threads", str(args.threads),
           "--model", args.model, "--dtype", args.dtype, "--batch-wait-ms", str(args.batch_wait_ms)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=Path(__file__).resolve().parents[1])
    if args.server_cpus:  # every thread of the server on these CPUs only (e.g. one core)
        cpus = {int(c) for c in args.server_cpus.split(",")}
        os.sched_setaffinity(proc.pid, cpus)
        for tid in os.listdir(f"/proc/{proc.pid}/task"):
            os.sched_setaffinity(int(tid), cpus)
    while True:
        line = proc.stderr.readline()
        if not line:
            raise SystemExit(f"g2gt serve did not start (exit {proc.wait()})")
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            return proc, int(m.group(1))


def offline_words_per_s(args, texts: list[str]) -> tuple[float, float]:
    """The pipeline on the same sentences as one raw document, in this process: (words per wall second, words
    per CPU second), best of two."""
    import torch

    import g2gt
    from g2gt.core._compat import keep_freed_memory

    keep_freed_memory()  # as the g2gt command (and so the server) does
    torch.set_num_threads(args.threads)
    nlp = g2gt.load(args.model, dtype=args.dtype)
    document = "\n\n".join(texts)
    nlp(document[:2000])  # warm-up
    wall = cpu = 0.0
    for _ in range(2):
        t0, c0 = time.perf_counter(), time.process_time()
        words = sum(len(s) for s in nlp(document))
        wall = max(wall, words / (time.perf_counter() - t0))
        cpu = max(cpu, words / (time.process_time() - c0))
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="CoNLL-U whose sentences are sent (default: $G2GT_DATA EWT dev)")
    ap.add_argument("--model", default="en_ewt")
    ap.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "int8"])
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the server and of the baseline")
    ap.add_argument("--clients", type=int, nargs="*", default=[1, 8, 32])
    ap.add_argument("--requests", type=int, default=1000, help="requests per client count (at most)")
    ap.add_argument("--seconds", type=float, default=60.0, help="time per client count (at most)")
    ap.add_argument("--endpoint", default="v1", choices=["v1", "process"])
    ap.add_argument("--batch-wait-ms", type=float, default=5.0)
    ap.add_argument("--baseline-sentences", type=int, default=1000, help="sentences in the offline baseline")
    ap.add_argument("--rss-warmup", type=int, default=100)
    ap.add_argument("--rss-requests", type=int, default=2000, help="requests of the RSS run (8 clients); 0 = skip")
    ap.add_argument("--server-cpus", default="", metavar="LIST",
                    help="pin the server to these CPUs, e.g. 0 for one core (default: not pinned)")
    ap.add_argument("--settle", type=float, default=4.0,
                    help="seconds idle before the second RSS reading (the server gives freed memory back after 2)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)

    data = Path(args.data) if args.data else find_data(EWT_DEV)
    if data is None or not data.exists():
        print("no data: pass --data FILE or set G2GT_DATA", file=sys.stderr)
        return 1
    texts = [s.text for s in read_conllu(data) if s.text and s.text.strip()]
    print(f"{len(texts)} sentences from {data}; server threads {args.threads}; machine: {os.cpu_count()} CPUs",
          file=sys.stderr)

    base_before = offline_words_per_s(args, texts[: args.baseline_sentences])
    proc, port = start_server(args)
    rows, rss = [], {}
    try:
        warm = asyncio.run(load(port, args.endpoint, texts, 8, args.rss_warmup, 600))
        rss["after_warmup"] = rss_mb(proc.pid)
        time.sleep(args.settle)
        rss["after_warmup_idle"] = rss_mb(proc.pid)
        offset = args.rss_warmup
        if args.rss_requests:  # before the 32-client run, whose larger batches raise the peak the heap keeps
            long = asyncio.run(load(port, args.endpoint, texts, 8, args.rss_requests, 3600, start_at=offset))
            rss["after_long"] = rss_mb(proc.pid)
            time.sleep(args.settle)
            rss["after_long_idle"] = rss_mb(proc.pid)
            rss["long_errors"] = long["errors"]
            offset += long["requests"]
            rss["total_requests"] = offset
        for c in args.clients:
            cpu0 = cpu_seconds(proc.pid)
            row = asyncio.run(load(port, args.endpoint, texts, c, args.requests, args.seconds, start_at=offset))
            row["server_cpu_s"] = cpu_seconds(proc.pid) - cpu0
            row["words_per_cpu_s"] = row["words"] / max(row["server_cpu_s"], 1e-9)
            offset += row["requests"]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
        rss["at_end"] = rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
        proc.stderr.close()
    base_after = offline_words_per_s(args, texts[: args.baseline_sentences])
    baseline = (base_before[0] + base_after[0]) / 2
    base_cpu = (base_before[1] + base_after[1]) / 2
    errors = warm["errors"] + sum(r["errors"] for r in rows) + rss.get("long_errors", 0)

    if args.markdown:
        print("| clients | requests | requests/s | words/s | × offline | words / server CPU-s | × offline | "
              "p50 ms | p95 ms | p99 ms | errors |")
        print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in rows:
            print(f"| {r['clients']} | {r['requests']:,} | {r['req_s']:.1f} | {r['words_s']:,.0f} | "
                  f"{r['words_s'] / baseline:.2f} | {r['words_per_cpu_s']:,.0f} | {r['words_per_cpu_s'] / base_cpu:.2f} | "
                  f"{r['p50_ms']:.0f} | {r['p95_ms']:.0f} | {r['p99_ms']:.0f} | {r['errors']} |")
    else:
        for r in rows:
            print(json.dumps({**r, "x_offline": r["words_s"] / baseline, "x_offline_cpu": r["words_per_cpu_s"] / base_cpu}))
    print(f"offline baseline (nlp(document), same threads, in this process): {base_before[0]:,.0f} before / "
          f"{base_after[0]:,.0f} after -> {baseline:,.0f} words/s; {base_cpu:,.0f} words per CPU-s")
    if rss:
        print(f"server RSS after {args.rss_warmup} requests: {rss['after_warmup']:.0f} MB at once, "
              f"{rss['after_warmup_idle']:.0f} MB after {args.settle:g} s idle")
        if "after_long" in rss:
            print(f"server RSS after {rss['total_requests']:,} requests (8 clients): {rss['after_long']:.0f} MB at "
                  f"once ({rss['after_long'] - rss['after_warmup']:+.0f} MB), {rss['after_long_idle']:.0f} MB after "
                  f"{args.settle:g} s idle ({rss['after_long_idle'] - rss['after_warmup_idle']:+.0f} MB)")
        print(f"server RSS at the end (after the table's runs): {rss['at_end']:.0f} MB")
    print(f"errors: {errors}; server exit status after SIGTERM: {code}")
    return 0 if errors == 0 and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
