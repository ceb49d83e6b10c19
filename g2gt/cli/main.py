"""The ``g2gt`` command: sub-commands from :mod:`g2gt.cli`, one error handler.

Every sub-command is a :class:`~g2gt.cli.common.CommandParser` configured only when it runs or shows
its help, and command modules import torch only inside their ``run`` functions, so ``g2gt --help``,
``g2gt COMMAND --help`` and ``g2gt --version`` answer without loading torch.

Exit status: 0 on success; 2 for a mistake a user can make (bad arguments, missing / malformed / unreadable
files, a checkpoint that is not one, ``--device cuda`` without CUDA, a locked training folder ...), reported
as one line ``g2gt COMMAND: error: ...`` on stderr (the traceback only with ``--debug``); 1 for an internal
error (a bug: one line asking for a report, the traceback with ``--debug``); 130 after Ctrl-C; 141 when the
reader of stdout went away (``g2gt ... | head``), quietly, like other Unix tools.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

from .._version import __version__
from . import COMMAND_MODULES
from ..errors import Error
from .common import CommandParser

USER_ERROR, INTERNAL_ERROR, INTERRUPTED, BROKEN_PIPE = 2, 1, 130, 141


def _configure_train(parser: CommandParser, modules: list) -> None:
    parser.description = ("Train a model. Pick the task: 'g2gt train pipeline --treebank DIR' (every stage of a UD "
                          "treebank in one command), or one stage: segmenter, parser, enhancer, coref, lemmatizer; or seq2seq; or "
                          "distill trained parsers into a new one.")
    tasks = parser.add_subparsers(dest="task", metavar="TASK", required=True)
    for module in modules:
        if hasattr(module, "register_train"):
            module.register_train(tasks)


def build_parser() -> CommandParser:
    """The whole command tree; each command's options are added on first use."""
    parser = CommandParser(
        prog="g2gt",
        description="Graph-to-Graph Transformers: dependency parsing, seq2seq translation and graph attention "
        "layers on one encoder-decoder core.",
        epilog="Run 'g2gt COMMAND --help' for the options of a command (the common options --device, --threads, "
        "--batch-tokens, --progress/--no-progress, --debug and --quiet/--verbose are the same for every command). "
        "Start with 'g2gt parse --text \"The cat sat on the mat.\"' (the shipped English model, no training).")
    parser.add_argument("--version", action="version", version=f"g2gt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = [importlib.import_module(name) for name in COMMAND_MODULES]
    sub.add_parser("train", help="train a model (pipeline, segmenter, parser, enhancer, coref, seq2seq ...)",
                   configure=lambda p: _configure_train(p, modules))
    for module in modules:
        module.register(sub)
    return parser


# ---------------------------------------------------------------------------- errors
def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return "; ".join(lines)


def user_error_message(exc: BaseException) -> str | None:
    """The one-line message for an error a user can cause, or None for an internal error."""
    if isinstance(exc, Error):  # UsageError, CoNLLUError, InputError, CheckpointError ... (g2gt.Error)
        return str(exc)
    if isinstance(exc, OSError):
        if exc.filename is not None and exc.strerror:
            return f"{exc.filename}: {exc.strerror}"
        return str(exc) or type(exc).__name__
    if isinstance(exc, EOFError):
        return f"unexpected end of input ({exc})" if str(exc) else "unexpected end of input (truncated file?)"
    if isinstance(exc, ValueError):  # a library's own check of a value a user gave
        return str(exc)
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch is not None else None
    if isinstance(exc, MemoryError) or (oom is not None and isinstance(exc, oom)):
        return "out of memory; lower --batch-tokens (or use a smaller model)"
    return None


def _silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. captured in tests)
        pass


def _plain_g2gt_warnings() -> None:
    """Show g2gt's own warnings (text starting with ``g2gt:``) as that one line, without Python's file, line and
    source prefix; other warnings as Python shows them (``warnings.formatwarning`` is meant to be replaced)."""
    import warnings

    default = warnings.formatwarning
    if getattr(default, "g2gt", False):
        return

    def formatwarning(message, category, filename, lineno, line=None):
        text = str(message)
        return text + "\n" if text.startswith("g2gt:") else default(message, category, filename, lineno, line)

    formatwarning.g2gt = True  # type: ignore[attr-defined]
    warnings.formatwarning = formatwarning


class _StderrHandler(logging.StreamHandler):
    """The CLI's handler of the ``g2gt`` logger: ``g2gt: message`` on the stderr of the moment (tests swap it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("g2gt: %(message)s"))

    @property
    def stream(self):  # noqa: D401 - the current sys.stderr, not the one at start
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def _install_log_handler(level: str) -> None:
    """Library messages (``logging.getLogger("g2gt")``) as one line each on stderr at ``level`` and above."""
    logger = logging.getLogger("g2gt")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        logger.addHandler(_StderrHandler())
    logger.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    """Run ``g2gt`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    if argv is None:  # the command itself: glibc's malloc without its cache of freed blocks (flat memory)
        from ..core.malloc_tunables import run_without_malloc_cache

        run_without_malloc_cache()
    _plain_g2gt_warnings()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    _install_log_handler(getattr(args, "log_level", "INFO"))
    args._argv = list(sys.argv[1:] if argv is None else argv)  # the command as typed (command_line)
    command = getattr(args, "_parser", parser)
    if extra:
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    prog = command.prog
    from ..core.output import exit_on_sigterm

    restore = exit_on_sigterm()  # SIGTERM exits through the with blocks: no temporary output is left behind
    try:
        rc = args.func(args)
        sys.stdout.flush()
    except SystemExit as e:
        if e.code == 128 + 15:
            print(f"{prog}: terminated (SIGTERM)", file=sys.stderr)
        raise
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as e:
        if getattr(args, "debug", False):
            raise
        message = user_error_message(e)
        if message is not None:
            print(f"{prog}: error: {_one_line(message)}", file=sys.stderr)
            return USER_ERROR
        print(f"{prog}: internal error: {type(e).__name__}: {_one_line(str(e))} (a bug: please report it; "
              "--debug shows the traceback)", file=sys.stderr)
        return INTERNAL_ERROR
    finally:
        restore()
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
