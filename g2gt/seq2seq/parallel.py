"""``Translator.pipe(lines, n_process=N)``: chunks of lines translated in N worker processes, in order.

The translator is written once to a temporary checkpoint in its own dtype (so the workers hold the very same
weights); the worker pool (:class:`g2gt.core.pool.ProcessPool`, the one the UD pipeline uses: ``forkserver``
or ``spawn``, never ``fork``; one torch thread per worker; a dead worker replaced and its chunk run again)
starts N workers that each load it once and then translate the chunks they are sent. At most ``2 * N``
chunks are in flight, so memory does not grow with the input; results come back in input order, so the
output is the one of a single process. A worker's exception is raised again in the caller.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.pool import ProcessPool

__all__ = ["translate_parallel"]


@dataclass(frozen=True)
class _TranslatorRecipe:
    """What a worker loads (picklable): the translator class's ``load``, the checkpoint and decoding settings.
    Called in the worker, it returns the handler ``(lines, first_line) -> translations``."""

    load: Callable
    path: str
    device: str
    dtype: str
    config: dict

    def __call__(self) -> Callable[[tuple[list, int]], list[str]]:
        from ..core.pool import worker_setup
        from .config import TranslateConfig

        worker_setup()
        translator = self.load(self.path, device=self.device, dtype=self.dtype)
        config = TranslateConfig.from_dict(self.config)

        def translate(job: tuple[list, int]) -> list[str]:
            lines, first_line = job
            return translator._translate(lines, config, first_line)

        return translate


def translate_parallel(translator, chunks: Iterable[list], config, n_process: int) -> Iterator[str]:
    """The translations of ``chunks`` (lists of lines) by ``n_process`` workers, chunk by chunk in order."""
    with tempfile.TemporaryDirectory(prefix="g2gt-translate-") as tmp:
        path = translator.save(Path(tmp) / "translator.pt", storage_dtype=translator.dtype)
        dtype = str(translator.dtype).removeprefix("torch.")
        recipe = _TranslatorRecipe(type(translator).load, str(path), str(translator.device), dtype, config.to_dict())

        def jobs() -> Iterator[tuple[list, int]]:
            start = 1
            for chunk in chunks:
                yield chunk, start
                start += len(chunk)

        with ProcessPool(recipe, n_process, threads=1, preload=("torch",)) as pool:
            for translated in pool.map(jobs(), window=2 * n_process):
                yield from translated
