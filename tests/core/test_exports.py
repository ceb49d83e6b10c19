"""The lazy re-exports of the package facades (PEP 562, :mod:`g2gt._lazy`): the table a facade derives its
``__all__`` from, the imports it writes out for type checkers, and the objects themselves agree."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import g2gt

FACADES = ["g2gt", "g2gt.core", "g2gt.ud.parse"]  # the facades whose table is called _EXPORTS


def _type_checking_imports(package: str) -> dict[str, str]:
    """``{name: module relative to the package}`` imported under ``if TYPE_CHECKING:`` in its ``__init__``."""
    path = Path(importlib.import_module(package).__file__)
    out: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1, f"{path}:{imp.lineno}: expected from .x import y"
                for alias in imp.names:
                    out[alias.asname or alias.name] = imp.module
    return out


@pytest.mark.parametrize("package", FACADES)
def test_facade_exports_agree(package):
    mod = importlib.import_module(package)
    exports = mod._EXPORTS
    assert _type_checking_imports(package) == exports, "TYPE_CHECKING imports differ from _EXPORTS"
    assert set(exports) <= set(mod.__all__), f"{sorted(set(exports) - set(mod.__all__))} not in __all__"
    assert len(mod.__all__) == len(set(mod.__all__)), "a name is listed twice in __all__"
    for name in mod.__all__:
        assert getattr(mod, name) is not None


def test_top_level_all_is_load_and_the_lazy_names():
    assert g2gt.__all__ == ["load", *g2gt._EXPORTS]
    assert g2gt.Graph.__module__ == "g2gt.core.graph"
