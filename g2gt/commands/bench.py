"""``g2gt bench NAME [ARGS...]``: run one of the benchmark scripts in ``benchmarks/``."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

BENCHMARKS = {
    "attention": "GraphAttention vs plain SDPA, materialized labels and TransformerConv (time, memory)",
    "conv": "G2GConv vs torch_geometric TransformerConv on sparse graphs (time, memory)",
    "parse_speed": "parser words/s on EWT dev incl. MST and refinement",
    "seq2seq": "g2gt chain labels vs absolute positions vs torch.nn.Transformer at equal budget (BLEU, tokens/s)",
}


def _find(name: str) -> Path:
    for root in (Path.cwd(), Path(__file__).resolve().parents[2]):
        path = root / "benchmarks" / f"{name}.py"
        if path.exists():
            return path
    raise FileNotFoundError(
        f"benchmarks/{name}.py not found; run 'g2gt bench' from a checkout of the g2gt repository")


def run(args) -> int:
    if args.name is None:
        width = max(map(len, BENCHMARKS))
        for name, what in BENCHMARKS.items():
            print(f"  {name:<{width}}  {what}")
        return 0
    path = _find(args.name)
    sys.argv = [str(path), *args.args]
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        return int(e.code or 0) if not isinstance(e.code, str) else 1
    return 0


def register(sub, train_sub) -> None:
    p = sub.add_parser(
        "bench", help="run a benchmark script (benchmarks/NAME.py)",
        description="Run a benchmark from the repository's benchmarks/ folder; arguments after NAME go to the "
        "script (try 'g2gt bench attention --help'). Without NAME, list the benchmarks.")
    p.add_argument("name", nargs="?", choices=sorted(BENCHMARKS), help="benchmark to run")
    p.add_argument("args", nargs="...", help="arguments passed to the script")
    p.set_defaults(func=run)
