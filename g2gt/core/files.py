"""Opening inputs: plain or gzip files, stdin, UTF-8 and sizes checked up front (outputs: :mod:`g2gt.core.output`).

Inputs (:func:`open_input`) are one of

* a path (``str`` / ``os.PathLike``); a name ending in ``.gz`` is decompressed;
* ``"-"``: standard input (named ``<stdin>`` in messages);
* an open binary or text stream (a text stream with a ``.buffer``, such as ``sys.stdin``
  or a file opened in text mode, is read through its bytes).

Every input is checked *before* its first line is handed out: a directory, a ``.gz`` name
that is not gzip data, and bytes that are not UTF-8 (``FILE:LINE: not valid UTF-8 ...``)
raise :class:`InputError` at once.  The check reads the input once; a pipe (stdin) is
copied to a temporary file on disk while it is checked, so memory stays independent of
the input's length.  A UTF-8 byte-order mark at the start is dropped.

**Size limits.** A line longer than :func:`max_line_bytes` bytes (after decompression; default 1 MiB,
``$G2GT_MAX_LINE_BYTES``) is refused by that check (``FILE:LINE: line longer than ...``), so a small ``.gz``
that unpacks to one huge line never reaches memory; text read as a whole (:meth:`CheckedInput.read`,
:func:`read_text`) is refused beyond :func:`max_text_bytes` (default 256 MiB, ``$G2GT_MAX_TEXT_BYTES``).
Both are read at each call; 0 means no limit.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import stat
import sys
import tempfile
import zlib
from typing import IO, Any, Iterator, Union

from ..errors import Error

__all__ = [
    "data_path_name",
    "max_line_bytes",
    "max_text_bytes",
    "InputError",
    "Source",
    "CheckedInput",
    "open_input",
    "source_name",
    "read_text",
    "iter_lines",
]

Source = Union[str, "os.PathLike[str]", IO[str], IO[bytes]]

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


LINE_ENV, DEFAULT_MAX_LINE_BYTES = "G2GT_MAX_LINE_BYTES", 1 << 20
TEXT_ENV, DEFAULT_MAX_TEXT_BYTES = "G2GT_MAX_TEXT_BYTES", 256 << 20


def _env_bytes(env: str, default: int) -> int:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ValueError(f"{env} must be a whole number of bytes >= 0 (0 = no limit), got {raw!r}")
    return int(raw)


def max_line_bytes() -> int:
    """The longest input line read, in bytes after decompression: ``$G2GT_MAX_LINE_BYTES`` (0 = no limit),
    else 1 MiB (a CoNLL-U word line has a few hundred bytes, a paragraph of raw text a few thousand)."""
    return _env_bytes(LINE_ENV, DEFAULT_MAX_LINE_BYTES)


def max_text_bytes() -> int:
    """The largest text read as a whole (``read_text``, ``g2gt parse --raw``), in bytes after decompression:
    ``$G2GT_MAX_TEXT_BYTES`` (0 = no limit), else 256 MiB."""
    return _env_bytes(TEXT_ENV, DEFAULT_MAX_TEXT_BYTES)


def _too_long(limit: int) -> str:
    return (f"line longer than {limit:,} bytes, the limit on one input line (set ${LINE_ENV} to a larger number "
            "of bytes, or 0 for no limit, to read it)")


def _too_large(limit: int) -> str:
    return (f"text larger than {limit:,} bytes, the limit on a text read as a whole (set ${TEXT_ENV} to a larger "
            "number of bytes, or 0 for no limit, to read it; or give one sentence per line with --lines)")


class InputError(Error):
    """Unusable input. ``str(err)`` is ``"FILE:LINE: reason"``, or ``"FILE: reason"`` when the
    problem concerns the whole file (then ``line == 0``)."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = str(path)
        self.line = int(line)
        self.reason = message
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        super().__init__(f"{where}: {message}")


def _is_path(source: Any) -> bool:
    return isinstance(source, (str, bytes, os.PathLike))


