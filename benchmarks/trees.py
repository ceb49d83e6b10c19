"""Tree decoders on worst-case scores: words/s of Chu-Liu-Edmonds (``mst_decode``) against Eisner.

Random arc scores make the greedy heads rarely a tree, so MST contracts cycles on almost every sentence: its
worst case. Both decoders run interleaved in this process over ``--repeats`` rounds; the table gives the best
round's words/s and MST's speed as a ratio to Eisner's (the baseline). Before this benchmark a test asserted
MST > 2,500 words/s at n = 25 (typically > 20,000); that target is checked here now.

    python benchmarks/trees.py --lengths 10,25,50 --sentences 40 --repeats 5
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from g2gt.ud.parse.trees import eisner_decode, mst_decode  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="10,25,50", help="sentence lengths in words (default: %(default)s)")
    ap.add_argument("--sentences", type=int, default=40, help="random score matrices per length")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print("| words | MST words/s | Eisner words/s | MST / Eisner | MST > 2,500 words/s |")
    print("|--:|--:|--:|--:|---|")
    for n in (int(x) for x in args.lengths.split(",") if x):
        mats = [rng.normal(size=(n + 1, n + 1)) for _ in range(args.sentences)]  # row / column 0: the root
        best = {"mst": 0.0, "eisner": 0.0}
        for _ in range(args.repeats):
            for name, fn in (("mst", mst_decode), ("eisner", eisner_decode)):
                t0 = time.perf_counter()
                for s in mats:
                    fn(s)
                best[name] = max(best[name], n * len(mats) / (time.perf_counter() - t0))
        ok = "met" if best["mst"] > 2500 else "NOT met"
        print(f"| {n} | {best['mst']:,.0f} | {best['eisner']:,.0f} | {best['mst'] / best['eisner']:.2f} | {ok} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
