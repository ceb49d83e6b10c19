"""What every ``g2gt`` command shares: lazily configured parsers, the common options, options generated
from config dataclasses, and the checks that turn user mistakes into one-line errors.

Nothing here imports torch at module level: ``g2gt --help`` and ``g2gt COMMAND --help`` must answer at once.

* :class:`CommandParser`: an ``ArgumentParser`` whose options are added by a ``configure(parser)`` callback
  the first time the parser is used, so only the command that runs (or shows its help) builds its options.
  Its errors are one line: ``g2gt COMMAND: error: ... (see 'g2gt COMMAND --help')``, exit 2.
* :func:`add_common_options`: ``--device``, ``--threads``, ``--batch-tokens``, ``--progress/--no-progress`` and
  ``--debug``, the same on every command (options a command does not use are accepted and hidden from its help).
* :func:`add_dataclass_options` / :func:`add_signature_options`: ``--field-name`` options whose defaults come
  from a dataclass (or a function's keyword arguments), so defaults live in one place; a command declares the
  few defaults it wants different once, next to itself.
* :class:`UsageError`: raised by a command for a bad combination of arguments; printed as one line, exit 2.
"""

from __future__ import annotations

import argparse
import logging
import dataclasses
import inspect
import os
import sys
import textwrap
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import Error

__all__ = [
    "CommandParser", "UsageError", "add_common_options", "add_dataclass_options", "add_signature_options",
    "field_default", "signature_default",
    "option_values", "positive_int", "non_negative_int", "apply_runtime", "progress_enabled",
    "check_input_path", "check_output_path", "check_folder_path", "add_workers_option", "command_line",
]


class UsageError(Error):
    """A user error in a command's arguments (printed as ``g2gt COMMAND: error: MESSAGE``, exit 2); a
    :class:`g2gt.Error`, like every error a user can cause."""


# ---------------------------------------------------------------------------- parsers
class HelpFormatter(argparse.HelpFormatter):
    """Descriptions and epilogs: consecutive plain lines are one paragraph, re-wrapped to the terminal;
    indented lines (examples) are kept as written; a line ending in ':' ends its paragraph."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        para: list[str] = []

        def flush() -> None:
            if para:
                out.append(textwrap.fill(" ".join(para), width, initial_indent=indent, subsequent_indent=indent,
                                         break_on_hyphens=False, break_long_words=False))
                para.clear()

        for line in text.splitlines():
            if not line.strip():
                flush()
                out.append("")
            elif line[0].isspace():
                flush()
                out.append(indent + line)
            else:
                para.append(line.strip())
                if line.rstrip().endswith(":"):
                    flush()
        flush()
        return "\n".join(out)


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` configured on first use (parse or help) by ``configure(self)``.

    Sub-parsers created with ``subparsers.add_parser(name, configure=fn, ...)`` are ``CommandParser`` too
    (argparse builds them with the parent's class), so a whole command tree can be declared without
    importing any command's dependencies.
    """

    def __init__(self, *args: Any, configure: Callable[[CommandParser], None] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self._configure = configure

    def _ensure_configured(self) -> None:
        configure, self._configure = self._configure, None
        if configure is not None:
            configure(self)
            self.set_defaults(_parser=self)

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 - argparse API
        self._ensure_configured()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._ensure_configured()
        return super().format_help()

    def format_usage(self) -> str:
        self._ensure_configured()
        return super().format_usage()

    def error(self, message: str) -> typing.NoReturn:
        """One line on stderr, exit 2 (argparse would print the usage block first)."""
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


# ---------------------------------------------------------------------------- common options
COMMON_OPTIONS = ("device", "threads", "batch_tokens", "progress", "debug")


def add_common_options(parser: argparse.ArgumentParser, uses: Iterable[str] = COMMON_OPTIONS,
                       batch_tokens: int | None = None, batch_tokens_help: str | None = None) -> None:
    """Add the options every command accepts, in one group.

    ``uses``: the options this command acts on; the others are still accepted (so a script can pass
    ``--device cpu --threads 1`` to any command) but hidden from the command's help. ``batch_tokens``:
    the command's default for ``--batch-tokens`` (None = the library's default, or one the command sizes to the
    device, which ``batch_tokens_help`` then describes).
    """
    used = set(uses)
    unknown = used - set(COMMON_OPTIONS)
    if unknown:
        raise ValueError(f"unknown common options {sorted(unknown)}; expected some of {COMMON_OPTIONS}")

    def h(name: str, text: str) -> str:
        return text if name in used else argparse.SUPPRESS

    g = parser.add_argument_group("common options (the same for every g2gt command)")
    g.add_argument("--device", default="auto", metavar="DEVICE",
                   help=h("device", "auto (CUDA when available, else CPU), cpu, cuda or cuda:N (default: auto)"))
    g.add_argument("--threads", type=non_negative_int, default=0, metavar="N",
                   help=h("threads", "CPU threads for torch and the tokenizers (default: 0 = torch's default)"))
    bt = "the library's" if batch_tokens is None else str(batch_tokens)
    g.add_argument("--batch-tokens", type=positive_int, default=batch_tokens, metavar="N",
                   help=h("batch_tokens", batch_tokens_help or f"padded tokens per batch, padding included (default: {bt})"))
    g.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help=h("progress", "progress bars on stderr (default: when stderr is a terminal)"))
    g.add_argument("--debug", action="store_true",
                   help=h("debug", "show the Python traceback of an error instead of a one-line message"))
    loud = g.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", action="store_const", dest="log_level", const="WARNING", default="INFO",
                      help="only warnings and errors on stderr (no notices such as which model was loaded)")
    loud.add_argument("-v", "--verbose", action="store_const", dest="log_level", const="DEBUG",
                      help="also debugging messages on stderr")


