"""Old import paths of the 0.1 layout, kept working for one release.

``g2gt.parsing.model`` is now ``g2gt.ud.parse.model``, ``g2gt.graph`` is ``g2gt.core.graph`` and so on
(:data:`OLD_TO_NEW`). A :class:`sys.meta_path` finder answers an old name with the module of the new name
(the same module object, so ``isinstance`` checks and patches agree) and emits one
:class:`DeprecationWarning` per old name. New code imports the new names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["OLD_TO_NEW", "new_name", "install"]

#: old module or package -> new one; a package's submodules follow it (longest prefix wins)
OLD_TO_NEW = {
    "g2gt.graph": "g2gt.core.graph",
    "g2gt.batch": "g2gt.core.batch",
    "g2gt.train": "g2gt.core.train",
    "g2gt.train_config": "g2gt.core.config",
    "g2gt.checkpoint": "g2gt.core.checkpoint",
    "g2gt.schedule": "g2gt.core.schedule",
    "g2gt._compat": "g2gt.core._compat",
    "g2gt.plot": "g2gt.core.plot",
    "g2gt.io": "g2gt.ud.io",
    "g2gt.io.files": "g2gt.core.files",
    "g2gt.io.text": "g2gt.ud.tokenize.text",
    "g2gt.io.rule_tokenizer": "g2gt.ud.tokenize.rules",
    "g2gt.segment": "g2gt.ud.tokenize",
    "g2gt.parsing": "g2gt.ud.parse",
    "g2gt.parsing.predictor": "g2gt.ud.parse.parser",
    "g2gt.trees": "g2gt.ud.parse.trees",
    "g2gt.enhanced": "g2gt.ud.enhance",
    "g2gt.evaluate": "g2gt.ud.evaluate",
    "g2gt.draw": "g2gt.ud.draw",
    "g2gt.export": "g2gt.ud.models.export",
    "g2gt.models": "g2gt.ud.models",
    "g2gt.tasks": "g2gt.seq2seq",
    "g2gt.tasks.seq2seq": "g2gt.seq2seq",
    "g2gt.decode": "g2gt.seq2seq.search",
    "g2gt.tokenizer": "g2gt.seq2seq.subword",
    "g2gt.commands": "g2gt.cli",
}


def new_name(name: str) -> str | None:
    """The new dotted name for an old one (``"g2gt.parsing.model"`` -> ``"g2gt.ud.parse.model"``), else None."""
    best = max((old for old in OLD_TO_NEW if name == old or name.startswith(old + ".")), key=len, default=None)
    return None if best is None else OLD_TO_NEW[best] + name[len(best):]


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds old names; loading one imports the new module and hands that module back."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=False)

    def create_module(self, spec):
        new = new_name(spec.name)
        warnings.warn(f"{spec.name} moved to {new}; the old name goes away in the next release",
                      DeprecationWarning, stacklevel=3)
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__   # importlib sets module.__spec__ to the alias spec: undone below
        return module

    def exec_module(self, module) -> None:
        original = getattr(module.__spec__, "loader_state", None)
        if original is not None:
            module.__spec__ = original


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
