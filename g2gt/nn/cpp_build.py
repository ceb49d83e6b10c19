"""Compile a C++ op library once per machine and load it into ``torch.ops``, never waiting without limit.

:func:`load_op_library` builds ``sources`` with ``torch.utils.cpp_extension.load`` in a directory g2gt owns,
``<root>/g2gt/<name>`` (``<root>`` = ``$TORCH_EXTENSIONS_DIR``, else torch's default
``~/.cache/torch_extensions``), and coordinates the processes that want it with two files there:

* ``built`` names the library, written once a build has loaded. Later processes load that library directly:
  no compiler run, no lock (a second or so).
* ``g2gt.lock`` is held (``fcntl.flock``) by the one process that builds; it holds the holder's pid, host and
  start time for messages. The kernel drops a ``flock`` when its holder dies, however it dies (SIGKILL,
  Ctrl-C, a test timeout), so a killed build never blocks the next one. The holder also deletes the lock file
  torch's own ``load`` leaves behind when killed (:func:`g2gt.core._compat.extension_baton`), which torch
  would otherwise wait on forever: while the g2gt lock is held nobody else builds in the directory, so that
  file can only be stale.

Every wait is bounded by ``timeout`` seconds (``$G2GT_LABEL_BUILD_TIMEOUT``, default 300): first the wait
for another live process's build, then the compile itself (run in a daemon thread). Past either,
:class:`BuildTimeout` is raised and the caller falls back to slower code; a compile still running finishes in
the background and a later process loads its result. Without ``fcntl`` (Windows) there is no g2gt lock and
the time limit alone bounds torch's wait.

A process that is about to compile (or to wait for another's compile) says so in one line on stderr
(``announce``), so that a first run never waits in silence.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Sequence

import torch

from ..core._compat import extension_baton

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

_log = logging.getLogger("g2gt")

__all__ = ["BuildTimeout", "build_root", "build_timeout", "load_op_library", "load_built", "BuildLock"]

DEFAULT_TIMEOUT = 300.0
LOCK_NAME, MARKER_NAME = "g2gt.lock", "built"
POLL_SECONDS = 0.2


class BuildTimeout(RuntimeError):
    """A build did not finish (or could not start) within the time limit."""


def build_root() -> Path:
    """``$TORCH_EXTENSIONS_DIR/g2gt`` or ``<torch's default extension root>/g2gt``, read at each call."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR", "").strip()
    if not root:
        from torch.utils.cpp_extension import get_default_build_root

        root = get_default_build_root()
    return Path(root) / "g2gt"


def build_timeout() -> float:
    """Seconds to wait for a build: ``$G2GT_LABEL_BUILD_TIMEOUT`` (default 300), read at each call."""
    raw = os.environ.get("G2GT_LABEL_BUILD_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"G2GT_LABEL_BUILD_TIMEOUT must be a number of seconds >= 0, got {raw!r}")
    return seconds


class BuildLock:
    """An exclusive ``fcntl.flock`` on ``path`` (created if missing, never deleted), polled until a deadline.

    The file is not the lock, only its handle: a file left by a dead process locks nothing. The holder
    writes ``"<pid> <host> <unix time>"`` into it so that waiters can say who they waited for.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, deadline: float) -> bool:
        """Take the lock, polling until ``time.monotonic() >= deadline``; True when held (always True
        without ``fcntl``, where nothing is locked)."""
        if fcntl is None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    return False
                time.sleep(POLL_SECONDS)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()} {time.time():.0f}\n".encode(), 0)
        self.fd = fd
        return True

    @property
    def held(self) -> bool:
        return self.fd is not None

    def release(self) -> None:
        """Drop the lock (a no-op when not held)."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)  # closing the last descriptor releases the flock

    def owner(self) -> str:
        """``"process 123 on host (for 42 s)"`` from the file, or ``"another process"``."""
        try:
            pid, host, since = self.path.read_text().split()[:3]
            return f"process {int(pid)} on {host} (for {time.time() - float(since):.0f} s)"
        except (OSError, ValueError):
            return "another process"


def load_built(directory: Path) -> str | None:
    """Load the library named by ``directory/built`` and return its path; None when there is none yet."""
    try:
        lib = directory / (directory / MARKER_NAME).read_text().strip()
    except OSError:
        return None
    if not lib.is_file():
        return None
    torch.ops.load_library(str(lib))
    return str(lib)


def _write_marker(directory: Path, library: str) -> None:
    tmp = directory / f"{MARKER_NAME}.{os.getpid()}.tmp"
    tmp.write_text(Path(library).name + "\n")
    os.replace(tmp, directory / MARKER_NAME)


def _say(message: str | None) -> None:
    if message:
        _log.info(message.removeprefix("g2gt: "))


def load_op_library(name: str, sources: Sequence[str], extra_cflags: Sequence[str] = (),
                    extra_ldflags: Sequence[str] = (), timeout: float | None = None,
                    announce: str | None = None) -> str:
    """Build (once per ``name``; put a hash of everything the binary depends on into it) and load the op
    library of ``sources`` into ``torch.ops``; returns the library's path. ``announce`` is printed (one line,
    stderr) just before this process compiles, or with ``(another process is building it)`` before it waits.

    Raises :class:`BuildTimeout` when another live process has been building ``name`` for ``timeout``
    seconds (default :func:`build_timeout`) or when this process's compile takes longer; otherwise what
    ``torch.utils.cpp_extension.load`` raises when the build fails (no compiler or ``ninja``, a compile error).
    """
    timeout = build_timeout() if timeout is None else timeout
    directory = build_root() / name
    directory.mkdir(parents=True, exist_ok=True)
    done = load_built(directory)
    if done is not None:
        return done
    lock = BuildLock(directory / LOCK_NAME)
    if not lock.acquire(time.monotonic()):  # held by another process: say what we wait for
        _say(announce and f"{announce} (another process is building it; waiting)")
        if not lock.acquire(time.monotonic() + timeout):
            raise BuildTimeout(f"{lock.owner()} holds the build lock {lock.path} (waited {timeout:g} s)")
    try:
        done = load_built(directory)  # built by the process we waited for
        if done is not None:
            lock.release()
            return done
        baton = extension_baton(directory) if lock.held else None
        if baton is not None and baton.exists():  # left by a killed build: torch would wait on it forever
            baton.unlink(missing_ok=True)
    except BaseException:
        lock.release()
        raise
    result: dict[str, object] = {}
    _say(announce)

    def compile_and_load() -> None:
        try:
            from torch.utils.cpp_extension import load

            path = load(name=name, sources=list(sources), extra_cflags=list(extra_cflags),
                        extra_ldflags=list(extra_ldflags), build_directory=str(directory), is_python_module=False,
                        verbose=False)
            _write_marker(directory, str(path))
            result["path"] = str(path)
        except BaseException as err:  # handed to the waiting thread
            result["error"] = err
        finally:
            lock.release()

    worker = threading.Thread(target=compile_and_load, name=f"g2gt-build-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise BuildTimeout(f"building {name} did not finish within {timeout:g} s; it goes on in the background "
                           "and a later process loads the result")
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["path"]  # type: ignore[return-value]
