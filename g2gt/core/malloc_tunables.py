"""glibc's malloc without its per-thread cache of freed blocks, for the ``g2gt`` command (flat memory over a corpus).

The command keeps freed memory for reuse (:func:`g2gt.core._compat.keep_freed_memory`: every tensor comes from
the one heap, which is never trimmed). glibc's per-thread cache (*tcache*) then holds up to 7 freed blocks of
each size up to 1,032 bytes without merging them with their neighbours; such blocks, left between the large
blocks of freed batch tensors, cut the heap's free space into pieces too small for the next batch's tensors,
so the heap grows at its top although the memory in use does not. Over UD EWT repeated to 56,028 sentences
(``g2gt parse``, ``mallinfo2`` after each chunk): in use 105 MB after every chunk, the heap 229 -> 283 MB
over 10 chunks, peak RSS 1.16x that of 2,001 sentences. Without the cache
(``GLIBC_TUNABLES=glibc.malloc.tcache_count=0``) the freed blocks merge at once: the heap starts smaller and
grows more slowly (186 -> 219 MB over 7 chunks; peak RSS 34-44 MB lower at 2,001 and 56,028 sentences), at
the same speed, though it still grows (1.15x; docs/benchmarks.md, "Memory over a corpus").

The cache can only be turned off when a process starts (glibc reads ``GLIBC_TUNABLES`` then), so
:func:`run_without_malloc_cache` runs the command again, at once, with it set (one ``execve``, before any
model is loaded; the process keeps its id, its open files and its arguments). Worker processes inherit the
setting. Nothing is done off glibc Linux, when ``G2GT_KEEP_FREED_MEMORY=0`` (the default allocator is kept
entirely), when ``GLIBC_TUNABLES`` already sets ``tcache_count``, or in a process started this way.
No torch import here: the check runs before anything heavy is loaded.
"""

from __future__ import annotations

import os
import sys
from typing import Mapping

__all__ = ["TUNABLE", "malloc_cache_environment", "run_without_malloc_cache"]

#: the glibc tunable the command runs with
TUNABLE = "glibc.malloc.tcache_count=0"
_MARK = "G2GT_MALLOC_TUNED"  # set in the restarted process: never restart twice


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError, AttributeError):
        return False


def malloc_cache_environment(env: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The environment to run the command again with (``env`` plus :data:`TUNABLE` in ``GLIBC_TUNABLES``), or
    ``None`` when there is nothing to change (see the module docstring).

    Args:
        env: the current environment (default ``os.environ``).

    Returns:
        The new environment, or ``None``.
    """
    env = os.environ if env is None else env
    tunables = env.get("GLIBC_TUNABLES", "")
    if (env.get(_MARK) or env.get("G2GT_KEEP_FREED_MEMORY", "1") == "0" or "tcache_count" in tunables
            or not sys.platform.startswith("linux") or not _glibc()):
        return None
    return {**env, "GLIBC_TUNABLES": f"{tunables}:{TUNABLE}" if tunables else TUNABLE, _MARK: "1"}


def _is_the_command(script: str) -> bool:
    """Whether ``sys.argv[0]`` is the ``g2gt`` console script or ``python -m g2gt`` (a file that running again
    runs the same command: never ``python -c`` or a script read from stdin)."""
    if not script or not os.path.isfile(script):
        return False
    name = os.path.basename(script)
    return name == "g2gt" or (name == "__main__.py" and os.path.basename(os.path.dirname(script)) == "g2gt")


def run_without_malloc_cache() -> None:
    """Run this process's command line again with glibc's malloc cache off (module docstring); returns only
    when nothing is to be done or the restart is not possible (not the ``g2gt`` command itself, no
    ``sys.orig_argv``, ``execve`` failed)."""
    env = malloc_cache_environment()
    argv = list(getattr(sys, "orig_argv", []) or [])
    if env is None or not argv or not sys.executable or not _is_the_command(sys.argv[0] if sys.argv else ""):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, argv, env)
    except OSError:
        return