def add_workers_option(parser: argparse.ArgumentParser) -> None:
    """``--workers N``: worker processes, one thread each (:mod:`g2gt.ud.scale.parallel`); default 1 = this process."""
    parser.add_argument("--workers", type=positive_int, default=1, metavar="N",
                        help="worker processes, one thread each, each loading the model once; the output is "
                             "byte-identical to --workers 1 (default: 1 = this process, --threads threads)")


def command_line(args: argparse.Namespace) -> str:
    """The command that gave ``args`` as typed (``g2gt train parser --out runs/p ...``), for a training folder's
    record of the commands that trained it (:func:`g2gt.core.run_folder.record_command`); paths under ``$G2GT_DATA``
    are written as ``$G2GT_DATA/...`` (see :func:`shell_words`)."""
    return shell_words(["g2gt", *getattr(args, "_argv", [])])


def shell_words(words: list[str]) -> str:
    """``words`` as one shell command line, each quoted as needed, except that a word starting with the value of
    ``$G2GT_DATA`` starts with ``$G2GT_DATA`` instead: a recorded command then names the data the same way on
    every machine (``--train $G2GT_DATA/ud/UD_French-Sequoia/...``), and the shell expands it when rerun."""
    import shlex

    from ..core.files import data_path_name

    out = []
    for w in words:
        named = data_path_name(w)
        if named == w:
            out.append(shlex.quote(w))
            continue
        rest = named[len("$G2GT_DATA"):]  # only the rest is quoted, so that the shell expands the variable
        out.append("$G2GT_DATA" + (shlex.quote(rest) if rest else ""))
    return " ".join(out)


def progress_enabled(args: argparse.Namespace) -> bool:
    """``--progress`` / ``--no-progress``, else whether stderr is a terminal."""
    value = getattr(args, "progress", None)
    return sys.stderr.isatty() if value is None else bool(value)


def cap_workers(args: argparse.Namespace) -> None:
    """Cap ``args.workers`` by the CPUs and the memory (:func:`g2gt.core.pool.fit_workers`), with one warning line
    when it is lowered (local processes only: Ray has its own)."""
    if getattr(args, "workers", 1) > 1 and not getattr(args, "ray", None):
        from ..core.pool import fit_workers

        used, why = fit_workers(args.workers)
        if why is not None:
            logging.getLogger("g2gt").warning("--workers %d: using %d worker process%s instead (%s)", args.workers,
                                              used, "es" * (used != 1), why)
            args.workers = used


