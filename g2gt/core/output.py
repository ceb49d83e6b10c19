"""Atomic outputs: a file that appears complete or not at all (:class:`AtomicOutput`), ``"-"`` = standard output.

An output is written to a hidden temporary file ``.NAME.PID.XXXXXX.tmp`` in the target's folder and renamed over
the target only when the ``with`` block ends without an exception, so a failure never leaves half a file. The
``g2gt`` command turns SIGTERM into a clean exit (:func:`exit_on_sigterm`), so the temporary file is removed
then too; one left by a process that was killed outright (SIGKILL, a crash) is removed by the next
:class:`AtomicOutput` of the same target, once the process that wrote it (the PID in its name) is gone.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from typing import Any

from ..errors import Error
from .files import _is_path, _is_regular

__all__ = ["OutputError", "AtomicOutput", "open_output", "same_file", "exit_on_sigterm", "remove_stale_temporaries"]


class OutputError(Error):
    """An output path that cannot be written (a directory, or a folder that does not exist)."""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class AtomicOutput:
    """``with AtomicOutput(path) as f: f.write(...)``: a file that appears complete or not at all.

    The data go to ``.NAME.PID.XXXXXX.tmp`` in the target's folder, which is renamed over the
    target when the block ends without an exception and deleted otherwise (the target is
    then left as it was); such files of ``NAME`` whose process is gone are removed first
    (:func:`remove_stale_temporaries`).  ``"-"`` writes to standard output, which is flushed, not closed;
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
        remove_stale_temporaries(self._target)
        try:
            fd, self._tmp = tempfile.mkstemp(prefix=f".{base}.{os.getpid()}.", suffix=".tmp", dir=folder)
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




def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # another user's process, or we cannot tell: leave its file
        return True
    return True


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files an :class:`AtomicOutput` of ``path`` left behind (``.NAME.PID.XXXXXX.tmp`` in
    its folder) whose writing process ``PID`` no longer runs on this machine; returns their paths. Files of a
    running process, and names of another form, are left alone."""
    target = os.path.realpath(os.fsdecode(path))
    folder, base = os.path.split(target)
    prefix = f".{base}."
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix):-len(".tmp")].split(".")[0]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(folder, name))
            removed.append(os.path.join(folder, name))
        except OSError:
            pass
    return removed


class _Terminated(SystemExit):
    """SIGTERM, raised in the main thread so that ``with`` blocks (atomic outputs) clean up on the way out."""


def exit_on_sigterm():
    """Make SIGTERM raise :class:`SystemExit` (exit status 143) in the main thread instead of killing the process
    outright, so an :class:`AtomicOutput` being written removes its temporary file. Returns a function that
    restores the previous handler (a no-op outside the main thread, where signals cannot be handled)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        return lambda: None

    def handler(signum, frame):
        raise _Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, previous)
