"""Many input files -> one CoNLL-U file each in an output folder: atomic outputs, resume, failures reported.

Shared by the local workers (:mod:`g2gt.ud.scale.parallel`) and Ray (:mod:`g2gt.ud.scale.ray_data`):

* :func:`output_name`: ``story.txt`` / ``story.conllu`` / ``story.conllu.gz`` -> ``story.conllu``;
* :func:`plan_files`: ``(input, output)`` pairs, two inputs with one output name refused up front, and with
  ``resume`` the inputs whose output already exists skipped (an output exists only once it is complete:
  it is written to a temporary file and renamed at the end, :class:`g2gt.core.output.AtomicOutput`);
* :class:`FilesReport`: what was done, skipped and failed (``FILE:LINE: reason``), and the summary printed
  at the end; a malformed file fails alone, the others go on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

__all__ = ["INPUT_KINDS", "output_name", "plan_files", "FilesReport"]

INPUT_KINDS = ("conllu", "raw", "lines")
_TEXT_SUFFIXES = (".conllu", ".conllx", ".txt", ".text", ".raw", ".lines")


def output_name(path: str | os.PathLike) -> str:
    """The output file name of an input: its name without ``.gz`` and without a known text suffix
    (``.conllu``, ``.txt`` ...), plus ``.conllu``."""
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in _TEXT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return name + ".conllu"


def plan_files(inputs: Iterable[str | os.PathLike], output_dir: str | os.PathLike,
               resume: bool = False) -> tuple[list[tuple[str, Path]], list[tuple[str, Path]]]:
    """``(todo, skipped)``: ``(input, output path)`` pairs in input order; ``skipped`` (with ``resume``) are
    those whose output exists. Creates ``output_dir``. Raises ``ValueError`` for a missing input, a
    directory given as input, ``-`` (stdin has no name to derive an output from), or two inputs that would
    write the same output."""
    out_dir = Path(output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--output-dir {out_dir}: is a file, expected a folder")
    seen: dict[Path, str] = {}
    pairs: list[tuple[str, Path]] = []
    for src in inputs:
        src = os.fspath(src)
        if src == "-":
            raise ValueError("-: standard input cannot be used with --output-dir (name the input files)")
        if os.path.isdir(src):
            raise ValueError(f"{src}: is a directory, expected a file")
        if not os.path.exists(src):
            raise ValueError(f"{src}: no such file")
        dst = out_dir / output_name(src)
        if dst in seen:
            raise ValueError(f"{src} and {seen[dst]} would both write {dst}; rename one of them (outputs are named "
                             "after the input file)")
        seen[dst] = src
        pairs.append((src, dst))
    out_dir.mkdir(parents=True, exist_ok=True)
    if not resume:
        return pairs, []
    todo = [(s, d) for s, d in pairs if not d.exists()]
    return todo, [(s, d) for s, d in pairs if d.exists()]


@dataclass
class FilesReport:
    """The outcome of a run over files: ``done`` / ``skipped`` outputs, ``failed`` ``(input, message)``,
    and the sentences and words parsed."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    sentences: int = 0
    words: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        """A few lines for stderr: counts, then one line per failed file."""
        head = (f"{len(self.done)} file(s) written, {len(self.skipped)} skipped (already done), "
                f"{len(self.failed)} failed; {self.sentences} sentences, {self.words} words")
        lines = [head] + [f"failed: {msg}" if msg.startswith(src) else f"failed: {src}: {msg}"
                          for src, msg in self.failed]
        return "\n".join(lines)
