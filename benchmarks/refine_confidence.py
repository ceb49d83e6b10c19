"""Refinement only where the first tree is unsure: LAS, encoder passes and time against the confidence
threshold ``c`` of :meth:`g2gt.ud.parse.ParserModel.decode` (``Parser.refine_confidence``).

A sentence whose first-pass tree has every word's best head at probability ``c`` or more keeps that tree;
the others are refined as before (until their fixed point, at most the model's ``refine_steps``). ``off`` is
every sentence refined. Gold tokenisation, official scorer.

    python benchmarks/refine_confidence.py --model en_combined --data UD_English-GUM/en_gum-ud-dev.conllu.gz

Time is wall clock per setting (best of ``--repeats``); run it on an idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from g2gt.data import EWT_DEV, find_data  # noqa: E402
from g2gt.ud.evaluate import evaluate  # noqa: E402
from g2gt.ud.io.conllu import read_conllu  # noqa: E402
from g2gt.ud.parse import Parser  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="en_combined", help="parser: a model name or path (default en_combined)")
    ap.add_argument("--data", default=None, help="gold CoNLL-U (default: UD EWT dev)")
    ap.add_argument("--thresholds", default="off,0.6,0.7,0.8,0.9,0.95", help="comma-separated; off = refine all")
    ap.add_argument("--dtype", default="auto", help="inference dtype (default auto)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    data = Path(args.data) if args.data else find_data(EWT_DEV)
    if data is None or not data.exists():
        print("no data: pass --data FILE or set G2GT_DATA", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    gold = read_conllu(data)
    words = sum(len(s) for s in gold)
    parser = Parser.load(args.model, dtype=args.dtype)
    print(f"{data.name}: {len(gold)} sentences, {words} words; {args.model} (refine steps {parser.refine_steps}), "
          f"dtype {args.dtype}, {args.threads} thread(s)")
    print("| threshold | LAS | UAS | UPOS | UFeats | Lemmas | passes / sentence | one pass | words/s |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name in args.thresholds.split(","):
        parser.refine_confidence = None if name == "off" else float(name)
        best = float("inf")
        with torch.inference_mode():
            for _ in range(max(1, args.repeats)):
                t0 = time.perf_counter()
                pred = parser.parse(gold)
                best = min(best, time.perf_counter() - t0)
            res = parser.predict(gold)
        sc = evaluate(gold, pred, gold_name=str(data), pred_name=name).scores
        one = sum(p.passes == 1 for p in res) / len(gold)
        tags = " | ".join(f"{sc[k].f1 * 100:.2f}" for k in ("UPOS", "UFeats", "Lemmas"))
        print(f"| {name} | {sc['LAS'].f1 * 100:.2f} | {sc['UAS'].f1 * 100:.2f} | {tags} | {res.passes / len(gold):.2f} | "
              f"{one:.0%} | {words / best:,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