def apply_runtime(args: argparse.Namespace, cap: bool = True) -> str:
    """Apply ``--threads``, the process setup of :func:`g2gt.core.pool.worker_setup` (no oneDNN primitive cache,
    freed memory kept for reuse), cap ``--workers`` (:func:`g2gt.core.pool.fit_workers`) and check ``--device``;
    returns the resolved device name."""
    from ..core.pool import worker_setup

    worker_setup()  # no oneDNN primitive cache (flat memory over a corpus), freed memory kept for reuse
    if cap:  # (cap=False: the caller has capped them, and may have started them)
        cap_workers(args)
    if args.threads:
        from ..core.train import set_threads

        set_threads(args.threads)
    from ..core.runtime import DeviceError, resolve_device

    try:
        return str(resolve_device(args.device))
    except DeviceError as e:
        raise UsageError(f"--device {args.device}: {str(e).split(': ', 1)[-1]}") from None


# ---------------------------------------------------------------------------- generated options
def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _plain_type(hint: Any) -> tuple[type, bool]:
    """``int`` / ``float`` / ``str`` / ``bool``, optionally ``| None`` -> ``(type, optional)``."""
    optional = False
    args = typing.get_args(hint)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            hint, optional = rest[0], True
    if hint in (int, float, str, bool):
        return hint, optional
    raise TypeError(f"cannot make a command-line option of type {hint!r}")


def _add_option(group: Any, name: str, hint: Any, default: Any, help_text: str, *, flag: str | None = None,
                choices: Iterable[Any] | None = None) -> None:
    kind, _ = _plain_type(hint)
    flags = [flag or _flag(name)]
    text = (help_text or "").replace("%", "%%")
    if kind is bool:
        kw: dict[str, Any] = dict(action=argparse.BooleanOptionalAction)
        shown = "yes" if default else "no"
    else:
        kw = dict(type=kind, metavar=_metavar(kind)) if choices is None else dict(type=kind, choices=list(choices))
        shown = "none" if default is None else default
    if "(default" not in text:
        text = f"{text} (default: {shown})".lstrip()
    group.add_argument(*flags, dest=name, default=default, help=text, **kw)


def _metavar(kind: type) -> str:
    return {int: "N", float: "X", str: "NAME"}[kind]


def _pick(names: Iterable[str] | None, available: Mapping[str, Any], what: str) -> list[str]:
    chosen = list(available) if names is None else list(names)
    missing = [n for n in chosen if n not in available]
    if missing:
        raise ValueError(f"{what} has no field(s) {missing}")
    return chosen


def add_dataclass_options(group: Any, cls: type, names: Iterable[str] | None = None, *,
                          defaults: Mapping[str, Any] | None = None, help: Mapping[str, str] | None = None,
                          flags: Mapping[str, str] | None = None,
                          choices: Mapping[str, Iterable[Any]] | None = None, grouped: bool = False) -> list[str]:
    """Add one ``--field-name`` option per chosen field of dataclass ``cls``; return the field names.

    Default: the field's default, unless ``defaults`` (the command's own, declared once next to it) says
    otherwise. Help: ``help[name]``, else the field's ``metadata["help"]``. ``flags`` renames an option
    (``{"num_layers": "--layers"}``), ``choices`` restricts values
    (also read from ``metadata["choices"]``). Booleans become ``--name/--no-name``. The parsed value is
    stored under the field name (see :func:`option_values`). ``grouped``: ``group`` is a parser, and each
    option goes into the argument group named by the field's ``metadata["group"]`` (created on first use).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    chosen = _pick(names, fields, cls.__name__)
    defaults, help, flags, choices = defaults or {}, help or {}, flags or {}, choices or {}
    for name in _pick(defaults, fields, cls.__name__):
        if name not in chosen:
            raise ValueError(f"a default is given for {name!r}, which is not one of the chosen options")
    titled: dict[str, Any] = {}
    for name in chosen:
        f = fields[name]
        if name in defaults:
            default = defaults[name]
        elif f.default is not dataclasses.MISSING:
            default = f.default
        else:
            raise ValueError(f"{cls.__name__}.{name} has no default: give one in `defaults`")
        if grouped:
            title = f.metadata.get("group") or "options"
            if title not in titled:
                titled[title] = group.add_argument_group(title)
            target = titled[title]
        else:
            target = group
        _add_option(target, name, hints[name], default, help.get(name, f.metadata.get("help", "")),
                    flag=flags.get(name), choices=choices.get(name, f.metadata.get("choices")))
    return chosen


def field_default(cls: type, name: str) -> Any:
    """The default of dataclass field ``name`` (for options the common group owns, e.g. ``batch_tokens``)."""
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    return f.default


def signature_default(func: Callable, name: str) -> Any:
    """The default of keyword argument ``name`` of ``func`` (e.g. ``batch_tokens`` of ``train_parser``, an option
    the common group owns): the one place such a default is written is the function's signature."""
    default = inspect.signature(func).parameters[name].default
    if default is inspect.Parameter.empty:
        raise ValueError(f"{func.__name__}({name}) has no default")
    return default


