"""Corpus scale: worker processes and Ray against one process, memory, a killed worker, a long input.

    python benchmarks/scale.py workers --words 100000 400000   # g2gt parse --raw --workers 1..N, wall clock
    python benchmarks/scale.py pipe --words 100000 400000      # nlp.pipe(texts, n_process=1..N), wall clock
    python benchmarks/scale.py ray        # Ray local (2 actors) vs --workers 2, the same files
    python benchmarks/scale.py memory     # peak RSS: each worker of --workers 2, one process (--batch-tokens ...)
    python benchmarks/scale.py kill       # SIGKILL one worker mid-run: counts, forms and bytes vs a clean run
    python benchmarks/scale.py big --big 20000   # N sentences (the data repeated) through --workers 2: RSS over time

Raw text is the data's documents rendered back to text (``benchmarks/pipeline.py``'s ``raw_text``, what
``g2gt parse --raw`` reads), repeated to the sizes asked for. ``workers`` times the command a user types,
``g2gt parse --raw FILE -o OUT --workers W --threads 1`` (start-up included), W = 1 .. ``--max-workers``, each
``--repeats`` times (the median is reported), checks that every W writes the bytes of W = 1, and samples the
peak RSS (``VmHWM``) of the command's process and of each worker. Every ratio is against a baseline measured in
the same run. Wall-clock ratios mean something only on an otherwise idle machine: the report records the load
average at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

MB = 1024 * 1024


def _status(pid: int) -> dict[str, int]:
    """``VmRSS`` / ``VmHWM`` (MB) and CPU seconds (user + system) of a live process (Linux /proc)."""
    with open(f"/proc/{pid}/status") as f:
        d = dict(line.split(":", 1) for line in f if ":" in line)
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"rss": int(d["VmRSS"].split()[0]) // 1024, "hwm": int(d["VmHWM"].split()[0]) // 1024, "cpu": cpu}


def _data(args) -> Path:
    from g2gt.data import EWT_DEV, EWT_SAMPLE_DEV, find_data

    path = Path(args.data) if args.data else find_data(EWT_DEV)
    if path is None or not path.exists():
        print(f"no --data and no $G2GT_DATA/{EWT_DEV}: using the shipped sample {EWT_SAMPLE_DEV}", file=sys.stderr)
        path = EWT_SAMPLE_DEV
    return path


def _raw_text(path: Path) -> tuple[str, int]:
    from pipeline import raw_text

    from g2gt.ud.io import read_conllu

    gold = read_conllu(path)
    return raw_text(gold), sum(len(s) for s in gold)


# ---------------------------------------------------------------------------- speed
def _tree(pid: int) -> list[tuple[int, int]]:
    """``(pid, depth)`` of ``pid`` (depth 0) and of its live descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [(pid, 0)]
    while todo:
        p, depth = todo.pop()
        out.append((p, depth))
        todo.extend((c, depth + 1) for c in children.get(p, []))
    return out


def run_cli(argv: list[str]) -> dict:
    """Run ``python -m g2gt ARGV``: wall seconds (start-up included, as a user times the command), and the peak RSS
    (``VmHWM``, MB) of the command's process and of each worker process it starts (sampled every 0.2 s)."""
    w0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "g2gt", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks: dict[int, int] = {}
    workers: set[int] = set()
    while proc.poll() is None:
        for pid, depth in _tree(proc.pid):
            try:
                st = _status(pid)
            except (OSError, KeyError):  # gone, or a zombie
                continue
            peaks[pid] = max(peaks.get(pid, 0), st["hwm"])
            if depth == 2:  # forked by the fork server, the command's child
                workers.add(pid)
        time.sleep(0.2)
    wall = time.perf_counter() - w0
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"g2gt {' '.join(argv)} failed: {err[-500:]}")
    return {"wall": wall, "main_peak_mb": peaks.get(proc.pid, 0), "worker_peak_mb": sorted(peaks[p] for p in workers)}


