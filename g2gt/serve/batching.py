"""Dynamic batching with fair turns: the pieces of concurrent requests are run together by worker threads.

A request becomes a :class:`Job`: a ``key`` naming what may share a batch (e.g. model and options) and one or
more pieces, each a ``(size, payload)`` (e.g. words and a few hundred words of the request's text). Its asyncio
future gets the single piece's result, or for :meth:`Job.of_pieces` the list of every piece's result; a piece
that fails fails its whole job, and the job's other pieces are dropped.

Fair turns: the jobs that still have pieces to run stand in a rotation. A worker takes the key of the job at the
front, then one piece from each job of that key in rotation order while the batch holds at most ``max_size``
(always at least one piece); a job alone in its batch gets more pieces, round after round, up to
``max_size``. The jobs served move to the back. So a small request that
arrives behind a large one is in the next batch, and waits at most one batch (not the whole large request): a
new job stands in the rotation ahead of every job that has had a turn.

How long it waits for company: a worker that becomes free expects ``target`` = the jobs its last batch
answered + the jobs that were queued before that batch's results went out: the clients it knows to be active
(a job that arrived after the results went out may come from a client just answered, so it is not counted
twice). It takes the batch as soon as ``target`` same-key jobs are queued or their pieces reach ``max_size``,
and at the latest ``max_wait`` seconds after ``max(it became free, the oldest job arrived)``. So no job waits
for company longer than ``max_wait``, a lone client does not wait at all, and under load the clients just
answered get up to ``max_wait`` to send their next request and join the batch.

``run(key, payloads) -> results`` does the work in the worker thread: one result per payload, an exception
instance for a payload that failed (raised to its caller only).

Idle: ``on_idle()`` (e.g. giving freed memory back to the system) runs in a worker once the queue has stayed
empty for ``idle_after`` seconds after a batch: once per busy period, never while a request waits.

Slots and shutdown: at most ``max_pending`` jobs wait at once (:class:`QueueFull` beyond); :meth:`Batcher.cancel`
(a client that went away, or its time ran out) drops a job's pieces not yet run and the results of those
running. :meth:`Batcher.drain` refuses new jobs and, ``grace`` seconds later, fails every unfinished job with
:class:`ShuttingDown`; :meth:`Batcher.close` lets the workers finish what is queued, then stops them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

__all__ = ["Batcher", "Job", "QueueFull", "ShuttingDown"]

RunFn = Callable[[Hashable, Sequence[Any]], Sequence[Any]]


class QueueFull(RuntimeError):
    """More than ``max_pending`` jobs would wait."""


class ShuttingDown(QueueFull):
    """The server stops: no new jobs, and the ones not finished within the grace period are refused."""


@dataclass(eq=False)
class Job:
    """One request: ``key``, and its pieces (a single one of ``size`` and ``payload`` unless made by
    :meth:`of_pieces`)."""

    key: Hashable
    size: int
    payload: Any
    future: asyncio.Future | None = None
    loop: asyncio.AbstractEventLoop | None = None
    arrived: float = field(default_factory=time.monotonic)
    state: str = "new"  # new -> queued -> done | cancelled (queued while any piece waits or runs)
    multi: bool = False
    todo: deque = field(default_factory=deque)  # (index, size, payload) of the pieces not handed out yet
    results: list = field(default_factory=list)
    running: int = 0  # pieces in a worker's batch now
    turns: int = 0  # batches that took a piece of it

    def __post_init__(self) -> None:
        if not self.todo:
            self.todo.append((0, self.size, self.payload))
        self.results = [None] * len(self.todo)
        self.left = len(self.todo)  # pieces without a result yet

    @classmethod
    def of_pieces(cls, key: Hashable, pieces: Sequence[tuple[int, Any]]) -> "Job":
        """A job of several pieces ``(size, payload)``; its result is the list of their results, in order."""
        if not pieces:
            raise ValueError("Job.of_pieces needs at least one piece")
        todo = deque((i, max(1, int(size)), payload) for i, (size, payload) in enumerate(pieces))
        return cls(key, sum(p[1] for p in todo), [p[2] for p in todo], multi=True, todo=todo)


class Batcher:
    """See the module docstring. ``workers`` threads share the queue (and the models ``run`` uses)."""

    def __init__(self, run: RunFn, max_wait: float = 0.005, max_size: int = 2000, max_pending: int = 1024,
                 workers: int = 1, name: str = "g2gt-batch", on_idle: Callable[[], Any] | None = None,
                 idle_after: float = 2.0) -> None:
        if workers < 1 or max_size < 1 or max_pending < 1 or max_wait < 0 or idle_after <= 0:
            raise ValueError("Batcher: workers, max_size and max_pending must be >= 1, max_wait >= 0 and "
                             "idle_after > 0")
        self.run, self.max_wait, self.max_size, self.max_pending = run, max_wait, max_size, max_pending
        self.on_idle, self.idle_after = on_idle, idle_after
        self._queue: deque[Job] = deque()  # the rotation: jobs with pieces not handed out yet
        self._unfinished: set[Job] = set()
        self._cond = threading.Condition()
        self._closing = False
        self._draining = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(workers)]
        # running: pieces in a batch now; pieces: pieces run; company_waits: batches that waited for more jobs
        self.stats = {"jobs": 0, "batches": 0, "pieces": 0, "cancelled": 0, "failed": 0, "running": 0,
                      "max_batch_jobs": 0, "idle_calls": 0, "company_waits": 0, "refused_at_shutdown": 0}
        self._started = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if not self._started:
            self._started = True
            for t in self._threads:
                t.start()

    def close(self, timeout: float | None = None) -> None:
        """Finish the queued and running jobs, then stop the workers (waits up to ``timeout`` seconds)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._started:
            deadline = None if timeout is None else time.monotonic() + timeout
            for t in self._threads:
                t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def drain(self, grace: float | None) -> threading.Timer | None:
        """Refuse new jobs (:class:`ShuttingDown`) from now on; ``grace`` seconds later (None: never), fail
        every job not finished by then with :class:`ShuttingDown` (its caller answers at once)."""
        with self._cond:
            self._draining = True
            self._cond.notify_all()
        if grace is None:
            return None
        timer = threading.Timer(max(0.0, grace), self.refuse_unfinished)
        timer.daemon = True
        timer.start()
        return timer

    def refuse_unfinished(self) -> int:
        """Fail every unfinished job with :class:`ShuttingDown`; how many there were."""
        with self._cond:
            jobs = [j for j in self._unfinished if j.state == "queued"]
            for job in jobs:
                self._finish(job, ShuttingDown("the server is shutting down and could not finish this request "
                                               "in its grace period; send it again to the restarted server"))
            self.stats["refused_at_shutdown"] += len(jobs)
            self._queue.clear()
            return len(jobs)

    @property
    def pending(self) -> int:
        """Jobs with pieces waiting for a worker."""
        return len(self._queue)

    @property
    def queued_size(self) -> int:
        """The size of the pieces waiting for a worker (e.g. words)."""
        with self._cond:
            return sum(p[1] for j in self._queue for p in j.todo)

    # ------------------------------------------------------------------ asyncio side
    def submit(self, job: Job) -> asyncio.Future:
        """Queue ``job``; its future gets the result (or the payload's exception). Call from the event loop."""
        loop = asyncio.get_running_loop()
        job.loop, job.future = loop, loop.create_future()
        with self._cond:
            if self._closing or self._draining:
                raise ShuttingDown("the server is shutting down")
            if len(self._queue) >= self.max_pending:
                raise QueueFull(f"{len(self._queue)} requests are already waiting (g2gt serve --max-pending)")
            job.arrived = time.monotonic()
            job.state = "queued"
            # ahead of the jobs that have had a turn already (they stand at the back, in rotation order)
            self._queue.insert(sum(1 for j in self._queue if j.turns == 0), job)
            self._unfinished.add(job)
            self.stats["jobs"] += 1
            self._cond.notify()
        return job.future

    def cancel(self, job: Job) -> None:
        """The caller no longer wants ``job``: its pieces not run yet are dropped, the results of those
        running are thrown away."""
        with self._cond:
            if job.state == "queued":
                self.stats["cancelled"] += 1
                self._drop(job)
            job.state = "cancelled"
        if job.future is not None and not job.future.done():
            job.future.cancel()

    # ------------------------------------------------------------------ worker side
    def _drop(self, job: Job) -> None:
        """Out of the rotation and of the unfinished set (under the lock)."""
        job.todo.clear()
        try:
            self._queue.remove(job)
        except ValueError:
            pass
        self._unfinished.discard(job)

    def _finish(self, job: Job, result: Any) -> None:
        """Deliver ``job``'s result (or exception) to its caller (under the lock)."""
        self._drop(job)
        job.state = "done"
        try:
            job.loop.call_soon_threadsafe(_deliver, job.future, result)
        except RuntimeError:  # the event loop is gone (shutdown): nobody waits any more
            pass

    def _take(self, last: int, answered: float, idle_done: bool) -> list[tuple[Job, int, Any]] | None:
        """The next batch: ``(job, piece index, payload)`` each; ``[]`` when the queue stayed empty
        ``idle_after`` seconds (time for ``on_idle``, unless ``idle_done``); None when closing with nothing
        left. ``last``: jobs answered by this worker's last batch, whose results went out at ``answered``."""
        with self._cond:
            free = time.monotonic()
            target = max(1, last + sum(1 for j in self._queue if j.arrived < answered))
            waited = False
            while True:
                while not self._queue:
                    if self._closing:
                        return None
                    if self.on_idle is None or idle_done:
                        self._cond.wait()
                    elif not self._cond.wait(self.idle_after) and not self._queue and not self._closing:
                        return []
                key = self._queue[0].key
                oldest = min(j.arrived for j in self._queue if j.key == key)
                wait = max(free, oldest) + self.max_wait - time.monotonic()
                if wait <= 0 or self._closing or self._draining:
                    break
                same = [j for j in self._queue if j.key == key]
                if len(same) >= target or sum(p[1] for j in same for p in j.todo) >= self.max_size:
                    break
                if not waited:
                    waited = True
                    self.stats["company_waits"] += 1
                self._cond.wait(wait)
            return self._fill(key)

    def _fill(self, key: Hashable) -> list[tuple[Job, int, Any]]:
        """One piece of each job of ``key`` in rotation order, within ``max_size``; a job alone in the batch
        gets more pieces, round after round (fewer, larger batches: less padding and fixed cost per call)."""
        batch: list[tuple[Job, int, Any]] = []
        served: dict[Job, None] = {}  # in the order served
        size, more = 0, True
        while more and len(served) <= 1:  # more rounds for a job alone; with company, one piece each
            more = False
            for job in self._queue:
                if job.key != key or not job.todo or (batch and size + job.todo[0][1] > self.max_size):
                    continue
                index, piece_size, payload = job.todo.popleft()
                batch.append((job, index, payload))
                job.running += 1
                size += piece_size
                more = True
                served[job] = None
        for job in served:  # served jobs go to the back of the rotation; finished ones leave it
            job.turns += 1
            self._queue.remove(job)
            if job.todo:
                self._queue.append(job)
        self.stats["batches"] += 1
        self.stats["pieces"] += len(batch)
        self.stats["running"] += len(batch)
        self.stats["max_batch_jobs"] = max(self.stats["max_batch_jobs"], len(served))
        return batch

    def _work(self) -> None:
        last, answered, idle_done = 0, 0.0, True
        while True:
            batch = self._take(last, answered, idle_done)
            if batch is None:
                return
            if not batch:  # idle since the last batch: once per busy period
                idle_done = True
                self.stats["idle_calls"] += 1
                try:
                    self.on_idle()
                except Exception:  # housekeeping only: never stops the worker
                    pass
                continue
            idle_done = False
            try:
                results = list(self.run(batch[0][0].key, [payload for _, _, payload in batch]))
                if len(results) != len(batch):
                    raise RuntimeError(f"run() returned {len(results)} results for {len(batch)} jobs")
            except Exception as e:  # delivered to every caller of the batch; the worker lives on
                results = [e] * len(batch)
            with self._cond:
                answered = time.monotonic()
                self.stats["running"] -= len(batch)
                last = 0
                for (job, index, _), res in zip(batch, results):
                    job.running -= 1
                    if job.state != "queued":  # cancelled, or failed by another piece or at shutdown
                        continue
                    if isinstance(res, BaseException):
                        self.stats["failed"] += 1
                        self._finish(job, res)
                        last += 1
                        continue
                    job.results[index] = res
                    job.left -= 1
                    if job.left == 0:
                        self._finish(job, list(job.results) if job.multi else res)
                        last += 1


def _deliver(future: asyncio.Future, result: Any) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
