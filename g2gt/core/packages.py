"""Installed model packages: the folders their ``g2gt.models`` entry points name.

Each model package (a UD pipeline or a translator, see ``g2gt package``) declares an entry point in the group
:data:`ENTRY_POINT_GROUP` whose target is a model folder or a zero-argument function returning one. The UD
registry and the translator registry both read the group through :func:`entry_point_folders` and keep the
folders of their own kind.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "entry_point_folders"]

#: the entry-point group every g2gt model package declares
ENTRY_POINT_GROUP = "g2gt.models"


def entry_point_folders(group: str = ENTRY_POINT_GROUP) -> Iterator[tuple[str, str, Path]]:
    """``(name, entry point value, folder)`` for each entry point of ``group``; one that fails to load is
    skipped with a warning (a broken package must not break the others)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=group):
        try:
            target = ep.load()
            folder = Path(target() if callable(target) else target)
        except Exception as e:
            warnings.warn(f"model package entry point {ep.name} = {ep.value} failed to load: {e}", stacklevel=3)
            continue
        yield ep.name, ep.value, folder