def bench_workers(args, report: dict) -> None:
    """``g2gt parse --raw FILE -o OUT --workers W --threads 1`` for W = 1 .. N on each size, the same run."""
    text, words = _raw_text(_data(args))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for target in args.words:
            reps = max(1, -(-target // words))
            raw = Path(tmp) / f"raw{target}.txt"
            raw.write_text(text * reps, encoding="utf-8")
            outs, base = {}, None
            for w in range(1, args.max_workers + 1):
                out = Path(tmp) / f"out{target}_{w}.conllu"
                runs = [run_cli(["parse", "--model", args.model, "--raw", str(raw), "-o", str(out), "--workers",
                                 str(w), "--threads", "1", "--no-progress"]) for _ in range(args.repeats)]
                walls = sorted(r["wall"] for r in runs)
                outs[w] = out.read_bytes()
                row = {"words": words * reps, "workers": w, "wall_s": walls, "median_wall_s": walls[len(walls) // 2],
                       "main_peak_mb": max(r["main_peak_mb"] for r in runs),
                       "worker_peak_mb": max(runs, key=lambda r: r["wall"])["worker_peak_mb"],
                       "byte_identical_to_1": outs[w] == outs[1]}
                base = base or row["median_wall_s"]
                row["speedup"] = base / row["median_wall_s"]
                row["words_s"] = row["words"] / row["median_wall_s"]
                rows.append(row)
                print(f"workers {w}, {row['words']:,} words: median {row['median_wall_s']:.1f} s "
                      f"({row['words_s']:,.0f} words/s, x{row['speedup']:.2f} vs 1 worker; runs "
                      f"{', '.join(f'{x:.1f}' for x in walls)}); peak RSS main {row['main_peak_mb']} MB, workers "
                      f"{row['worker_peak_mb']} MB; byte-identical to 1 worker: {row['byte_identical_to_1']}",
                      flush=True)
    report["workers"] = rows


def _pipe_worker(texts: list[str], n: int, model: str) -> float:
    import g2gt

    nlp = g2gt.load(model)
    nlp("Warm up.")
    w0 = time.perf_counter()
    for _ in nlp.pipe(texts, n_process=n):
        pass
    return time.perf_counter() - w0


def bench_pipe(args, report: dict) -> None:
    """``nlp.pipe(texts, n_process=N)`` for N = 1 .. max on the data's documents repeated to each size (worker
    start-up included: ``pipe`` starts its processes)."""
    from pipeline import documents_from_sentences

    from g2gt.ud.io import read_conllu
    from g2gt.ud.tokenize.data import render_document

    gold = read_conllu(_data(args))
    words = sum(len(s) for s in gold)
    docs = [render_document(d, "para", random.Random(i)).text for i, d in enumerate(documents_from_sentences(gold))]
    rows = []
    for target in args.words:
        reps = max(1, -(-target // words))
        base = None
        for n in range(1, args.max_workers + 1):
            walls = sorted(_pipe_worker(docs * reps, n, args.model) for _ in range(args.repeats))
            wall = walls[len(walls) // 2]
            base = base or wall
            rows.append({"words": words * reps, "n_process": n, "wall_s": walls, "speedup": base / wall,
                         "words_s": words * reps / wall})
            print(f"pipe n_process={n}, {words * reps:,} words in {len(docs) * reps} texts: median {wall:.1f} s "
                  f"({words * reps / wall:,.0f} words/s, x{base / wall:.2f} vs 1)", flush=True)
    report["pipe"] = rows


def with_workers(text: str, workers: int, kill_after: int = 0) -> dict:
    """``--workers N`` on ``text``: output, wall s, CPU s of each worker and of this process, peak RSS."""
    from g2gt.ud.scale.parallel import ParallelPipeline

    with ParallelPipeline("en_ewt", workers=workers) as pp:
        pp.pool.wait_ready()
        pids = pp.pool.pids
        before = {p: _status(p)["cpu"] for p in pids}
        killed: list[int] = []

        def kill(n: int) -> None:
            if kill_after and not killed and len(killed) < 1:
                killed.append(pp.pool.pids[0])
                os.kill(killed[0], signal.SIGKILL)

        w0, c0 = time.perf_counter(), time.process_time()
        out = "".join(pp.parse_text(text) if not kill_after else pp.parse_sentences(pp.text_sentences(text),
                                                                                      on_done=kill))
        wall, main_cpu = time.perf_counter() - w0, time.process_time() - c0
        live = [p for p in pp.pool.pids if p in before]
        stats = {p: _status(p) for p in pp.pool.pids}
        return {"out": out, "wall": wall, "main_cpu": main_cpu, "killed": killed, "replaced": pp.pool.replaced,
                "worker_cpu": [stats[p]["cpu"] - before[p] for p in live],
                "worker_hwm": [stats[p]["hwm"] for p in pp.pool.pids], "main_hwm": _status(os.getpid())["hwm"]}


# ---------------------------------------------------------------------------- ray vs workers
def _split_files(text: str, k: int, folder: Path) -> list[Path]:
    """``text`` cut at paragraph ends into ``k`` files of about equal size."""
    paras = text.split("\n\n")
    size = len(text) / k
    files, cur, n = [], [], 0
    for p in paras:
        cur.append(p)
        n += len(p) + 2
        if n >= size and len(files) < k - 1:
            files.append("\n\n".join(cur) + "\n")
            cur, n = [], 0
    files.append("\n\n".join(cur) + "\n")
    paths = []
    for i, t in enumerate(files):
        paths.append(folder / f"part{i}.txt")
        paths[-1].write_text(t, encoding="utf-8")
    return paths


def bench_ray(args, report: dict) -> None:
    import ray

    from g2gt.ud.scale.parallel import ParallelPipeline
    from g2gt.ud.scale.ray_data import parse_files

    text, words = _raw_text(_data(args))
    with tempfile.TemporaryDirectory() as tmp:
        files = _split_files(text, args.files, Path(tmp))
        with ParallelPipeline("en_ewt", workers=2) as pp:
            pp.pool.wait_ready()
            w0 = time.perf_counter()
            rep_w = pp.parse_files(files, Path(tmp) / "workers", kind="raw")
            t_workers = time.perf_counter() - w0
        ray.init(num_cpus=2, object_store_memory=200 * MB, include_dashboard=False, log_to_driver=False)
        try:
            w0 = time.perf_counter()
            rep_r = parse_files(files, Path(tmp) / "ray", kind="raw", actors=2, log=None)
            t_ray = time.perf_counter() - w0
        finally:
            ray.shutdown()
        same = all((Path(tmp) / "ray" / f.with_suffix(".conllu").name).read_bytes()
                   == (Path(tmp) / "workers" / f.with_suffix(".conllu").name).read_bytes() for f in files)
    rows = {"files": len(files), "words": words, "workers2_words_s": words / t_workers, "ray2_words_s": words / t_ray,
            "ratio": t_workers / t_ray, "byte_identical": same, "sentences": [rep_w.sentences, rep_r.sentences]}
    report["ray"] = rows
    print(f"ray ({len(files)} raw-text files, {words} words): --workers 2 {rows['workers2_words_s']:.0f} words/s, Ray "
          f"local 2 actors {rows['ray2_words_s']:.0f} words/s (x{rows['ratio']:.2f}, actor start-up included); "
          f"byte-identical: {same}")


# ---------------------------------------------------------------------------- memory
def _cli_peak(argv: list[str]) -> tuple[int, float]:
    """Peak RSS (MB) and CPU seconds of a ``g2gt`` child process."""
    proc = subprocess.Popen([sys.executable, "-m", "g2gt", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"g2gt {' '.join(argv)} failed: {err[-500:]}")
    return usage.ru_maxrss // 1024, usage.ru_utime + usage.ru_stime


def bench_memory(args, report: dict) -> None:
    text, words = _raw_text(_data(args))
    w = with_workers(text, 2)
    rows = {"workers2_peak_mb": w["worker_hwm"], "workers2_main_peak_mb": w["main_hwm"]}
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.txt"
        raw.write_text(text, encoding="utf-8")
        for bt in args.batch_tokens:
            peak, cpu = _cli_peak(["parse", "--raw", str(raw), "-o", str(Path(tmp) / "o.conllu"), "--threads", "1",
                                   "--batch-tokens", str(bt), "--no-progress"])
            rows[f"one_process_batch_tokens_{bt}"] = {"peak_mb": peak, "cpu_s": cpu}
    report["memory"] = rows
    print(f"memory ({words} words of raw text): --workers 2 peak RSS per worker {w['worker_hwm']} MB (main "
          f"{w['main_hwm']} MB); one process: " + ", ".join(
              f"--batch-tokens {bt}: {rows[f'one_process_batch_tokens_{bt}']['peak_mb']} MB, "
              f"{rows[f'one_process_batch_tokens_{bt}']['cpu_s']:.1f} CPU s" for bt in args.batch_tokens))


# ---------------------------------------------------------------------------- kill
def bench_kill(args, report: dict) -> None:
    from g2gt.ud.io import parse_conllu_string

    text, words = _raw_text(_data(args))
    clean = with_workers(text, 2)
    hit = with_workers(text, 2, kill_after=1)
    a, b = parse_conllu_string(clean["out"]), parse_conllu_string(hit["out"])
    rows = {"killed": hit["killed"], "replaced": hit["replaced"], "sentences_clean": len(a), "sentences_killed": len(b),
            "same_forms_in_order": [s.forms for s in a] == [s.forms for s in b],
            "byte_identical": clean["out"] == hit["out"]}
    report["kill"] = rows
    print(f"kill: SIGKILL of worker {hit['killed']} after its first job, {hit['replaced']} worker(s) replaced; "
          f"sentences {len(b)} (clean run {len(a)}), same forms in order: {rows['same_forms_in_order']}, "
          f"byte-identical: {rows['byte_identical']}")


# ---------------------------------------------------------------------------- a long input
def bench_big(args, report: dict) -> None:
    from g2gt.ud.io import iter_conllu, read_conllu, to_conllu_string
    from g2gt.ud.scale.parallel import ParallelPipeline

    gold = read_conllu(_data(args))
    n = args.big
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "big.conllu", Path(tmp) / "big.out.conllu"
        with open(src, "w", encoding="utf-8") as f:
            for k in range(0, n, len(gold)):
                f.write(to_conllu_string(gold[: min(len(gold), n - k)]))
        samples: list[tuple[float, int, list[int]]] = []
        done = {"n": 0}
        with ParallelPipeline("en_ewt", workers=2, keep_freed_memory=not args.trim) as pp:
            pp.pool.wait_ready()
            stop = threading.Event()

            def sample() -> None:
                while not stop.wait(1.0):
                    try:
                        samples.append((done["n"] / n, _status(os.getpid())["rss"],
                                        [_status(p)["rss"] for p in pp.pool.pids]))
                    except OSError:  # a worker just replaced
                        pass

            th = threading.Thread(target=sample, daemon=True)
            th.start()
            w0 = time.perf_counter()
            stats: dict = {}
            with open(dst, "w", encoding="utf-8") as f:
                for block in pp.parse_sentences(iter_conllu(src), stats, on_done=lambda k: done.update(n=done["n"] + k)):
                    f.write(block)
            wall = time.perf_counter() - w0
            stop.set()
            th.join()
        same = all(a.forms == b.forms for a, b in zip(iter_conllu(src), iter_conllu(dst)))
        count = sum(1 for _ in iter_conllu(dst))
    quart = {}
    for q in (0.25, 0.5, 0.75, 1.0):
        at = [s for s in samples if s[0] <= q]
        if at:
            quart[str(q)] = {"main_mb": at[-1][1], "workers_mb": at[-1][2]}
    rows = {"sentences_in": n, "sentences_out": count, "same_forms_in_order": same, "words": stats.get("words", 0),
            "words_s": stats.get("words", 0) / wall, "rss_at_progress": quart}
    report["big"] = rows
    print(f"big: {n} sentences (the data repeated) through --workers 2 in {wall:.0f}s "
          f"({rows['words_s']:.0f} words/s); out {count}, same forms in order: {same}; RSS (MB) at 25/50/75/100%: "
          + "; ".join(f"{q}: main {v['main_mb']}, workers {v['workers_mb']}" for q, v in quart.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["all", "workers", "pipe", "ray", "memory", "kill", "big"])
    ap.add_argument("--model", default="en_combined", help="workers / pipe: the model (default en_combined)")
    ap.add_argument("--words", type=int, nargs="+", default=[100_000, 400_000],
                    help="workers / pipe: input sizes in words (the data repeated; default 100,000 and 400,000)")
    ap.add_argument("--max-workers", type=int, default=os.cpu_count() or 1,
                    help="workers / pipe: 1 .. this many workers (default: the CPUs)")
    ap.add_argument("--repeats", type=int, default=3, help="workers / pipe: runs of each (the median is reported)")
    ap.add_argument("--data", default=None, help="CoNLL-U (default: $G2GT_DATA's UD EWT dev, else the shipped sample)")
    ap.add_argument("--big", type=int, default=20000, help="sentences of the long input (default 20,000)")
    ap.add_argument("--files", type=int, default=4, help="raw-text files for the Ray comparison (default 4)")
    ap.add_argument("--batch-tokens", type=int, nargs="+", default=[3000, 1500, 1000],
                    help="one-process --batch-tokens values for the memory table")
    ap.add_argument("--trim", action="store_true",
                    help="big: workers without keep_freed_memory (glibc returns freed memory; RSS follows use)")
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = ap.parse_args(argv)
    from g2gt.core._compat import keep_freed_memory

    keep_freed_memory()  # as the g2gt command does
    random.seed(0)
    report: dict = {"machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start"}
    steps = ["workers", "pipe", "ray", "memory", "kill", "big"] if args.what == "all" else [args.what]
    for step in steps:
        globals()[f"bench_{step}"](args, report)
    report["load_average_end"] = os.getloadavg()[0]
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