def add_signature_options(group: Any, func: Callable, names: Iterable[str], *,
                          defaults: Mapping[str, Any] | None = None, help: Mapping[str, str] | None = None,
                          flags: Mapping[str, str] | None = None,
                          choices: Mapping[str, Iterable[Any]] | None = None) -> list[str]:
    """Like :func:`add_dataclass_options` for keyword arguments of a function (defaults from its signature)."""
    params = inspect.signature(func).parameters
    hints = typing.get_type_hints(func)
    chosen = _pick(names, params, func.__name__)
    defaults, help, flags, choices = defaults or {}, help or {}, flags or {}, choices or {}
    for name in chosen:
        p = params[name]
        default = defaults.get(name, p.default)
        if default is inspect.Parameter.empty:
            raise ValueError(f"{func.__name__}({name}) has no default: give one in `defaults`")
        _add_option(group, name, hints[name], default, help.get(name, ""), flag=flags.get(name),
                    choices=choices.get(name))
    return chosen


def option_values(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """``{name: args.name}`` for generated options (feed it to the dataclass or function)."""
    return {n: getattr(args, n) for n in names}


# ---------------------------------------------------------------------------- file checks
def check_input_path(path: str | None, flag: str) -> None:
    """A named input must be an existing file (``-`` = stdin passes)."""
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory, expected a file")
    if not os.path.exists(path):
        raise UsageError(f"{flag} {path}: no such file")


def data_file_arg(value: str | None, rel: str, flag: str):
    """The data file a training option names, else the default ``rel`` found by :func:`g2gt.data.find_data`
    (``$G2GT_DATA``); a :class:`UsageError` saying where it looked otherwise."""
    from pathlib import Path

    from ..data import find_data

    if value:
        check_input_path(value, flag)
        return Path(value)
    path = find_data(rel)
    if path is None:
        raise UsageError(f"{flag} not given and the default {rel} was not found under $G2GT_DATA "
                         f"(set G2GT_DATA to a data folder, see data/README.md, or pass {flag} FILE)")
    return path


def check_folder_path(path: str | None, flag: str) -> None:
    """A folder to create or reuse (a training ``--out``) must not be an existing file."""
    if path is not None and os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a file, expected a folder")


def check_output_path(path: str | None, flag: str, inputs: Iterable[str | None] = (), in_place: bool = False) -> None:
    """An output must not be a directory, must be in an existing folder, and must not be one of the
    inputs (unless ``in_place``)."""
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory, expected a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{flag} {path}: the folder {folder} does not exist")
    if not in_place:
        from ..core.output import same_file

        for src in inputs:
            if src not in (None, "-") and same_file(src, path):
                raise UsageError(f"{flag} {path}: is the input file; refusing to overwrite it (pass --in-place to "
                                 "replace the input with the output)")
