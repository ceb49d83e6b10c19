"""Aligned text files for translation: one sentence a line, plain or ``.gz``, UTF-8.

Every reader checks what it can before any training starts: invalid UTF-8 is reported as ``FILE:LINE``,
parallel files whose line counts differ raise :class:`MisalignedError` naming both files and counts.
"""

from __future__ import annotations

import os
from typing import IO

from ..core.files import iter_lines
from ..errors import Error

__all__ = ["MisalignedError", "check_aligned", "read_lines", "read_parallel", "read_training_data"]


class MisalignedError(Error):
    """Parallel files whose line counts differ."""


def read_lines(path: str | os.PathLike | IO, name: str | None = None) -> list[str]:
    """All lines of a plain or ``.gz`` UTF-8 file, ``"-"`` (stdin) or an open stream.

    The lines come without their line ends (``\\n`` / ``\\r\\n``); a UTF-8 byte-order mark at the start is
    dropped. The library's one line reader, :func:`g2gt.core.files.iter_lines`, read to the end.

    Raises :class:`g2gt.core.files.InputError` (a ``ValueError``) naming the file and line: ``FILE:LINE: not
    valid UTF-8 ...``, a ``.gz`` name that is not (complete) gzip, a directory.

    Args:
        path: a file, ``"-"`` or an open stream.
        name: the name in error messages (``None``: the path's).

    Returns:
        The lines.

    Raises:
        g2gt.core.files.InputError: invalid UTF-8, a broken ``.gz`` or a directory, naming the file and line.
    """
    return list(iter_lines(path, name))


def check_aligned(n_src: int, src_name: str, n_tgt: int, tgt_name: str) -> None:
    """Raise :class:`MisalignedError` unless both sides have the same number of sentences.

    Args:
        n_src: sentences on the source side.
        src_name: the source side's name, in the message.
        n_tgt: sentences on the target side.
        tgt_name: the target side's name, in the message.

    Raises:
        MisalignedError: the counts differ.
    """
    if n_src != n_tgt:
        raise MisalignedError(
            f"parallel files are misaligned: {src_name} has {n_src} lines but {tgt_name} has {n_tgt} lines "
            "(expected one sentence per line, the same number of lines in both)"
        )


def read_parallel(src: str | os.PathLike, tgt: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Read two aligned files (one sentence a line); fail if their line counts differ.

    Args:
        src: the source file.
        tgt: the target file.

    Returns:
        ``(sources, targets)``.

    Raises:
        MisalignedError: the line counts differ.
    """
    s, t = read_lines(src), read_lines(tgt)
    check_aligned(len(s), str(src), len(t), str(tgt))
    return s, t


def read_training_data(
    tgt_train: str | os.PathLike, tgt_dev: str | os.PathLike, src_train: str | os.PathLike | None = None,
    src_dev: str | os.PathLike | None = None, src_graphs: str | os.PathLike | None = None,
    src_dev_graphs: str | os.PathLike | None = None,
) -> tuple[list, list[str], list, list[str]]:
    """Read and check the files of a translation run -> ``(src_train, tgt_train, src_dev, tgt_dev)``.

    Sequence to sequence: ``src_train`` / ``src_dev`` are text files and the sources come back as strings.
    Graph to sequence: ``src_graphs`` / ``src_dev_graphs`` are CoNLL-U files with one parsed sentence per
    target line, and the sources come back as :class:`g2gt.ud.io.sentence.Sentence` objects; text files given
    too are only checked for their line counts. Every count is checked before anything is returned.

    Args:
        tgt_train: training targets (text).
        tgt_dev: dev targets (text).
        src_train: training sources (text; ``None`` in graph to sequence).
        src_dev: dev sources (text; ``None`` in graph to sequence).
        src_graphs: training sources parsed (CoNLL-U; ``None``: sequence to sequence).
        src_dev_graphs: dev sources parsed (CoNLL-U; ``None``: sequence to sequence).

    Returns:
        ``(src_train, tgt_train, src_dev, tgt_dev)``.

    Raises:
        MisalignedError: files whose counts differ.
        ValueError: sources given neither as text files nor as parses (or only one of the two parse files), or no
            training or dev sentences.
    """
    tgt_tr, tgt_dv = read_lines(tgt_train), read_lines(tgt_dev)
    if (src_graphs is None) != (src_dev_graphs is None):
        raise ValueError("source parses need both src_graphs (training) and src_dev_graphs (dev), or neither")
    if src_graphs is not None:
        from ..ud.io.conllu import read_conllu

        src_tr = read_conllu(src_graphs, require_heads=True)
        src_dv = read_conllu(src_dev_graphs, require_heads=True)
        check_aligned(len(src_tr), str(src_graphs), len(tgt_tr), str(tgt_train))
        check_aligned(len(src_dv), str(src_dev_graphs), len(tgt_dv), str(tgt_dev))
        for plain, parsed, graphs in ((src_train, src_tr, src_graphs), (src_dev, src_dv, src_dev_graphs)):
            if plain is not None:
                check_aligned(len(read_lines(plain)), str(plain), len(parsed), str(graphs))
    else:
        if src_train is None or src_dev is None:
            raise ValueError("give the source files (src_train and src_dev), or parsed sources (src_graphs and "
                             "src_dev_graphs)")
        src_tr, src_dv = read_lines(src_train), read_lines(src_dev)
        check_aligned(len(src_tr), str(src_train), len(tgt_tr), str(tgt_train))
        check_aligned(len(src_dv), str(src_dev), len(tgt_dv), str(tgt_dev))
    if not tgt_tr:
        raise ValueError(f"{tgt_train}: no training sentences")
    if not tgt_dv:
        raise ValueError(f"{tgt_dev}: no dev sentences")
    return src_tr, tgt_tr, src_dv, tgt_dv
