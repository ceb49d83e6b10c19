"""Opening inputs and outputs: plain or gzip files, stdin / stdout, UTF-8 checked up front, atomic writes.

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

Outputs (:class:`AtomicOutput`) are written to a temporary file in the target's folder
and renamed over the target only when the ``with`` block ends without an exception, so a
failure never leaves half a file.  ``"-"`` is standard output.
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
    "InputError",
    "OutputError",
    "Source",
    "CheckedInput",
    "open_input",
    "source_name",
    "AtomicOutput",
    "open_output",
    "same_file",
    "read_text",
    "iter_lines",
]

Source = Union[str, "os.PathLike[str]", IO[str], IO[bytes]]

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class InputError(Error):
    """Unusable input. ``str(err)`` is ``"FILE:LINE: reason"``, or ``"FILE: reason"`` when the
    problem concerns the whole file (then ``line == 0``)."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = str(path)
        self.line = int(line)
        self.reason = message
        where = f"{self.path}:{self.line}" if self.line > 0 else self.path
        super().__init__(f"{where}: {message}")


class OutputError(Error):
    """An output path that cannot be written (a directory, or a folder that does not exist)."""


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
                for _ in self._text_lines():
                    pass
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
        while True:
            chunk = self._read(f, line)
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

    # ------------------------------------------------------------------ reading
    def _text_lines(self) -> Iterator[str]:
        for k, line in enumerate(self._text, 1):
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

    def read(self) -> str:
        """The whole text (byte-order mark dropped)."""
        if self._text is not None:
            out = "".join(self._text_lines())
        else:
            f, close = self._binary()
            try:
                parts = []
                while True:
                    chunk = self._read(f, 0)
                    if not chunk:
                        break
                    parts.append(chunk)
            finally:
                if close:
                    f.close()
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


# --------------------------------------------------------------------------- output
def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class AtomicOutput:
    """``with AtomicOutput(path) as f: f.write(...)``: a file that appears complete or not at all.

    The data go to ``.NAME.XXXXXX.tmp`` in the target's folder, which is renamed over the
    target when the block ends without an exception and deleted otherwise (the target is
    then left as it was).  ``"-"`` writes to standard output, which is flushed, not closed;
    an existing target that is not a regular file (``/dev/stdout``, ``/dev/null``, a FIFO)
    is written in place.
    Text mode is UTF-8 without newline translation (``newline=""``); ``binary=True`` gives
    a byte stream.  A new file gets the usual permissions (``0o666`` minus the umask); an
    existing one keeps its own.

    Raises:
        OutputError: ``path`` is a directory or its folder does not exist.
    """

    def __init__(self, path: str | os.PathLike[str], *, binary: bool = False) -> None:
        self.path = os.fsdecode(path)
        self.binary = binary
        self._direct = False
        self._file: Any = None
        self._tmp: str | None = None
        if self.path == "-":
            return
        if os.path.isdir(self.path):
            raise OutputError(f"{self.path}: is a directory, expected a file name for the output")
        self._direct = os.path.exists(self.path) and not _is_regular(self.path)  # /dev/stdout, /dev/null, a FIFO
        if self._direct:
            return
        self._target = os.path.realpath(self.path)  # write through a symlink, not over it
        folder = os.path.dirname(self._target)
        if not os.path.isdir(folder):
            raise OutputError(f"{self.path}: the folder {os.path.dirname(self.path) or folder} does not exist "
                              "(create it first)")

    def __enter__(self) -> Any:
        if self.path == "-":
            out = sys.stdout
            buf = getattr(out, "buffer", None)
            if self.binary or buf is not None:
                out.flush()
            if self.binary:
                self._file = buf if buf is not None else out
            elif buf is not None:
                self._file = io.TextIOWrapper(buf, encoding="utf-8", newline="", write_through=True)
            else:
                self._file = out
            return self._file
        if self._direct:  # nothing to rename over: write in place
            self._file = open(self.path, "wb") if self.binary else open(self.path, "w", encoding="utf-8", newline="")
            return self._file
        folder, base = os.path.split(self._target)
        try:
            fd, self._tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=folder)
        except OSError as e:  # the message names the output, never the temporary file beside it
            raise OutputError(f"{self.path}: cannot write here ({e.strerror or e}); the folder {folder or '.'} must "
                              "exist and be writable: choose another output path") from None
        try:
            try:
                mode = os.stat(self._target).st_mode & 0o7777
            except OSError:
                mode = 0o666 & ~_umask()
            os.chmod(self._tmp, mode)
            self._file = os.fdopen(fd, "wb") if self.binary else os.fdopen(fd, "w", encoding="utf-8", newline="")
        except BaseException:
            os.close(fd)
            os.unlink(self._tmp)
            raise
        return self._file

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if self.path == "-":
            f = self._file
            if isinstance(f, io.TextIOWrapper) and f is not sys.stdout:
                try:
                    f.flush()
                finally:
                    f.detach()
            elif f is not None:
                f.flush()
            return False
        if self._direct:
            self._file.close()
            return False
        assert self._tmp is not None
        try:
            if exc_type is None:
                self._file.flush()
                os.fsync(self._file.fileno())
            self._file.close()
            if exc_type is None:
                os.replace(self._tmp, self._target)
        finally:
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)
        return False


def open_output(path: str | os.PathLike[str], *, binary: bool = False) -> AtomicOutput:
    """An :class:`AtomicOutput` for ``path`` (``"-"`` = standard output)."""
    return AtomicOutput(path, binary=binary)


def same_file(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are paths naming the same existing regular file (also through links).

    False when either is ``"-"``, a stream, a device or FIFO, or does not exist, so the CLI can refuse
    ``-o`` equal to the input with ``if same_file(inp, out): ...``.
    """
    if not (_is_path(a) and _is_path(b)) or "-" in (os.fsdecode(a), os.fsdecode(b)) or not _is_regular(a):
        return False
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


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
