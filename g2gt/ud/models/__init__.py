"""Models shipped inside the package: ``g2gt/models/NAME/`` (package data, no download).

A model folder holds the parts a pipeline needs, each a checkpoint that loads with
``weights_only=True`` and ``strict=True``:

* ``parser.pt``    -- the parser with its tagger / lemma heads (:class:`g2gt.ud.parse.Parser`);
* ``segmenter.pt`` -- the learned tokenizer / sentence splitter (:class:`g2gt.ud.tokenize.Segmenter`), optional;
* ``enhancer.pt``  -- the enhanced-UD graph model (:class:`g2gt.ud.enhance.Enhancer`), optional;
* ``model.json``   -- its card: what it was trained on, with which commands, and its measured scores.

Folders written by :func:`g2gt.ud.models.export.export_model` (``g2gt export-model``) have this layout too, so
``Parser.load`` takes a shipped name (``"en_ewt"``), such a folder, a training folder or a checkpoint file.
This module imports no torch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "PACKAGED_DIR", "PART_FILES", "available_models", "is_model_folder",
           "find_model", "model_card", "part_checkpoint"]

DEFAULT_MODEL = "en_ewt"
PACKAGED_DIR = Path(__file__).resolve().parent
PART_FILES = {"parser": "parser.pt", "segmenter": "segmenter.pt", "enhancer": "enhancer.pt"}


def available_models() -> list[str]:
    """Names of the models shipped in this installation (folders with a ``parser.pt``)."""
    return sorted(p.name for p in PACKAGED_DIR.iterdir() if is_model_folder(p))


def is_model_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a model folder (shipped or exported): a folder with ``parser.pt``."""
    p = Path(path)
    return p.is_dir() and (p / PART_FILES["parser"]).is_file()


def find_model(name_or_path: str | os.PathLike) -> Path:
    """An existing path as it is, else the shipped model of that name.

    Raises ``FileNotFoundError`` naming the shipped models when it is neither."""
    p = Path(name_or_path)
    if p.exists():
        return p
    name = str(name_or_path)
    if os.sep not in name and "/" not in name and is_model_folder(PACKAGED_DIR / name):
        return PACKAGED_DIR / name
    shipped = ", ".join(available_models()) or "none in this installation"
    raise FileNotFoundError(f"{name}: no such file or folder, and not a shipped model (shipped: {shipped}); "
                            "give a shipped model's name, a training folder or a checkpoint file")


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
