"""``Translator.pipe(lines, n_process=N)``: chunks of lines translated in N worker processes, in order.

The translator is written once to a temporary checkpoint in its own dtype (so the workers hold the very same
weights); each worker (``forkserver`` where the platform has it, else ``spawn``: never ``fork``, which torch
does not survive) loads it once, with one torch thread, and then translates the chunks it is sent. At most
``2 * N`` chunks are in flight, so memory does not grow with the input; results come back in input order,
so the output is the one of a single process. A worker's exception is raised again in the caller.
"""

from __future__ import annotations

import multiprocessing as mp
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

__all__ = ["translate_parallel"]

_WORKER: dict = {}


def _start(load, path: str, device: str, dtype: str, config: dict) -> None:
    import torch

    from .config import TranslateConfig

    torch.set_num_threads(1)
    _WORKER["translator"] = load(path, device=device, dtype=dtype)
    _WORKER["config"] = TranslateConfig.from_dict(config)


def _job(job: tuple[list, int]) -> list[str]:
    lines, first_line = job
    return _WORKER["translator"]._translate(lines, _WORKER["config"], first_line)


def translate_parallel(translator, chunks: Iterable[list], config, n_process: int) -> Iterator[str]:
    """The translations of ``chunks`` (lists of lines) by ``n_process`` workers, chunk by chunk in order."""
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    with tempfile.TemporaryDirectory(prefix="g2gt-translate-") as tmp:
        path = translator.save(Path(tmp) / "translator.pt", storage_dtype=translator.dtype)
        dtype = str(translator.dtype).removeprefix("torch.")
        args = (type(translator).load, str(path), str(translator.device), dtype, config.to_dict())
        pool = ProcessPoolExecutor(n_process, mp_context=mp.get_context(method), initializer=_start, initargs=args)
        try:
            pending: deque = deque()
            start = 1
            for chunk in chunks:
                pending.append(pool.submit(_job, (chunk, start)))
                start += len(chunk)
                if len(pending) >= 2 * n_process:
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()
        finally:  # also when the caller stops reading early: drop the chunks not started
            pool.shutdown(wait=True, cancel_futures=True)