def source_name(source: Source, name: str | None = None) -> str:
    """The name used in messages: ``name``, else the path, ``<stdin>`` for ``"-"``, a stream's
    ``name`` attribute, or ``<stream>``."""
    if name:
        return str(name)
    if _is_path(source):
        path = os.fsdecode(source)  # type: ignore[arg-type]
        return "<stdin>" if path == "-" else path
    n = getattr(source, "name", None)
    return n if isinstance(n, str) and n else "<stream>"


def _utf8_message(bad: int, col: int, head: bytes) -> str:
    """Say which byte is wrong, and what the file looks like when its first bytes tell (``head``)."""
    msg = f"not valid UTF-8 (byte 0x{bad:02x} at byte column {col})"
    if head.startswith(GZIP_MAGIC):
        return msg + "; this looks like gzip data: decompress it, or give it a name ending in .gz"
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return msg + "; this looks like UTF-16: convert it, e.g. iconv -f UTF-16 -t UTF-8"
    return msg + "; expected UTF-8 text: convert it first, e.g. iconv -f LATIN1 -t UTF-8"


class CheckedInput:
    """An input that has been opened and checked (see the module docstring).

    Args:
        source: a path, ``"-"`` or an open stream.
        name: the name used in messages (default: :func:`source_name`).
        error: the :class:`InputError` subclass to raise (readers of a format pass their own).
        kind: what the file should hold, for messages (``"CoNLL-U"``, ``"text"``).

    Raises:
        FileNotFoundError: ``"FILE: no such file"``.
        InputError: a directory, an unreadable file, a ``.gz`` name that is not (complete)
            gzip data, or bytes that are not UTF-8 (naming the first bad line).
    """

    def __init__(self, source: Source, name: str | None = None, *, error: type[InputError] = InputError,
                 kind: str = "text") -> None:
        self.error = error
        self.kind = kind
        self._path: str | None = None
        self._stream: Any = None  # a binary stream to read from (the caller's, or our spool)
        self._text: Any = None  # a text stream without bytes underneath (io.StringIO)
        self._start = 0
        self._owned = False
        self.size: int | None = None  # bytes (decompressed), once the check has read them all
        if _is_path(source) and os.fsdecode(source) != "-":  # type: ignore[arg-type]
            self._path = os.fsdecode(source)  # type: ignore[arg-type]
            self.name = name or self._path
            if os.path.isdir(self._path):
                raise error(self.name, 0, f"is a directory, expected a {kind} file")
            with self._open_path() as f:
                if _is_regular(self._path):
                    self._scan(f)
                    return
                self._stream, self._owned = self._spool(f), True  # a FIFO, /dev/stdin, <(process substitution)
            self._path = None
            return
        if _is_path(source):  # "-"
            source = sys.stdin
            self.name = name or "<stdin>"
        else:
            self.name = source_name(source, name)
        stream: Any = getattr(source, "buffer", source)
        if isinstance(stream.read(0), str):  # a text stream without a byte layer
            self._text = stream
            if _seekable(stream):
                self._start = stream.tell()
                self.size = sum(len(line.encode("utf-8")) for line in self._text_lines())
                stream.seek(self._start)
            return
        if _seekable(stream):
            self._stream, self._start = stream, stream.tell()
            self._scan(stream)
            stream.seek(self._start)
        else:  # a pipe can be read only once: keep a copy on disk while checking it
            self._stream, self._owned = self._spool(stream), True

    def _spool(self, stream: IO[bytes]) -> IO[bytes]:
        """Check ``stream`` while copying it to a temporary file (on disk); the copy, rewound."""
        spool = tempfile.TemporaryFile(prefix="g2gt-input-")
        try:
            self._scan(stream, spool)
            spool.seek(0)
        except BaseException:
            spool.close()
            raise
        return spool

    # ------------------------------------------------------------------ opening
    def _open_path(self) -> IO[bytes]:
        assert self._path is not None
        try:
            f: IO[bytes] = open(self._path, "rb")
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.name}: no such file") from None
        except OSError as e:
            raise self.error(self.name, 0, f"cannot be read ({e.strerror or e})") from None
        if not self._path.endswith(".gz"):
            return f
        head = f.peek(2)[:2]  # type: ignore[attr-defined]
        if not GZIP_MAGIC.startswith(head):
            f.close()
            raise self.error(self.name, 0, "is not gzip-compressed, but its name ends in .gz "
                                           "(decompress it properly, or rename it without .gz)")
        return _GzipReader(f)  # type: ignore[return-value]

    def _read(self, f: IO[bytes], line: int) -> bytes:
        try:
            return f.read(_CHUNK)
        except (gzip.BadGzipFile, zlib.error) as e:
            raise self.error(self.name, 0, f"is not valid gzip data ({e})") from None
        except EOFError:
            raise self.error(self.name, 0, f"the gzip data is truncated (it ends inside line {line})") from None

    def _scan(self, f: IO[bytes], spool: IO[bytes] | None = None) -> None:
        """Read ``f`` to the end, raising at the first byte that is not UTF-8 (copying to ``spool``)."""
        dec = codecs.getincrementaldecoder("utf-8")()
        line, col0, head = 1, 0, b""  # col0: bytes since the last newline before this chunk
        limit = max_line_bytes()
        self.size = 0
        while True:
            chunk = self._read(f, line)
            self.size += len(chunk)
            if limit and col0 + len(chunk) > limit:  # only then can a line be over the limit
                self._check_line_lengths(chunk, line, col0, limit)
            if len(head) < 2:
                head += chunk[:2]
            if spool is not None and chunk:
                spool.write(chunk)
            try:
                dec.decode(chunk, final=not chunk)
            except UnicodeDecodeError as e:
                k = e.start - (len(e.object) - len(chunk))  # position in chunk (< 0: began before it)
                nl = chunk.rfind(b"\n", 0, k) if k > 0 else -1
                ln = line + (chunk.count(b"\n", 0, k) if k > 0 else 0)
                col = k - nl if nl >= 0 else col0 + k + 1
                raise self.error(self.name, ln, _utf8_message(e.object[e.start], col, head)) from None
            if not chunk:
                return
            nl = chunk.rfind(b"\n")
            col0 = len(chunk) - nl - 1 if nl >= 0 else col0 + len(chunk)
            line += chunk.count(b"\n")

    def _check_line_lengths(self, chunk: bytes, line: int, col: int, limit: int) -> None:
        """Raise at the first line of ``chunk`` (starting at ``line``, ``col`` bytes into it) over ``limit``."""
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl
            if col + end - start > limit:
                raise self.error(self.name, line, _too_long(limit))
            if nl < 0:
                return
            line, col, start = line + 1, 0, nl + 1

    # ------------------------------------------------------------------ reading
    def _text_lines(self) -> Iterator[str]:
        limit = max_line_bytes()
        for k, line in enumerate(self._text, 1):
            if limit and len(line) > limit // 4 and len(line.rstrip("\n").encode("utf-8", "surrogatepass")) > limit:
                raise self.error(self.name, k, _too_long(limit))
            if _SURROGATE_RE.search(line):
                raise self.error(self.name, k, "not valid UTF-8 (the text stream holds undecodable bytes); "
                                               "expected UTF-8 text")
            yield line

    def _binary(self) -> tuple[IO[bytes], bool]:
        """The byte stream to read and whether to close it afterwards."""
        if self._path is not None:
            return self._open_path(), True
        return self._stream, self._owned

    def lines(self) -> Iterator[str]:
        """The decoded lines, each without its ``\\n`` (a ``\\r`` before it is kept)."""
        if self._text is not None:
            for k, line in enumerate(self._text_lines(), 1):
                if k == 1 and line.startswith("\ufeff"):
                    line = line[1:]
                yield line[:-1] if line.endswith("\n") else line
            return
        f, close = self._binary()
        text = io.TextIOWrapper(f, encoding="utf-8", newline="\n")  # split on "\n" only, no translation
        k = 0
        try:
            while True:
                try:
                    line = text.readline()
                except UnicodeDecodeError:
                    raise self.error(self.name, k + 1, "not valid UTF-8 (the input changed while it was read)") from None
                except (gzip.BadGzipFile, zlib.error, EOFError) as e:
                    raise self.error(self.name, 0, f"is not valid gzip data ({e})") from None
                if not line:
                    break
                k += 1
                if k == 1 and line.startswith("\ufeff"):
                    line = line[1:]
                yield line[:-1] if line.endswith("\n") else line
        finally:
            text.detach()
            if close:
                f.close()

    @property
    def path(self) -> str | None:
        """The input's path when it is a plain (uncompressed, regular) file that can be read again by byte
        ranges (:mod:`g2gt.core.pieces`); ``None`` for stdin, streams and ``.gz``."""
        return self._path if self._path is not None and not self._path.endswith(".gz") else None

    def blocks(self) -> Iterator[bytes]:
        """The input's bytes (decompressed), in blocks of up to 64 KiB, as they were checked."""
        if self._text is not None:
            if _seekable(self._text):
                self._text.seek(self._start)
            for line in self._text_lines():
                yield line.encode("utf-8")
            return
        f, close = self._binary()
        if self._path is None:
            f.seek(self._start)  # a stream (or our copy of a pipe) is read again from where it started
        try:
            while True:
                chunk = self._read(f, 0)
                if not chunk:
                    return
                yield chunk
        finally:
            if close:
                f.close()

    def read(self) -> str:
        """The whole text (byte-order mark dropped); at most :func:`max_text_bytes` bytes."""
        limit = max_text_bytes()
        if self._text is not None:
            size, parts_text = 0, []
            for line in self._text_lines():
                size += len(line)
                if limit and size > limit:
                    raise self.error(self.name, 0, _too_large(limit))
                parts_text.append(line)
            out = "".join(parts_text)
        else:
            parts, size = [], 0
            for chunk in self.blocks():
                size += len(chunk)
                if limit and size > limit:
                    raise self.error(self.name, 0, _too_large(limit))
                parts.append(chunk)
            try:
                out = b"".join(parts).decode("utf-8")
            except UnicodeDecodeError:
                raise self.error(self.name, 0, "not valid UTF-8 (the input changed while it was read)") from None
        return out[1:] if out.startswith("\ufeff") else out


