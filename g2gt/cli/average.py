"""``g2gt average``: the mean of the weights of several checkpoints of one run (:mod:`g2gt.core.average`)."""

from __future__ import annotations

import argparse
import sys

from .common import UsageError, add_common_options, check_input_path, check_output_path, positive_int


def register(subparsers) -> None:
    subparsers.add_parser("average", help="average the weights of checkpoints of one run into one model file",
                          configure=_configure)


def _configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Write the element-wise mean of the weights of several checkpoints of one training run (same model "
        "configuration and tensors) as a checkpoint that loads like best.pt (g2gt parse --model OUT, "
        "g2gt export-model --parser OUT). Training with --average-last K (g2gt train parser) keeps the last K "
        "evaluations' weights as OUT/step-NNNNNNN.pt and averages them itself.")
    p.epilog = ("examples:\n"
                "  g2gt average runs/p/step-0007400.pt runs/p/step-0007600.pt runs/p/step-0007800.pt -o avg.pt\n"
                "  g2gt average --last 3 runs/p -o runs/p/averaged.pt   # the newest 3 step files of a folder")
    p.add_argument("checkpoints", nargs="+", metavar="CKPT",
                   help="checkpoint files, or (with --last) one training folder")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the averaged checkpoint to write")
    p.add_argument("--last", type=positive_int, default=None, metavar="K",
                   help="average the newest K step-NNNNNNN.pt files of the training folder given")
    add_common_options(p, uses=("debug",))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..core.average import write_average
    from ..core.checkpoint import snapshots

    if args.last is not None:
        if len(args.checkpoints) != 1 or not Path(args.checkpoints[0]).is_dir():
            raise UsageError("--last K takes one training folder (with step-NNNNNNN.pt files, written by "
                             "'g2gt train parser --average-last K' or TrainConfig.keep_last)")
        found = [p for _, p in snapshots(args.checkpoints[0])]
        if not found:
            raise UsageError(f"{args.checkpoints[0]}: no step-NNNNNNN.pt files in this folder")
        files = found[-args.last:]
    else:
        for f in args.checkpoints:
            check_input_path(f, "CKPT")
        files = [Path(f) for f in args.checkpoints]
    check_output_path(args.output, "-o", inputs=[str(f) for f in files])
    ck = write_average(files, args.output)
    steps = ", ".join(str(s) for s in ck["averaged"]["steps"])
    print(f"averaged {len(files)} checkpoints (steps {steps}) into {args.output}", file=sys.stderr)
    return 0
