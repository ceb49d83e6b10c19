"""Models by name: shipped inside the package (``g2gt/models/NAME/``, package data, no download) or
installed as their own Python packages (``pip install models/NAME``, see :mod:`g2gt.ud.models.package`),
found through the entry-point group ``g2gt.models``.

A model folder holds the parts a pipeline needs, each a checkpoint that loads with
``weights_only=True`` and ``strict=True``:

* ``parser.pt``    -- the parser with its tagger / lemma heads (:class:`g2gt.ud.parse.Parser`);
* ``segmenter.pt`` -- the learned tokenizer / sentence splitter (:class:`g2gt.ud.tokenize.Segmenter`), optional;
* ``enhancer.pt``  -- the enhanced-UD graph model (:class:`g2gt.ud.enhance.Enhancer`), optional;
* ``model.json``   -- its card: what it was trained on, with which commands, and its measured scores.

Folders written by :func:`g2gt.ud.models.export.export_model` (``g2gt export-model``) have this layout too, so
``Parser.load`` takes a model's name (``"en_combined"``), such a folder, a training folder or a checkpoint file.
A shipped model wins over an installed package of the same name. Old names stay loadable through
:data:`MODEL_ALIASES` (``"en_ewt"`` loads the English model that replaced it). This module imports no torch.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "MODEL_ALIASES", "ENTRY_POINT_GROUP", "PACKAGED_DIR", "PART_FILES", "available_models",
           "installed_models", "shipped_models", "is_model_folder", "find_model", "model_card", "part_checkpoint",
           "write_card"]

DEFAULT_MODEL = "en_combined"
#: old name -> the shipped model that replaced it (kept so that code and scripts naming the old one still run)
MODEL_ALIASES = {"en_ewt": "en_combined"}
#: where shipped models live: package data in g2gt/models/NAME/ (the registry code is this module)
PACKAGED_DIR = Path(__file__).resolve().parents[2] / "models"
PART_FILES = {"parser": "parser.pt", "segmenter": "segmenter.pt", "enhancer": "enhancer.pt"}
#: the entry-point group of model packages: ``name = "module:function"``, the function returns the model folder
ENTRY_POINT_GROUP = "g2gt.models"


def shipped_models() -> list[str]:
    """Names of the models shipped inside this installation (folders with a ``parser.pt``)."""
    return sorted(p.name for p in PACKAGED_DIR.iterdir() if is_model_folder(p))


def installed_models() -> dict[str, Path]:
    """Name -> model folder of the model packages installed in this environment (entry points in group
    :data:`ENTRY_POINT_GROUP`). An entry point that fails to load or names no model folder is skipped with
    a warning."""
    from importlib.metadata import entry_points

    out: dict[str, Path] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            folder = Path(target() if callable(target) else target)
        except Exception as e:  # a broken package must not break the others
            warnings.warn(f"model package entry point {ep.name} = {ep.value} failed to load: {e}", stacklevel=2)
            continue
        if not is_model_folder(folder):
            warnings.warn(f"model package entry point {ep.name} = {ep.value} names {folder}, which is not a model "
                          "folder (no parser.pt)", stacklevel=2)
            continue
        out.setdefault(ep.name, folder)
    return out


def available_models() -> list[str]:
    """Names of the models this installation can load by name: shipped ones and installed packages."""
    return sorted(set(shipped_models()) | set(installed_models()))


def is_model_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a model folder (shipped or exported): a folder with ``parser.pt``."""
    p = Path(path)
    return p.is_dir() and (p / PART_FILES["parser"]).is_file()


def find_model(name_or_path: str | os.PathLike) -> Path:
    """An existing path as it is, else the shipped model of that name, else the installed model package.

    Raises ``FileNotFoundError`` naming the available models when it is none of these."""
    p = Path(name_or_path)
    if p.exists():
        return p
    name = str(name_or_path)
    if os.sep not in name and "/" not in name:
        if not is_model_folder(PACKAGED_DIR / name):
            name = MODEL_ALIASES.get(name, name)
        if is_model_folder(PACKAGED_DIR / name):
            return PACKAGED_DIR / name
        installed = installed_models()
        if name in installed:
            return installed[name]
    known = ", ".join(available_models()) or "none in this installation"
    aliases = [f"{old} = {new}" for old, new in MODEL_ALIASES.items() if is_model_folder(PACKAGED_DIR / new)]
    if aliases:
        known += f"; old names: {', '.join(aliases)}"
    raise FileNotFoundError(f"{name}: no such file or folder, and not a shipped or installed model (available: "
                            f"{known}); give a model's name, a model or training folder or a checkpoint file, or "
                            "install a model package (pip install models/NAME)")


def part_checkpoint(name_or_path: str | os.PathLike, part: str) -> Path:
    """The checkpoint file of one part (a key of :data:`PART_FILES`): in a model folder (a shipped name or an
    exported folder) its part file, else the file itself or a training folder's ``best.pt`` (else ``last.pt``).

    Raises ``FileNotFoundError`` when a model folder lacks the part or a training folder has no checkpoint."""
    from ...core.checkpoint import resolve_checkpoint

    where = find_model(name_or_path)
    if not is_model_folder(where):
        return resolve_checkpoint(where)
    file = where / PART_FILES[part]
    if not file.is_file():
        raise FileNotFoundError(f"{name_or_path}: this model folder has no {PART_FILES[part]}")
    return file


def model_card(name_or_path: str | os.PathLike) -> dict:
    """The ``model.json`` card of a model folder (``{}`` when it has none)."""
    card = find_model(name_or_path) / "model.json"
    return json.loads(card.read_text(encoding="utf-8")) if card.is_file() else {}


def write_card(folder: str | os.PathLike, updates: dict) -> dict:
    """Merge ``updates`` into ``folder/model.json`` (created when missing); returns the card as written."""
    path = Path(folder) / "model.json"
    card = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    card.update(updates)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return card
