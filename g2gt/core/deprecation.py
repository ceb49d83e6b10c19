"""Old spellings that keep working for one release, each with one :class:`DeprecationWarning`.

g2gt uses one name per concept: ``batch_tokens`` for a token budget, ``num_heads`` / ``num_layers`` /
``num_labels`` for sizes, ``causal`` for a causal mask. A function or config that used to take another
name reads it through :func:`renamed_kwargs` (or is decorated with :func:`renamed_params`), which moves the
value to the new name and warns once per call site, so a caller's code keeps running while it is updated.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["renamed_kwargs", "renamed_params", "warn_renamed"]

F = TypeVar("F", bound=Callable[..., Any])


def warn_renamed(old: str, new: str, where: str, stacklevel: int = 3) -> None:
    """Warn that ``where`` now spells ``old`` as ``new``."""
    warnings.warn(f"{where}: {old!r} is deprecated and will be removed in the next release; use {new!r}",
                  DeprecationWarning, stacklevel=stacklevel)


def renamed_kwargs(kwargs: dict[str, Any], renames: Mapping[str, str], where: str,
                   stacklevel: int = 4) -> dict[str, Any]:
    """Return ``kwargs`` with every old key of ``renames`` (``old -> new``) moved to its new key.

    Passing both spellings is a :class:`TypeError` (which one should win is not knowable); any other
    key is left for the caller to reject as usual.
    """
    out = dict(kwargs)
    for old, new in renames.items():
        if old in out:
            if new in out:
                raise TypeError(f"{where}: got both {old!r} and {new!r}; pass only {new!r}")
            warn_renamed(old, new, where, stacklevel)
            out[new] = out.pop(old)
    return out


def renamed_params(**renames: str) -> Callable[[F], F]:
    """Decorator: keyword arguments ``old=...`` of the decorated function are passed on as ``renames[old]``,
    with a :class:`DeprecationWarning`. The signature seen by :func:`inspect.signature` (and so by the CLI
    options generated from it) is the function's own, with the new names only::

        @renamed_params(max_tokens="batch_tokens")
        def predict(self, sentences, batch_tokens=3000): ...
    """
    def decorate(fn: F) -> F:
        where = fn.__qualname__

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not renames.keys().isdisjoint(kwargs):
                kwargs = renamed_kwargs(kwargs, renames, where, stacklevel=4)
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
