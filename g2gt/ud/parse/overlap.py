"""Batches decoded ahead of their use, so that one batch's host work overlaps the next one's device work.

On a GPU, a batch of :func:`g2gt.ud.parse.decode.decode_sentences` spends part of its time on the host:
collating, the tree decoder for the sentences whose greedy heads are no tree
(:func:`g2gt.ud.parse.trees.decode_heads`), the one host copy (:func:`g2gt.ud.parse.host.to_host`). With
:func:`in_order` and ``ahead = 2`` a second batch runs on a worker thread meanwhile, its kernels queued on the
device while the first batch's host work goes on; the results still come in input order. On the CPU the threads
would only compete for the same cores, so ``ahead = 1`` there: a plain loop in the caller's thread.

The worker threads start with the caller's autocast state and CUDA device (:func:`thread_context`; both are
thread-local in torch).
"""

from __future__ import annotations

import contextlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

import torch

__all__ = ["in_order", "batches_ahead", "thread_context", "CUDA_BATCHES_AHEAD"]

T = TypeVar("T")
R = TypeVar("R")

#: batches in flight at once on a CUDA device (one decoding, one on the host); 1 everywhere else
CUDA_BATCHES_AHEAD = 2


def batches_ahead(device: torch.device | str, ahead: int | None = None) -> int:
    """``ahead`` when given (at least 1), else :data:`CUDA_BATCHES_AHEAD` on CUDA and 1 on other devices.

    Args:
        device: where the model runs.
        ahead: the caller's choice (``None``: the device's default).

    Returns:
        Batches in flight at once.
    """
    if ahead is not None:
        if int(ahead) < 1:
            raise ValueError(f"batches ahead must be >= 1, got {ahead!r}")
        return int(ahead)
    return CUDA_BATCHES_AHEAD if torch.device(device).type == "cuda" else 1


def thread_context(device: torch.device | str) -> Callable[[], contextlib.AbstractContextManager]:
    """A factory of context managers that give another thread the calling thread's state for ``device``: its
    autocast state (thread-local in torch) and, for a CUDA device, that device as the current one (also
    thread-local; kernels launched from Python, e.g. Triton's, run on the current device).

    Args:
        device: the device the work runs on (``"cuda:1"``, ``"cpu"``...).

    Returns:
        A callable that makes one such context manager per use.
    """
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())  # the calling thread's
    dtype = torch.get_autocast_dtype(dev.type) if torch.is_autocast_enabled(dev.type) else None

    def context() -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        if dev.type == "cuda":
            stack.enter_context(torch.cuda.device(dev))
        if dtype is not None:
            stack.enter_context(torch.autocast(dev.type, dtype=dtype))
        return stack

    return context


def in_order(items: Iterable[T], fn: Callable[[T], R], ahead: int = 1,
             context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> Iterator[R]:
    """``fn(item)`` for every item, yielded in input order, with up to ``ahead`` calls running at once.

    ``ahead = 1``: each call runs in the caller's thread when its result is asked for (a plain loop). ``ahead = k
    > 1``: a pool of ``k`` threads; item ``i + k - 1`` is submitted before result ``i`` is waited for, so
    ``k - 1`` later calls overlap the wait. An exception of a call is raised when its result is due; calls not
    started yet are then cancelled, and those running are waited for.

    Args:
        items: the inputs.
        fn: the work for one input (run on a worker thread when ``ahead > 1``).
        ahead: calls in flight at most.
        context: entered around each call on a worker thread (e.g. :func:`thread_context`).

    Yields:
        ``fn(item)`` of each item, in the order of ``items``.
    """
    if ahead <= 1:
        for item in items:
            yield fn(item)
        return

    def run(item: T) -> R:
        with context():
            return fn(item)

    pending: deque[Future] = deque()
    with ThreadPoolExecutor(ahead, thread_name_prefix="g2gt-decode") as pool:
        try:
            for item in items:
                pending.append(pool.submit(run, item))
                if len(pending) >= ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:
                f.cancel()
