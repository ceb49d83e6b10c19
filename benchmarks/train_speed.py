"""Parser training updates per second (float32): this checkout against another one, interleaved.

Each measurement is a fresh worker process (``python benchmarks/train_speed.py --worker``) that builds
the default ``g2gt train parser`` model (``ParserConfig`` defaults, as in ``benchmarks/amp.py``) on the
first ``--sentences`` EWT training sentences, runs one warm-up update, then times ``--steps`` optimizer
updates (forward, backward, AdamW) on the same batches from the same initial weights, and prints the
median seconds per update (process CPU time and wall time). The parent alternates the two source trees
for ``--repeats`` rounds, so machine load hits both alike, and prints updates/s and the ratio
(this checkout / baseline; above 1 = faster). With ``--baseline`` omitted only this checkout is timed.

The baseline is any folder holding a ``g2gt`` package, e.g. an older commit unpacked with
``git archive COMMIT | tar -x -C /tmp/old``. Example (the issue-28 measurement)::

    OMP_NUM_THREADS=1 python benchmarks/train_speed.py --baseline /tmp/old --data $G2GT_DATA --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(data: Path, sentences: int, steps: int, threads: int, batch_tokens: int) -> dict:
    import torch

    from g2gt.ud.io.conllu import read_conllu
    from g2gt.ud.parse.model import ParserModel
    from g2gt.ud.parse.task import ParsingTask
    from g2gt.ud.parse.vocab import ParserVocab

    torch.set_num_threads(threads)
    sents = read_conllu(data / "ud-en-ewt" / "en_ewt-ud-train.conllu")[:sentences]
    vocab = ParserVocab.build(sents, min_freq=2, lowercase=True, tags=True)
    config = vocab.config()
    task = ParsingTask(sents, sents[:50], vocab, config.max_distance, graph_channel=config.graph_channel,
                       batch_tokens=batch_tokens)
    batches = [b for _, b in zip(range(steps + 1), task.train_batches(0, 0, 1))]
    torch.manual_seed(0)
    model = ParserModel(config)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cpu, wall, losses = [], [], []
    for batch in batches:
        c0, w0 = time.process_time(), time.perf_counter()
        loss = task.loss(model, batch) / max(1, task.num_tokens(batch))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        losses.append(float(loss.detach()))
    return {"cpu": statistics.median(cpu[1:]), "wall": statistics.median(wall[1:]), "loss": statistics.fmean(losses)}


def run_worker(tree: Path, args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, str(HERE / "train_speed.py"), "--worker", "--data", str(args.data), "--sentences",
           str(args.sentences), "--steps", str(args.steps), "--threads", str(args.threads), "--batch-tokens",
           str(args.batch_tokens)]
    out = subprocess.run(cmd, env=env, cwd=str(tree), check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("G2GT_DATA", "data")),
                    help="folder with ud-en-ewt/ (default: $G2GT_DATA)")
    ap.add_argument("--baseline", type=Path, default=None, help="folder with the g2gt package to compare against")
    ap.add_argument("--sentences", type=int, default=2000, help="training sentences to batch from")
    ap.add_argument("--steps", type=int, default=8, help="timed updates per worker")
    ap.add_argument("--batch-tokens", type=int, default=4000, help="words per batch (the parser default)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds; each runs every tree once")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.data, args.sentences, args.steps, args.threads, args.batch_tokens)))
        return 0
    trees = {"this": HERE.parent}
    if args.baseline is not None:
        if not (args.baseline / "g2gt" / "__init__.py").exists():
            print(f"error: {args.baseline} holds no g2gt package (expected {args.baseline}/g2gt/__init__.py)",
                  file=sys.stderr)
            return 2
        trees["baseline"] = args.baseline.resolve()
    res: dict[str, list[dict]] = {k: [] for k in trees}
    for _ in range(args.repeats):
        for name, tree in trees.items():
            res[name].append(run_worker(tree, args))
    print(f"parser training, float32, {args.threads} thread(s), {args.steps} updates of {args.batch_tokens} words, "
          f"{args.repeats} rounds (medians)")
    print("| tree | updates/s (CPU time) | updates/s (wall) | mean loss |")
    print("|---|---:|---:|---:|")
    med = {}
    for name, rs in res.items():
        med[name] = {c: statistics.median(r[c] for r in rs) for c in ("cpu", "wall")}
        print(f"| {name} | {1 / med[name]['cpu']:.3f} | {1 / med[name]['wall']:.3f} | {rs[0]['loss']:.4f} |")
    if "baseline" in med:
        print(f"ratio this / baseline: {med['baseline']['cpu'] / med['this']['cpu']:.3f}x (CPU time), "
              f"{med['baseline']['wall'] / med['this']['wall']:.3f}x (wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
