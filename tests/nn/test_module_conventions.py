"""Every nn.Module of the library has reset_parameters() and a repr that shows its knobs (DESIGN.md)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from torch import nn

import g2gt

SKIP = {"g2gt.nn.conv", "g2gt.__main__"}  # conv: imports torch_geometric (G2GConv: tests/nn/test_conv.py)


def _module_classes() -> list[type]:
    out = []
    for info in pkgutil.walk_packages(g2gt.__path__, "g2gt."):
        if info.name in SKIP or info.name.startswith(("g2gt.serve", "g2gt.cli", "g2gt.spacy", "g2gt.ud.spacy")):
            continue
        try:
            mod = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (ray ...) that is not installed
            continue
        out += [c for _, c in inspect.getmembers(mod, inspect.isclass)
                if issubclass(c, nn.Module) and c.__module__ == info.name]
    return sorted(set(out), key=lambda c: (c.__module__, c.__name__))


CLASSES = _module_classes()


def test_the_library_has_modules_to_check():
    assert len(CLASSES) >= 15


@pytest.mark.parametrize("cls", CLASSES, ids=[f"{c.__module__}.{c.__name__}" for c in CLASSES])
def test_module_resets_and_shows_its_knobs(cls):
    assert callable(getattr(cls, "reset_parameters", None)), f"{cls.__name__} has no reset_parameters()"
    assert cls.extra_repr is not nn.Module.extra_repr or cls.__repr__ is not nn.Module.__repr__, \
        f"{cls.__name__}: repr shows no knobs (define extra_repr)"