class _GzipReader(gzip.GzipFile):
    """A gzip stream that also closes the file it decompresses."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _seekable(stream: Any) -> bool:
    try:
        if not stream.seekable():
            return False
        stream.tell()
        return True
    except (AttributeError, OSError, ValueError):
        return False


def open_input(source: Source, name: str | None = None, *, error: type[InputError] = InputError,
               kind: str = "text") -> CheckedInput:
    """Open and check an input (see :class:`CheckedInput`)."""
    return CheckedInput(source, name, error=error, kind=kind)


def read_text(source: Source, name: str | None = None) -> str:
    """The whole text of a file, ``"-"`` (stdin) or stream, with its line ends as they are.

    Raises:
        InputError: ``FILE:LINE: not valid UTF-8 ...``, a directory, a broken ``.gz``.
        FileNotFoundError: no such file.
    """
    return open_input(source, name, kind="text").read()


def iter_lines(source: Source, name: str | None = None) -> Iterator[str]:
    """The lines of a text input without their ``\\n`` / ``\\r\\n``, read one at a time.

    The input is opened and checked (as for :func:`read_text`) by this call, before the
    first line is returned; memory does not grow with the input.
    """
    inp = open_input(source, name, kind="text")
    return (line[:-1] if line.endswith("\r") else line for line in inp.lines())


def data_path_name(path: str | os.PathLike[str]) -> str:
    """``path`` as a record should name it: under ``$G2GT_DATA`` as ``$G2GT_DATA/...`` (the same on every
    machine, and the shell expands it when a recorded command is rerun), any other path as it is."""
    text = os.fspath(path)
    root = os.environ.get("G2GT_DATA", "").rstrip("/")
    if root and (text == root or text.startswith(root + "/")):
        return "$G2GT_DATA" + text[len(root):]
    return text
