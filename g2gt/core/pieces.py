"""An input cut into pieces at paragraph or line ends by a cheap scan of its bytes, so that each piece can be
read, parsed and written on its own (by this process or by a worker that reads its own byte range).

A **piece** is a run of whole lines of about :data:`PIECE_BYTES` bytes or more: it ends right after the first
place, at least ``target`` bytes after its start, where

* ``unit="paragraph"`` (raw text, CoNLL-U): a run of blank lines ends (lines of spaces / tabs / ``\\r`` only,
  the run taken whole, so CoNLL-U's sentence separator and a text's paragraph break stay inside one piece); a
  text with no blank line for :data:`MAX_PIECE_BYTES` bytes is cut at the next line end instead;
* ``unit="line"`` (one sentence per line): a line ends.

Near the end of an input of known size the pieces get smaller (:func:`piece_target`), so that the workers
sharing the last ones finish together. The cut depends on the bytes (and their number) alone, never on who
reads them, so one process and N workers read the same pieces. The scan finds the cuts with ``bytes.find`` / a compiled ``re`` over 64 KiB blocks and counts lines
as it goes (a piece knows the line number of its first line, for ``FILE:LINE`` messages); memory is one piece.

    inp = open_input("big.txt")                      # opened and checked: UTF-8, line lengths (g2gt.core.files)
    for piece in input_pieces(inp, "paragraph"):     # Piece(index, offset, length, first_line, data)
        text = piece_text(piece, inp.path, inp.name)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from .files import CheckedInput, InputError

__all__ = ["PIECE_BYTES", "MAX_PIECE_BYTES", "Piece", "piece_target", "scan_pieces", "input_pieces", "read_piece", "piece_text"]

#: bytes a piece holds at least (the last one excepted): ~11,000 words of English text, small enough that two
#: workers share a 100,000-word input evenly, large enough that a piece's model batches are well filled
PIECE_BYTES = 1 << 16
#: a text without blank lines is cut at a line end once a piece holds this many bytes (memory stays bounded)
MAX_PIECE_BYTES = 1 << 20

_PARAGRAPH_END = re.compile(rb"\n(?:[ \t\r\f\v]*\n)+")
_LINE_SPACE = re.compile(rb"[ \t\r\f\v]*")
_UNITS = ("paragraph", "line")


@dataclass(frozen=True)
class Piece:
    """One piece of an input (see the module docstring).

    Attributes:
        index: its position, 0 for the first.
        offset: where it starts, in bytes of the (decompressed) input.
        length: its size in bytes.
        first_line: the 1-based line number of its first line.
        data: its bytes, or ``None`` when the reader reads them from the input's path (:func:`read_piece`).
    """

    index: int
    offset: int
    length: int
    first_line: int
    data: bytes | None = None


def _settled(buf: bytes, pos: int) -> bool:
    """Whether a cut at ``pos`` stands whatever bytes follow ``buf``: after it comes a byte that can neither
    continue a run of blank lines nor start one (the run before a cut is taken whole)."""
    return _LINE_SPACE.match(buf, pos).end() < len(buf)


def piece_target(target: int, offset: int, total: int | None) -> int:
    """The bytes a piece starting at ``offset`` of an input of ``total`` bytes holds at least: ``target``, less
    in the last ``2 * target`` bytes (half of what is left, at least ``target // 8``), so that the last pieces
    are small and the workers that share them finish together; ``target`` when ``total`` is not known."""
    if total is None:
        return target
    return max(1, target // 8, min(target, (total - offset) // 2))


def _cut(buf: bytes, unit: str, target: int, final: bool) -> int | None:
    """The end of the piece that starts at ``buf[0]``, or ``None`` when more bytes are needed to tell (``final``:
    ``buf`` holds the rest of the input). The answer never depends on how the input was cut into blocks."""
    if target >= len(buf):
        return len(buf) if final else None
    if unit == "line":
        nl = buf.find(b"\n", target - 1)
        return nl + 1 if nl >= 0 else (len(buf) if final else None)
    m = _PARAGRAPH_END.search(buf, target - 1)
    if m is not None:
        return m.end() if final or _settled(buf, m.end()) else None
    if len(buf) >= MAX_PIECE_BYTES:  # no paragraph end for a long way: the next line end
        nl = buf.find(b"\n", MAX_PIECE_BYTES - 1)
        if nl >= 0 and (final or _settled(buf, nl + 1)):
            return nl + 1
    return len(buf) if final else None


def scan_pieces(blocks: Iterable[bytes], unit: str = "paragraph", target: int = PIECE_BYTES,
                keep_data: bool = True, total: int | None = None) -> Iterator[Piece]:
    """The pieces of the input whose bytes come in ``blocks`` (any sizes), in order.

    Args:
        blocks: the input's bytes, in consecutive blocks.
        unit: ``"paragraph"`` or ``"line"`` (see the module docstring).
        target: bytes a piece holds at least (:data:`PIECE_BYTES`).
        keep_data: give each piece its bytes (``False``: ``data`` is ``None``, the reader reads the input's path).
        total: the input's size in bytes, when known: the last pieces are then smaller (:func:`piece_target`).

    Yields:
        The pieces; together they cover the input exactly.
    """
    if unit not in _UNITS:
        raise ValueError(f"unit must be one of {', '.join(_UNITS)}, got {unit!r}")
    if target < 1:
        raise ValueError(f"target must be >= 1 byte, got {target}")
    buf, base, line, index = b"", 0, 1, 0  # base: input offset of buf[0]
    it = iter(blocks)
    final = False
    while True:
        end = _cut(buf, unit, piece_target(target, base, total), final) if buf else None
        if end is None:
            if final:
                return
            block = next(it, None)
            if block is None:
                final = True
            else:
                buf += block
            continue
        piece = buf[:end]
        yield Piece(index, base, end, line, piece if keep_data else None)
        index, base, line = index + 1, base + end, line + piece.count(b"\n")
        buf = buf[end:]


def input_pieces(inp: CheckedInput, unit: str = "paragraph", target: int = PIECE_BYTES) -> Iterator[Piece]:
    """:func:`scan_pieces` of a checked input: without their bytes when it is a plain file (``inp.path``, which a
    worker reads itself), with them otherwise (stdin, ``.gz``, streams).

    Args:
        inp: the input (:func:`g2gt.core.files.open_input`).
        unit: ``"paragraph"`` or ``"line"``.
        target: bytes a piece holds at least.

    Yields:
        The pieces, in order.
    """
    return scan_pieces(inp.blocks(), unit, target, keep_data=inp.path is None, total=inp.size)


def read_piece(path: str, piece: Piece) -> bytes:
    """The bytes of ``piece``: its ``data``, or its byte range of the file ``path``."""
    if piece.data is not None:
        return piece.data
    with open(path, "rb") as f:
        f.seek(piece.offset)
        data = f.read(piece.length)
    if len(data) != piece.length:
        raise InputError(path, piece.first_line, "the file changed while it was read (it is shorter now)")
    return data


def piece_text(piece: Piece, path: str | None, name: str) -> str:
    """The text of ``piece`` (of the input named ``name``, read from ``path`` when the piece has no ``data``),
    decoded, a byte-order mark at the start of the input dropped.

    Raises:
        InputError: ``NAME:LINE: not valid UTF-8`` (the input changed after it was checked).
    """
    data = read_piece(path or name, piece)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = piece.first_line + data.count(b"\n", 0, e.start)
        raise InputError(name, line, "not valid UTF-8 (the input changed while it was read)") from None
    return text[1:] if piece.index == 0 and text.startswith("\ufeff") else text
