"""``g2gt build-kernel``: compile the C++ label-attention kernel now (:func:`g2gt.nn.label_cpp.build_ahead`)
rather than during the first parse or training on this machine."""

from __future__ import annotations

import argparse

from .common import add_common_options


def register(subparsers) -> None:
    subparsers.add_parser("build-kernel", help="compile the C++ label-attention kernel now (once per machine)",
                          configure=_configure)


def _configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Compile the CPU label-attention kernel (about 30 s, once per machine, needs a C++ compiler and ninja) "
        "so that the first 'g2gt parse' does not wait for it; later runs load it in a second. Without it every "
        "command still works on a slower pure-torch path. Exits with 1 and the reason when it cannot be built.")
    add_common_options(p, uses=("debug",))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..nn.label_cpp import build_ahead

    return build_ahead()
