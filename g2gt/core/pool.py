"""A pool of worker processes that maps jobs in input order and replaces a worker that dies.

:class:`ProcessPool` starts ``workers`` processes (``spawn`` / ``forkserver``, never ``fork``: torch and fork
do not mix). Each worker calls the pool's ``factory`` once -- a picklable zero-argument callable, e.g. a
recipe that loads a model -- and gets a handler ``payload -> result`` that it
applies to every job it is sent. Only payloads and results cross the process boundary (pickled), never a
loaded model.

:meth:`ProcessPool.map` yields the results in the order of its payloads, keeping at most ``window`` jobs
submitted ahead of the one it waits for (memory does not grow with the input). Several ``map`` streams may
be open at once on one pool, even nested (a stream whose payloads are computed from another stream's
results); their jobs share the workers first come, first served.

Nothing lost, nothing twice: a job belongs to one worker at a time and its result is taken once. When a
worker dies (killed, out of memory ...) the pool starts a replacement and runs its job again, at the front
of the queue; a job that has killed ``max_tries`` workers fails with :class:`WorkerLost`. A job that raises
fails with :class:`JobError` (a ``ValueError`` for a user's error: bad input, e.g. ``FILE:LINE: ...``, or
a missing file) or :class:`WorkerFailure` (anything else), raised by ``map`` when that job's turn comes.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
import traceback
from collections import deque
from multiprocessing.connection import wait
from typing import Any, Callable, Iterable, Iterator

from ..errors import Error

__all__ = ["fit_workers", "available_memory_mb", "start_fork_server", "ProcessPool", "JobError", "WorkerFailure", "WorkerLost", "WorkersCannotStart", "check_main_importable",
           "default_start_method", "worker_setup"]

#: memory a worker process of the UD pipeline takes (torch, the model, its batches), in MB: measured 300 MB with
#: the shipped model and the default batches; $G2GT_WORKER_MB overrides it
WORKER_MB = 500


def available_memory_mb() -> int | None:
    """Memory this process may still use, in MB: ``MemAvailable`` of ``/proc/meminfo``, lowered to what a cgroup
    (v2) limit leaves; ``None`` where neither can be read."""
    found = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) // 1024)
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit.isdigit():
            found.append(max(0, int(limit) - used) // 2**20)
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def fit_workers(n: int, cpus: int | None = None, available_mb: int | None = None,
                per_worker_mb: int | None = None) -> tuple[int, str | None]:
    """``(workers to start, why fewer than n)``: ``n`` capped by the CPUs this process may run on (more workers
    than CPUs only share them) and by the available memory at ``per_worker_mb`` each (default
    ``$G2GT_WORKER_MB``, else :data:`WORKER_MB`); ``why`` is ``None`` when ``n`` fits."""
    if n <= 1:
        return n, None
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if available_mb is None:
        available_mb = available_memory_mb()
    if per_worker_mb is None:
        raw = os.environ.get("G2GT_WORKER_MB", "").strip()
        per_worker_mb = int(raw) if raw.isdigit() and int(raw) > 0 else WORKER_MB
    by_memory = n if available_mb is None else max(1, available_mb // per_worker_mb)
    used = max(1, min(n, cpus, by_memory))
    if used == n:
        return n, None
    memory = ("" if available_mb is None else f", {available_mb / 1024:.1f} GB of memory available at about "
              f"{per_worker_mb / 1024:.1f} GB per worker ($G2GT_WORKER_MB)")
    return used, f"{cpus} CPU{'s' * (cpus != 1)}{memory}"



class JobError(ValueError):
    """A job raised a ``ValueError`` (bad input, e.g. ``FILE:LINE: ...``) or an ``OSError`` (a missing file)
    in its worker; ``str(err)`` is its message and ``err.kind`` the original exception's class name."""

    def __init__(self, message: str, kind: str = "ValueError", details: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.details = details


class WorkerFailure(RuntimeError):
    """A job (or a worker's start-up) raised something else than a ``ValueError``; ``err.details`` holds the
    worker's traceback."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


class WorkerLost(RuntimeError):
    """A job whose worker died ``max_tries`` times (e.g. killed for memory each time)."""


class WorkersCannotStart(Error, RuntimeError):
    """Worker processes cannot start from this program (see :func:`check_main_importable`)."""


def check_main_importable() -> None:
    """Raise :class:`WorkersCannotStart` when a worker could not import this program's main module again.

    A worker started by ``spawn`` or ``forkserver`` imports the parent's ``__main__`` first: by its module name
    (``python -m pkg``), or from its file (``python script.py``). A program read from standard input
    (``python - <<EOF``) names a file, ``<stdin>``, that does not exist, and every worker would die while
    starting. Programs without a main file (``python -c``, notebooks) and scripts are fine."""
    main = sys.modules.get("__main__")
    if main is None or getattr(getattr(main, "__spec__", None), "name", None):
        return
    path = getattr(main, "__file__", None)
    if path is None or os.path.isfile(path):
        return
    raise WorkersCannotStart(f"worker processes cannot start from this program: each one imports its main module "
                             f"again, and {path!r} is not a file; run the code from a script file (python "
                             "script.py, the worker start under if __name__ == '__main__':) or use n_process=1")


def default_start_method() -> str:
    """``forkserver`` where the platform has it (Linux: a clean server process forks the workers), else
    ``spawn`` (macOS, Windows)."""
    return "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


def start_fork_server(preload: tuple[str, ...] = ("torch",)) -> None:
    """Start this process's ``forkserver`` now, importing ``preload`` (about a second for torch) while the caller
    goes on: a :class:`ProcessPool` made later forks its workers from it at once. Call it before importing torch
    yourself (``g2gt parse --workers`` does, so that both imports overlap). Nothing happens where ``forkserver``
    is not the start method or the server runs already."""
    if default_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    mp.get_context("forkserver").set_forkserver_preload(list(preload))
    forkserver.ensure_running()  # launches the server; it imports preload before it answers its first request


# ---------------------------------------------------------------------------- the worker side
def worker_setup(keep_freed: bool = True) -> None:
    """What every worker process (local or Ray actor) and the ``g2gt`` command itself do before loading a model:
    no oneDNN primitive cache (``ONEDNN_PRIMITIVE_CACHE_CAPACITY=0`` unless the environment sets it: the cache
    keeps a compiled kernel per input shape, and a corpus brings ever new batch shapes, so peak memory grew
    with the input: README, "Corpus scale", and docs/benchmarks.md give what it saves, at no cost in speed)
    and, with ``keep_freed``, :func:`g2gt.core._compat.keep_freed_memory`."""
    import os

    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0")  # read by oneDNN when it first runs
    if keep_freed:
        from ._compat import keep_freed_memory

        keep_freed_memory()


def _worker_main(conn, factory: Callable[[], Callable[[Any], Any]], threads: int) -> None:
    """A worker process: set the thread count, build the handler once, then answer jobs until told to stop."""
    if threads > 0:
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # read by torch when it is imported
            os.environ[var] = str(threads)
        _torch_threads(threads)
    try:
        handler = factory()
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("init_error", None, _describe(e)))
        return
    if threads > 0:
        _torch_threads(threads)  # the factory may have imported torch
    conn.send(("ready", None, os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the parent is gone
        if msg is None:
            return
        job_id, payload = msg
        try:
            result = handler(payload)
        except BaseException as e:  # noqa: BLE001 - the job fails, the worker lives on
            conn.send(("error", job_id, _describe(e)))
            continue
        conn.send(("ok", job_id, result))


def _torch_threads(threads: int) -> None:
    """``torch.set_num_threads`` when torch is imported (a handler without torch does not pay its import)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _describe(e: BaseException) -> tuple[str, str, bool, str]:
    """``(class name, message, is a user's error, traceback)`` of an exception, to re-raise in the parent;
    a user's error is a ``ValueError`` (bad input) or an ``OSError`` (a missing model or file)."""
    return type(e).__name__, str(e), isinstance(e, (ValueError, OSError)), traceback.format_exc()


def _rebuild(desc: tuple[str, str, bool, str]) -> Exception:
    kind, message, is_value_error, details = desc
    if is_value_error:
        return JobError(message, kind, details)
    return WorkerFailure(f"{kind}: {message}", details)


# ---------------------------------------------------------------------------- the parent side
class _Job:
    __slots__ = ("id", "payload", "tries", "done", "result", "error", "cancelled")

    def __init__(self, job_id: int, payload: Any) -> None:
        self.id, self.payload, self.tries = job_id, payload, 0
        self.done, self.result, self.error, self.cancelled = False, None, None, False


class _Slot:
    """One worker process, its pipe, and the job it is running."""

    __slots__ = ("process", "conn", "ready", "job")

    def __init__(self, process, conn) -> None:
        self.process, self.conn, self.ready, self.job = process, conn, False, None


class ProcessPool:
    """``workers`` processes, each with the handler ``factory()`` built once (see the module docstring).

    Args:
        factory: a picklable zero-argument callable run in each worker; returns ``payload -> result``.
        workers: number of processes (>= 1).
        threads: torch / OpenMP threads per worker (default 1; 0 = leave the library default).
        start_method: ``"forkserver"`` or ``"spawn"`` (default: :func:`default_start_method`).
        max_tries: runs of one job that may end in a dead worker before it fails with :class:`WorkerLost`.
        preload: modules the ``forkserver`` imports before it forks the workers (e.g. ``("torch",)``: paid
            once, and its memory pages are shared); takes effect when this process's server first starts.

    Use it as a context manager (``with ProcessPool(...) as pool: ...``); leaving it stops the workers.
    ``pool.pids`` are the live workers' process ids, ``pool.replaced`` counts the workers started to
    replace dead ones.
    """

    def __init__(self, factory: Callable[[], Callable[[Any], Any]], workers: int, *, threads: int = 1,
                 start_method: str | None = None, max_tries: int = 3, preload: tuple[str, ...] = ()) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if max_tries < 1:
            raise ValueError(f"max_tries must be >= 1, got {max_tries}")
        method = start_method or default_start_method()
        if method == "fork":
            raise ValueError("start_method='fork' is not supported (torch and fork do not mix); use 'forkserver' "
                             "or 'spawn'")
        self._ctx = mp.get_context(method)
        if method == "forkserver" and preload:
            self._ctx.set_forkserver_preload(list(preload))  # imported once in the server, shared by the forks
        self.factory, self.workers, self.threads, self.max_tries = factory, workers, threads, max_tries
        self._slots: list[_Slot] = []
        self._starter: threading.Thread | None = None  # start(background=True) spawning the workers
        self._start_error: BaseException | None = None
        self._queue: deque[_Job] = deque()
        self._next_id = 0
        self._closed = False
        self.replaced = 0

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> "ProcessPool":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self, background: bool = False) -> None:
        """Start the workers (they build their handlers in parallel; :meth:`map` waits for them).

        With ``background``, the processes are started by a thread and this call returns at once: the first
        start of a ``forkserver`` waits for the server to import its ``preload`` modules (torch: about a second),
        which this process can spend on other work; every other method waits for the thread first.

        Raises :class:`WorkersCannotStart` when this program's main module cannot be imported again by a worker
        (code read from standard input)."""
        check_main_importable()
        if background and self._starter is None and len(self._slots) < self.workers:
            self._starter = threading.Thread(target=self._spawn_all, name="g2gt-pool-start", daemon=True)
            self._starter.start()
            return
        self._started()

    def _spawn_all(self) -> None:
        try:
            while len(self._slots) < self.workers:
                self._slots.append(self._spawn())
        except BaseException as e:  # noqa: BLE001 - raised in the caller's thread by _started
            self._start_error = e

    def _started(self) -> None:
        """Wait for a background start (re-raising its error), or start the workers now."""
        if self._starter is not None:
            self._starter.join()
            self._starter = None
        if self._start_error is not None:
            err, self._start_error = self._start_error, None
            raise err
        if len(self._slots) < self.workers and not self._closed:
            self._spawn_all()
            self._started()

    def ready_workers(self) -> int:
        """How many workers have built their handlers, without waiting (0 while they are being started in the
        background; a start-up error raises)."""
        if self._starter is not None and self._starter.is_alive():
            return 0
        self._started()
        for slot in self._slots:
            if not slot.ready:
                self._read(slot)
        return sum(s.ready for s in self._slots)

    def wait_ready(self) -> None:
        """Block until every worker has built its handler (e.g. loaded its model); a start-up error raises."""
        self._started()
        while not all(s.ready for s in self._slots):
            self._pump()

    def _spawn(self) -> _Slot:
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(target=_worker_main, args=(child, self.factory, self.threads), daemon=True,
                                 name="g2gt-worker")
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def close(self) -> None:
        """Ask every worker to stop, wait a little, then terminate the stragglers."""
        if self._closed:
            return
        if self._starter is not None:
            self._starter.join()
            self._starter = None
        self._closed = True
        for s in self._slots:
            try:
                s.conn.send(None)
            except (OSError, ValueError):
                pass
        for s in self._slots:
            s.process.join(timeout=5)
            if s.process.is_alive():
                s.process.terminate()
                s.process.join(timeout=5)
            s.conn.close()
        self._slots.clear()

    @property
    def pids(self) -> list[int]:
        """Process ids of the current workers."""
        if self._starter is not None:
            self._started()
        return [s.process.pid for s in self._slots if s.process.pid is not None]

    # ------------------------------------------------------------------ mapping
    def map(self, payloads: Iterable[Any], window: int | None = None) -> Iterator[Any]:
        """The results of ``payloads``, in order; at most ``window`` (default ``2 * workers``) jobs are
        submitted ahead of the one awaited. The first failed job raises when its turn comes; the jobs
        after it are cancelled."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        self._started()
        window = max(1, window or 2 * self.workers)
        pending: deque[_Job] = deque()
        it = iter(payloads)
        exhausted = False
        try:
            while True:
                while not exhausted and len(pending) < window:
                    try:
                        payload = next(it)  # may drive another stream of this pool
                    except StopIteration:
                        exhausted = True
                        break
                    pending.append(self._submit(payload))
                if not pending:
                    return
                job = pending[0]
                while not job.done:
                    self._pump()
                pending.popleft()
                if job.error is not None:
                    raise job.error
                result, job.result = job.result, None
                yield result
        finally:
            for job in pending:
                job.cancelled = True
            if pending:
                self._queue = deque(j for j in self._queue if not j.cancelled)

    def run(self, payload: Any) -> Any:
        """One job's result (a one-item :meth:`map`)."""
        return next(iter(self.map([payload], window=1)))

    def _submit(self, payload: Any) -> _Job:
        job = _Job(self._next_id, payload)
        self._next_id += 1
        self._queue.append(job)
        return job

    def _dispatch(self) -> None:
        for slot in self._slots:
            if not self._queue:
                return
            if slot.ready and slot.job is None:
                job = self._queue.popleft()
                slot.job = job
                job.tries += 1
                try:
                    slot.conn.send((job.id, job.payload))
                except (OSError, ValueError):
                    pass  # the worker is dead: its sentinel tells, and the job is run again

    def _pump(self) -> None:
        """Dispatch waiting jobs, then wait for and handle at least one event (a message or a death)."""
        self._dispatch()
        by_conn = {s.conn: s for s in self._slots}
        by_sentinel = {s.process.sentinel: s for s in self._slots}
        ready = wait(list(by_conn) + list(by_sentinel))
        dead = []
        for obj in ready:
            if obj in by_conn:
                self._read(by_conn[obj])
        for obj in ready:
            if obj in by_sentinel:
                dead.append(by_sentinel[obj])
        for slot in dead:
            self._replace(slot)

    def _read(self, slot: _Slot) -> None:
        """Take every message waiting on ``slot``'s pipe (a worker may answer and then die)."""
        try:
            while slot.conn.poll():
                kind, job_id, value = slot.conn.recv()
                if kind == "ready":
                    slot.ready = True
                elif kind == "init_error":
                    raise _rebuild(value)
                else:
                    job, slot.job = slot.job, None
                    if job is None or job.id != job_id or job.cancelled:
                        continue
                    if kind == "ok":
                        job.result = value
                    else:
                        job.error = _rebuild(value)
                    job.done = True
        except (EOFError, OSError):
            pass  # a broken pipe: the process is dead or dying, its sentinel handles it

    def _replace(self, slot: _Slot) -> None:
        """``slot``'s process died: put its job back in front of the queue and start a new worker."""
        self._read(slot)
        slot.process.join(timeout=1)
        slot.conn.close()
        job = slot.job
        if job is not None and not job.cancelled:
            if job.tries >= self.max_tries:
                job.error = WorkerLost(f"a job killed its worker {job.tries} times (exit code "
                                       f"{slot.process.exitcode}); last worker pid {slot.process.pid}")
                job.done = True
            else:
                self._queue.appendleft(job)
        elif not slot.ready and self.replaced > self.workers * self.max_tries:
            raise WorkerLost(f"worker processes keep dying while starting (exit code {slot.process.exitcode})")
        self._slots[self._slots.index(slot)] = self._spawn()
        self.replaced += 1
