"""Parsing speed of a trained parser on a CoNLL-U file (default: UD EWT dev).

Measures end-to-end ``Parser.predict`` (the parser's one decode path: batching, encoder passes, MST / Eisner
decoding, label + UPOS prediction, refinement with fixed-point early stopping)
in words per second, for each thread count and each refinement depth, under
``torch.inference_mode``. Thread counts are interleaved over ``--repeats`` rounds
and the best round is reported (the machine may be shared).

    python benchmarks/parse_speed.py --model /work/runs/parser/main --threads 1 2 --refine-steps 3 \
        --dtype float32 bfloat16 int8

With float32 among the ``--dtype`` values, the table gives each precision's speed as a ratio to float32's
at the same threads and T (measured interleaved in this process).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from g2gt.core._compat import keep_freed_memory  # noqa: E402
from g2gt.data import EWT_DEV, find_data  # noqa: E402
from g2gt.ud.io.conllu import read_conllu  # noqa: E402
from g2gt.ud.parse import Parser, attachment_scores  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="parser model directory")
    ap.add_argument("--data", default=None, help="CoNLL-U to parse (default: UD EWT dev)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--refine-steps", type=int, nargs="+", default=[3])
    ap.add_argument("--algorithm", default="mst", choices=["mst", "eisner"])
    ap.add_argument("--batch-tokens", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N sentences")
    ap.add_argument("--dtype", nargs="+", default=["float32", "bfloat16"], choices=["float32", "bfloat16", "int8"],
                    help="weights' precision(s) to measure (UAS/LAS against the file's gold trees are printed too)")
    args = ap.parse_args(argv)

    data = Path(args.data) if args.data else find_data(EWT_DEV)
    if data is None or not data.exists():
        print("no data: pass --data FILE or set G2GT_DATA", file=sys.stderr)
        return 1
    sents = read_conllu(data)
    keep_freed_memory()  # as the g2gt command does
    if args.limit:
        sents = sents[: args.limit]
    words = sum(len(s) for s in sents)
    best: dict[tuple[str, int, int], float] = {}
    passes: dict[tuple[str, int, int], float] = {}
    scores: dict[tuple[str, int, int], dict] = {}
    parsers = {dt: Parser.load(args.model, dtype=dt) for dt in args.dtype}
    torch.set_num_threads(max(args.threads))
    for parser in parsers.values():
        parser.predict(sents[:50], refine_steps=1, progress=False)  # warm-up
    for _ in range(args.repeats):
        for T in args.refine_steps:
            for th in args.threads:
                for dt, parser in parsers.items():
                    torch.set_num_threads(th)
                    t0 = time.perf_counter()
                    out = parser.predict(sents, refine_steps=T, algorithm=args.algorithm,
                                         batch_tokens=args.batch_tokens, progress=False)
                    el = time.perf_counter() - t0
                    key = (dt, th, T)
                    best[key] = max(best.get(key, 0.0), words / el)
                    passes[key] = out.passes / len(sents)
                    if all(h is not None for s in sents for h in s.heads):
                        scores[key] = attachment_scores(sents, out)
    print(f"# {data.name}: {len(sents)} sentences, {words} words; model {args.model}; "
          f"algorithm {args.algorithm}; best of {args.repeats}; UAS/LAS: internal, punctuation included")
    print("| dtype | threads | refine steps T | encoder passes / sentence | words/s | x float32 | UAS | LAS |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for (dt, th, T), wps in sorted(best.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        sc = scores.get((dt, th, T), {})
        base = best.get(("float32", th, T))
        ratio = f"{wps / base:.2f}" if base else "-"
        print(f"| {dt} | {th} | {T} | {passes[(dt, th, T)]:.2f} | {wps:,.0f} | {ratio} | "
              f"{sc.get('uas', float('nan')):.2f} | {sc.get('las', float('nan')):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
