"""The ``g2gt`` command. Sub-commands are contributed by :mod:`g2gt.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys

from .commands import COMMAND_MODULES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="g2gt",
        description="Graph-to-Graph Transformers: dependency parsing, seq2seq translation and graph attention "
        "layers on one encoder-decoder core.",
        epilog="Run 'g2gt COMMAND --help' for the options of a command. Start with 'g2gt demo'.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    train = sub.add_parser("train", help="train a model (parser or seq2seq)",
                           description="Train a model. Pick the task: 'g2gt train parser' or 'g2gt train seq2seq'.")
    train_sub = train.add_subparsers(dest="task", metavar="TASK")
    train.set_defaults(func=lambda args: (train.print_help(), 2)[1])
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue  # optional command module not present
            raise
        module.register(sub, train_sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (FileNotFoundError, ValueError) as e:
        if getattr(args, "debug", False):
            raise
        print(f"g2gt {args.command}: error: {e}", file=sys.stderr)
        return 1
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
