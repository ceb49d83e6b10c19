"""Lazy re-exports for package ``__init__`` modules (PEP 562): a name loads its module on first use, so
importing a package stays cheap (no torch until a name that needs it is used)."""

from __future__ import annotations

import importlib
from typing import Callable


def lazy_exports(package: str, exports: dict[str, str], namespace: dict
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for package ``package`` whose ``exports`` map names to submodules (relative
    names); a loaded name is cached in the package's ``namespace`` (its ``globals()``).

    >>> __getattr__, __dir__ = lazy_exports(__name__, {"Parser": "parser"}, globals())  # doctest: +SKIP
    """

    def __getattr__(name: str) -> object:
        if name in exports:
            value = getattr(importlib.import_module(f".{exports[name]}", package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
