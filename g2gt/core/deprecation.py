"""Old spellings that keep working for one release, each with one :class:`DeprecationWarning`.

g2gt uses one name per concept: ``batch_tokens`` for a token budget, ``num_heads`` / ``num_layers`` /
``num_labels`` for sizes, ``causal`` for a causal mask. A function or config that used to take another
name reads it through :func:`renamed_kwargs` (or is decorated with :func:`renamed_params`), which moves the
value to the new name and warns once per call site, so a caller's code keeps running while it is updated.
A config dataclass with a renamed field is decorated with :func:`renamed_fields`: the old keyword and
attribute still work (with the warning), and dicts stored under the old key (checkpoints, ``config.json``)
load silently through its ``from_dict`` (:func:`upgrade_keys`), since their owner cannot change them.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["renamed_kwargs", "renamed_params", "renamed_fields", "upgrade_keys", "warn_renamed"]

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


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


def upgrade_keys(d: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """A copy of the stored dict ``d`` with every old key of ``renames`` (``old -> new``) moved to its new key,
    without a warning (the value was written by an earlier version); where both are present the new one wins."""
    out = dict(d)
    for old, new in renames.items():
        if old in out:
            value = out.pop(old)
            out.setdefault(new, value)
    return out


def renamed_fields(**renames: str) -> Callable[[C], C]:
    """Class decorator (above ``@dataclass``) for a config whose fields were renamed, ``old="new"``:

    * ``Cls(old=...)`` still works, moved to ``new`` with a :class:`DeprecationWarning`; both is a ``TypeError``;
    * ``obj.old`` reads and writes ``obj.new``, with the warning;
    * ``Cls.from_dict(d)`` (the class's own, or ``Cls(**d)`` without one) reads dicts with the old keys
      silently: a checkpoint or ``config.json`` written before the rename loads as it did.

    ``dataclasses.fields``, ``asdict`` and ``to_dict`` see the new names only::

        @renamed_fields(encoder_labels="num_labels")
        @dataclass
        class G2GTConfig: ...
    """
    def decorate(cls: C) -> C:
        where = cls.__name__
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if not renames.keys().isdisjoint(kwargs):
                kwargs = renamed_kwargs(kwargs, renames, where, stacklevel=4)
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[misc]
        base = getattr(cls, "from_dict", None)

        def from_dict(klass: Any, d: Mapping[str, Any]) -> Any:
            d = upgrade_keys(d, renames)
            return base.__func__(klass, d) if base is not None else klass(**d)

        from_dict.__doc__ = (f"{where} from a stored dict; the old keys {sorted(renames)} are read as "
                             f"{[renames[k] for k in sorted(renames)]}.")
        cls.from_dict = classmethod(from_dict)  # type: ignore[attr-defined]
        for old, new in renames.items():
            setattr(cls, old, _renamed_attribute(old, new, where))
        return cls

    return decorate


def _renamed_attribute(old: str, new: str, where: str) -> property:
    def get(self: Any) -> Any:
        warn_renamed(old, new, where)
        return getattr(self, new)

    def set_(self: Any, value: Any) -> None:
        warn_renamed(old, new, where)
        setattr(self, new, value)

    return property(get, set_, doc=f"Deprecated: the old name of ``{new}``.")
