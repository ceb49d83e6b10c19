"""``g2gt parse`` at corpus scale: ``--workers N`` processes, ``--ray ADDRESS|local`` and ``--output-dir``.

* ``--workers N`` (one input, one output): :class:`g2gt.ud.scale.parallel.ParallelPipeline`, the same bytes as
  ``--workers 1``;
* ``INPUTS... --output-dir DIR`` (``--raw FILE...`` / ``--lines FILE...`` for text): one CoNLL-U file per
  input, written atomically; ``--resume`` skips the finished ones; a malformed file is reported with
  ``FILE:LINE`` and the others go on (exit status 1 at the end, with a summary);
* ``--ray local|ADDRESS`` with ``--output-dir``: the same through a Ray actor pool (:mod:`g2gt.ud.scale.ray_data`,
  the optional extra ``g2gt[ray]``), on this machine or a cluster;
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .common import UsageError, progress_enabled

__all__ = ["add_files_options", "uses_files", "normalize_inputs", "run_files", "run_workers"]

FILES_FAILED = 1  # exit status when some input files failed (the others were written)


def add_files_options(p: argparse.ArgumentParser) -> None:
    """``--ray``, ``--output-dir``, ``--resume`` (``--workers`` is :func:`g2gt.cli.common.add_workers_option`)."""
    g = p.add_argument_group("many files (one output per input)")
    g.add_argument("--output-dir", metavar="DIR", default=None,
                   help="write one CoNLL-U file per input into DIR (INPUT.conllu / story.txt -> story.conllu), "
                        "each atomically; give several INPUTs (CoNLL-U), or --raw / --lines with several files. "
                        "A malformed file is reported with FILE:LINE and the others go on (exit status 1)")
    g.add_argument("--resume", action="store_true", help="with --output-dir: skip inputs whose output exists "
                   "(an output appears only once complete)")
    g.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="with --output-dir: parse through a Ray actor pool (pip install 'g2gt[ray]'): 'local' "
                        "(default) starts Ray on this machine with --workers actors (default: all cores), "
                        "an ADDRESS ('auto', 'ray://HOST:10001') joins a cluster")


def uses_files(args: argparse.Namespace) -> bool:
    return args.output_dir is not None or args.ray is not None


def normalize_inputs(args: argparse.Namespace) -> tuple[str, list[str]]:
    """``(kind, files)`` of the input options (INPUT..., ``--raw FILE...``, ``--lines FILE...``); outside
    ``--output-dir`` mode each option is turned back into the one value the one-output path reads."""
    given = [(k, v) for k, v in (("conllu", args.input), ("raw", args.raw), ("lines", args.lines)) if v]
    kind, files = given[0] if len(given) == 1 else ("conllu", [])
    if not uses_files(args):
        for name, flag in (("input", "INPUT"), ("raw", "--raw"), ("lines", "--lines")):
            value = getattr(args, name)
            if value and len(value) > 1:
                raise UsageError(f"{flag}: {len(value)} files given; several inputs need --output-dir DIR (one "
                                 "output per input)")
            setattr(args, name, value[0] if value else None)
    return kind, list(files)


def run_files(args: argparse.Namespace, device: str, kw: dict) -> int:
    """INPUTS... --output-dir DIR, with local workers or Ray; returns the exit status."""
    if args.ray not in (None, "local", "auto") and os.path.isfile(args.ray):  # --ray FILE...: FILE is an input
        args.input, args.ray = [args.ray, *(args.input or [])], "local"
    kind, files = normalize_inputs(args)
    given = [n for n, v in (("INPUT", args.input), ("--raw", args.raw), ("--lines", args.lines)) if v]
    if args.output_dir is None:
        raise UsageError("--ray needs --output-dir DIR (one CoNLL-U file per input)")
    if len(given) != 1 or args.text is not None:
        raise UsageError("--output-dir: give the input files one way: INPUT... (CoNLL-U), --raw FILE... or "
                         "--lines FILE... (not --text)")
    if args.output or args.in_place:
        raise UsageError("--output-dir writes one file per input; -o / --in-place do not apply")
    kw = {k: v for k, v in kw.items() if k != "progress"}
    tokenizer = args.tokenizer if kind == "raw" else "rule"
    t0 = time.time()
    try:
        if args.ray is not None:
            report = _ray_files(args, files, kind, device, tokenizer, kw)
        else:
            from ..ud.scale.parallel import ParallelPipeline

            with ParallelPipeline(args.model, args.workers, device=device, dtype=args.dtype, tokenizer=tokenizer,
                                  progress=progress_enabled(args)) as pp:
                report = pp.parse_files(files, args.output_dir, kind, resume=args.resume, **kw)
    except FileNotFoundError as e:
        raise UsageError(f"--model {e}") from None
    dt = time.time() - t0
    print(report.summary() + f" in {dt:.2f}s ({report.words / max(dt, 1e-9):.0f} words/s)", file=sys.stderr)
    return 0 if report.ok else FILES_FAILED


def _ray_files(args, files, kind, device, tokenizer, kw):
    try:
        from ..ud.scale.ray_data import parse_files
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UsageError(f"--ray needs Ray: pip install 'g2gt[ray]' ({e})") from None
    try:
        import ray  # noqa: F401
    except ImportError:
        raise UsageError("--ray needs Ray Data: pip install 'g2gt[ray]'") from None
    actors = args.workers if args.workers > 1 else None
    return parse_files(files, args.output_dir, address=args.ray, kind=kind, resume=args.resume, actors=actors,
                       name_or_path=args.model, device=device, dtype=args.dtype, tokenizer=tokenizer, log=None,
                       **kw)


def run_workers(args: argparse.Namespace, pp, source, output: str, kw: dict) -> int:
    """One input -> ``output`` with the started workers ``pp`` (a :class:`~g2gt.ud.scale.parallel.ParallelPipeline`):
    a file (:class:`g2gt.cli.parsing.FileInput`) piece by piece, each worker reading its own pieces
    (:mod:`g2gt.ud.scale.piecewise`); ``--text`` as sentences."""
    from ..core.output import open_output

    kw = {k: v for k, v in kw.items() if k != "progress"}
    stats = {"sentences": 0, "words": 0}
    pp.pool.wait_ready()  # the models are loaded: words/s below counts parsing, as with one process
    t0 = time.time()
    if isinstance(source, str):  # --text: the pieces of a file holding it
        from ..ud.limits import drop_control_characters
        from ..ud.scale.piecewise import text_jobs, write_pieces

        with open_output(output) as f:
            write_pieces(pp.parse_jobs(text_jobs(drop_control_characters(source)), **kw), f.write, stats)
    else:
        stats = pp.parse_file(source.inp, output, source.kind, tokenizer=source.tokenizer, **kw)
    dt = time.time() - t0
    print(f"parsed {stats['sentences']} sentence{'s' * (stats['sentences'] != 1)}, {stats['words']} "
          f"word{'s' * (stats['words'] != 1)} in {dt:.2f}s "
          f"({stats['words'] / max(dt, 1e-9):.0f} words/s, {args.workers} workers)", file=sys.stderr)
    return 0
