"""``g2gt bench NAME [ARGS...]``: run one of the benchmark scripts of the g2gt checkout this package is
imported from.

The scripts live in ``benchmarks/`` beside the ``g2gt`` package of a source checkout (an editable install).
They are found relative to the imported package, never in the current folder, so ``g2gt bench`` cannot run
someone else's ``benchmarks/NAME.py``; with a wheel install (no checkout) it says so.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

from .common import UsageError, add_common_options

BENCHMARKS = {
    "attention": "GraphAttention vs plain SDPA, materialized labels and TransformerConv (time, memory)",
    "conv": "G2GConv vs torch_geometric TransformerConv on sparse graphs (time, memory)",
    "parse_speed": "parser words/s on EWT dev incl. MST and refinement",
    "seq2seq": "g2gt chain labels vs absolute positions vs torch.nn.Transformer at equal budget (BLEU, tokens/s)",
}


def register(subparsers) -> None:
    subparsers.add_parser("bench", help="run a benchmark script of the g2gt checkout (benchmarks/NAME.py)",
                          configure=_configure)


def _configure(p: argparse.ArgumentParser) -> None:
    p.description = ("Run a benchmark from the benchmarks/ folder of the g2gt source checkout that this g2gt "
                     "package is imported from (not from the current folder). Arguments after NAME go to the "
                     "script (try 'g2gt bench attention --help'). Without NAME, list the benchmarks.")
    p.add_argument("name", nargs="?", choices=sorted(BENCHMARKS), metavar="NAME",
                   help="benchmark to run: " + ", ".join(sorted(BENCHMARKS)))
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    add_common_options(p, uses=("debug",))
    p.set_defaults(func=run)


def checkout_root() -> Path | None:
    """The source checkout holding the imported ``g2gt`` package (its ``pyproject.toml`` names g2gt),
    or None for an installed wheel."""
    root = Path(__file__).resolve().parents[2]  # g2gt/cli/bench.py -> the folder holding the g2gt package
    project = root / "pyproject.toml"
    try:
        text = project.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if 'name = "g2gt"' in text else None


def find_benchmark(name: str) -> Path:
    """``benchmarks/NAME.py`` of the checkout this package comes from (UsageError when not available)."""
    if name not in BENCHMARKS:
        raise UsageError(f"unknown benchmark {name!r}; expected one of {', '.join(sorted(BENCHMARKS))}")
    root = checkout_root()
    if root is None:
        raise UsageError("the benchmarks are not installed with the g2gt package; run 'g2gt bench' from an "
                         "editable install of a g2gt source checkout (pip install -e .)")
    path = root / "benchmarks" / f"{name}.py"
    if not path.is_file():
        raise UsageError(f"{path}: missing from the g2gt checkout")
    return path


def run(args: argparse.Namespace) -> int:
    if args.name is None:
        width = max(map(len, BENCHMARKS))
        for name, what in BENCHMARKS.items():
            print(f"  {name:<{width}}  {what}")
        return 0
    path = find_benchmark(args.name)
    saved = sys.argv
    sys.argv = [str(path), *args.args]
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved
    return 0
