"""Dynamic batching: requests that arrive together are run as one batch by a worker thread.

A request becomes a :class:`Job` (a ``key`` naming what may share a batch, e.g. model and options; a
``size``, e.g. words; a ``payload``) and waits on an asyncio future. Each worker thread repeatedly takes the
oldest job and every later job with the same key, in arrival order, until the batch holds ``max_size`` (always
at least one job).

How long it waits for company: a worker that becomes free expects ``target`` = the jobs of the batch it just
finished + the jobs that were queued before that batch's results went out: the clients it knows to be active
(a job that arrived after the results went out may come from a client just answered, so it is not counted
twice). It takes the batch as soon as ``target``
same-key jobs are queued or ``max_size`` is reached, and at the latest ``max_wait`` seconds after ``max(it
became free, the oldest job arrived)``. So no job waits for company longer than ``max_wait``, a lone client
does not wait at all, and under load the clients just answered get up to ``max_wait`` to send their next
request and join the batch, instead of splitting into two half-size batches that alternate (each batch pays
the model's fixed cost per call).

``run(key, payloads) -> results`` does the work in the worker thread: one result per payload, an exception
instance for a payload that failed (raised to its caller only). Latency of a job = its wait for a worker +
at most ``max_wait`` + the run of its batch.

Idle: ``on_idle()`` (e.g. giving freed memory back to the system) runs in a worker once the queue has stayed
empty for ``idle_after`` seconds after a batch: once per busy period, never while a request waits.

Slots: at most ``max_pending`` jobs wait at once (:class:`QueueFull` beyond); :meth:`Batcher.cancel` (a
client that went away) takes a waiting job out of the queue, freeing its slot, or marks a running one so its
result is dropped. :meth:`Batcher.close` lets the workers finish every queued job, then stops them.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

__all__ = ["Batcher", "Job", "QueueFull"]

RunFn = Callable[[Hashable, Sequence[Any]], Sequence[Any]]


class QueueFull(RuntimeError):
    """More than ``max_pending`` jobs would wait."""


@dataclass(eq=False)
class Job:
    key: Hashable
    size: int
    payload: Any
    future: asyncio.Future | None = None
    loop: asyncio.AbstractEventLoop | None = None
    arrived: float = field(default_factory=time.monotonic)
    state: str = "new"  # new -> queued -> running -> done | cancelled


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
        self._queue: deque[Job] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(workers)]
        self.stats = {"jobs": 0, "batches": 0, "cancelled": 0, "failed": 0, "running": 0, "max_batch_jobs": 0,
                      "idle_calls": 0, "company_waits": 0}  # company_waits: batches that waited for more jobs
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

    @property
    def pending(self) -> int:
        """Jobs waiting for a worker."""
        return len(self._queue)

    # ------------------------------------------------------------------ asyncio side
    def submit(self, job: Job) -> asyncio.Future:
        """Queue ``job``; its future gets the result (or the payload's exception). Call from the event loop."""
        loop = asyncio.get_running_loop()
        job.loop, job.future = loop, loop.create_future()
        with self._cond:
            if self._closing:
                raise QueueFull("the server is shutting down")
            if len(self._queue) >= self.max_pending:
                raise QueueFull(f"{len(self._queue)} requests are already waiting (g2gt serve --max-pending)")
            job.arrived = time.monotonic()
            job.state = "queued"
            self._queue.append(job)
            self.stats["jobs"] += 1
            self._cond.notify()
        return job.future

    def cancel(self, job: Job) -> None:
        """The caller no longer wants ``job``: out of the queue if it still waits, else its result is dropped."""
        with self._cond:
            if job.state == "queued":
                try:
                    self._queue.remove(job)
                except ValueError:
                    pass
            if job.state in ("queued", "running"):
                self.stats["cancelled"] += 1
            job.state = "cancelled"
        if job.future is not None and not job.future.done():
            job.future.cancel()

    # ------------------------------------------------------------------ worker side
    def _take(self, last: int, answered: float, idle_done: bool) -> list[Job] | None:
        """The next batch; ``[]`` when the queue stayed empty ``idle_after`` seconds (time for ``on_idle``,
        unless ``idle_done``); None when closing with nothing left. ``last``: jobs in this worker's last batch,
        whose results went out at ``answered`` (monotonic seconds)."""
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
                first = self._queue[0]
                key = first.key
                wait = max(free, first.arrived) + self.max_wait - time.monotonic()
                if wait <= 0 or self._closing:
                    break
                same = [j for j in self._queue if j.key == key]
                if len(same) >= target or sum(j.size for j in same) >= self.max_size:
                    break
                if not waited:
                    waited = True
                    self.stats["company_waits"] += 1
                self._cond.wait(wait)
            batch, size = [], 0
            for job in list(self._queue):
                if job.key != key:
                    continue
                if batch and size + job.size > self.max_size:
                    break
                batch.append(job)
                size += job.size
            for job in batch:
                self._queue.remove(job)
                job.state = "running"
            self.stats["batches"] += 1
            self.stats["running"] += len(batch)
            self.stats["max_batch_jobs"] = max(self.stats["max_batch_jobs"], len(batch))
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
            last, idle_done = len(batch), False
            try:
                results = list(self.run(batch[0].key, [j.payload for j in batch]))
                if len(results) != len(batch):
                    raise RuntimeError(f"run() returned {len(results)} results for {len(batch)} jobs")
            except Exception as e:  # delivered to every caller of the batch; the worker lives on
                results = [e] * len(batch)
            with self._cond:
                answered = time.monotonic()
                self.stats["running"] -= len(batch)
                for job, res in zip(batch, results):
                    if isinstance(res, BaseException):
                        self.stats["failed"] += 1
                    if job.state == "running":
                        job.state = "done"
                        try:
                            job.loop.call_soon_threadsafe(_deliver, job.future, res)
                        except RuntimeError:  # the event loop is gone (shutdown): nobody waits any more
                            pass


def _deliver(future: asyncio.Future, result: Any) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
