"""Giving freed heap memory back to the operating system while the server is idle.

The ``g2gt`` command asks glibc to keep freed memory for reuse (:func:`g2gt.core._compat.keep_freed_memory`:
faster batches), so a long-running server's RSS stays at the high-water mark of its largest batches (free
memory, not a leak: README, "Serving", has the measurement). :func:`release_free_memory` is glibc's
``malloc_trim(0)``: every arena's free pages go back to the system. The batcher calls it
once after each busy period, when no request came for a while, so it never costs a request time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

__all__ = ["release_free_memory"]


@functools.lru_cache(maxsize=None)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


def release_free_memory() -> bool:
    """Return free heap memory to the OS (glibc ``malloc_trim(0)``); False where that is not available."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False
