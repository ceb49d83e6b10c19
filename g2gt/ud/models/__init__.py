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
A shipped model wins over an installed package of the same name. A name goes through :func:`resolve_name`
first (an old name of :data:`MODEL_ALIASES` becomes the model that replaced it): the CLI, the Python API
(:func:`find_model`, so ``g2gt.load``) and the server (``model=`` in a request) all resolve names that way.

Each card says what the model may be used for: ``license`` (the training data's licence, which the model
inherits: e.g. ``en_combined`` is non-commercial because UD English GUM is, ``en_ewt`` is CC BY-SA 4.0) and
``language``; :func:`model_card` fills them when a card lacks them and :func:`license_name` gives a licence
text's short name (``"CC BY-NC-SA 3.0"``). This module imports no torch.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterable
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "MODEL_ALIASES", "ENTRY_POINT_GROUP", "PACKAGED_DIR", "PART_FILES", "UNKNOWN_LICENSE",
           "available_models", "installed_models", "shipped_models", "is_model_folder", "resolve_name", "find_model",
           "model_card", "model_size", "license_name", "part_checkpoint", "write_card"]

DEFAULT_MODEL = "en_combined"
#: old name -> the model that replaced it (so that code and scripts naming the old one still run); an alias
#: never hides a model of that name: ``en_ewt`` is its own model (EWT only), not a name of ``en_combined``
MODEL_ALIASES: dict[str, str] = {}
UNKNOWN_LICENSE = "unknown: the model card does not say; a model carries the licence of its training data"
#: where shipped models live: package data in g2gt/models/NAME/ (the registry code is this module)
PACKAGED_DIR = Path(__file__).resolve().parents[2] / "models"
PART_FILES = {"parser": "parser.pt", "segmenter": "segmenter.pt", "enhancer": "enhancer.pt"}
#: the entry-point group of model packages: ``name = "module:function"``, the function returns the model folder
from ...core.packages import ENTRY_POINT_GROUP  # noqa: E402  (the one group of every model package)


def shipped_models() -> list[str]:
    """Names of the models shipped inside this installation (folders with a ``parser.pt``)."""
    return sorted(p.name for p in PACKAGED_DIR.iterdir() if is_model_folder(p))


def installed_models() -> dict[str, Path]:
    """Name -> model folder of the model packages installed in this environment (entry points in group
    :data:`ENTRY_POINT_GROUP`). An entry point that fails to load or names no model folder is skipped with
    a warning."""
    from ...core.packages import entry_point_folders

    out: dict[str, Path] = {}
    for name, value, folder in entry_point_folders(ENTRY_POINT_GROUP):
        if (folder / "translator.pt").is_file():
            continue  # a translation model package (g2gt.seq2seq.Translator loads it), not a UD pipeline
        if not is_model_folder(folder):
            warnings.warn(f"model package entry point {name} = {value} names {folder}, which is not a model "
                          "folder (no parser.pt)", stacklevel=2)
            continue
        out.setdefault(name, folder)
    return out


def available_models() -> list[str]:
    """Names of the models this installation can load by name: shipped ones and installed packages."""
    return sorted(set(shipped_models()) | set(installed_models()))


def is_model_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a model folder (shipped or exported): a folder with ``parser.pt``."""
    p = Path(path)
    return p.is_dir() and (p / PART_FILES["parser"]).is_file()


def resolve_name(name: str, known: Iterable[str] | None = None) -> str:
    """The model name that ``name`` stands for: ``name`` itself when it is a model (of ``known``, default
    :func:`available_models`), else the model that replaced it when it is an old name (:data:`MODEL_ALIASES`),
    else ``name`` unchanged (the caller reports it as unknown). The one rule by which the CLI, the Python API
    and the server resolve names."""
    names = set(available_models() if known is None else known)
    if name in names or name not in MODEL_ALIASES:
        return name
    return MODEL_ALIASES[name]


def find_model(name_or_path: str | os.PathLike) -> Path:
    """An existing path as it is, else the shipped model of that name (:func:`resolve_name` first), else the
    installed model package.

    Raises ``FileNotFoundError`` naming the available models when it is none of these."""
    p = Path(name_or_path)
    if p.exists():
        return p
    name = str(name_or_path)
    if os.sep not in name and "/" not in name:
        installed = installed_models()
        name = resolve_name(name, [*shipped_models(), *installed])
        if is_model_folder(PACKAGED_DIR / name):
            return PACKAGED_DIR / name
        if name in installed:
            return installed[name]
    known = ", ".join(available_models()) or "none in this installation"
    aliases = [f"{old} = {new}" for old, new in MODEL_ALIASES.items()]
    if aliases:
        known += f"; old names: {', '.join(aliases)}"
    hint = (f"; the model package {name} is in the g2gt repository: pip install models/{name}"
            if (PACKAGED_DIR.parent.parent / "models" / name / "pyproject.toml").is_file() else "")
    raise FileNotFoundError(f"{name}: no such file or folder, and not a shipped or installed model (available: "
                            f"{known}){hint}; give a model's name, a model or training folder or a checkpoint file, "
                            "or install a model package (pip install models/NAME)")


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
    """The ``model.json`` card of a model folder, with ``language`` and ``license`` always present: a card
    that lacks them gets the language code its name starts with (``fr_sequoia`` -> ``fr``; ``None`` when the
    name has none) and :data:`UNKNOWN_LICENSE`."""
    where = find_model(name_or_path)
    file = where / "model.json"
    card = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
    if not card.get("language"):
        m = re.match(r"([a-z]{2,3})_", str(card.get("name") or where.name))
        card["language"] = m.group(1) if m else None
    if not card.get("license"):
        card["license"] = UNKNOWN_LICENSE
    return card


def model_size(name_or_path: str | os.PathLike) -> int:
    """Bytes of a model folder's part files (``*.pt``)."""
    where = find_model(name_or_path)
    return sum(p.stat().st_size for p in where.glob("*.pt") if p.is_file()) if where.is_dir() else where.stat().st_size


_CC = re.compile(r"(?:(?:creative\s*commons|\bcc\b)[^.\n]*?|^\s*(?=attribution))"
                 r"(attribution(?:[-\s]+(?:non-?commercial|share-?alike|no-?derivatives?|no-?derivs))*"
                 r"|by(?:-(?:nc|sa|nd))*)[\s\w.-]*?(\d\.\d)", re.I)
_CC_PARTS = (("non", "NC"), ("nc", "NC"), ("share", "SA"), ("sa", "SA"), ("deriv", "ND"), ("nd", "ND"))


def license_name(text: str | None) -> str:
    """A licence text's short name: a Creative Commons licence as ``CC BY[-NC][-SA][-ND] X.Y`` (found in
    ``"... CreativeCommons Attribution-NonCommercial-ShareAlike 3.0 license"``, ``"CC BY-SA 4.0 (...)"`` or a
    legal code's title ``"Attribution-ShareAlike 4.0 International"``),
    the LGPL for linguistic resources as ``LGPL-LR``, else the text's first line; ``"unknown"`` for none.

    >>> license_name("distributed under a CreativeCommons Attribution-NonCommercial-ShareAlike 3.0 license")
    'CC BY-NC-SA 3.0'
    """
    if not text or not text.strip() or text == UNKNOWN_LICENSE:
        return "unknown"
    m = _CC.search(text)
    if m:
        words = re.split(r"[-\s]+", m.group(1).lower())[1:]
        parts = [short for w in words for key, short in _CC_PARTS if w.startswith(key)]
        return " ".join(["CC", "-".join(["BY", *dict.fromkeys(parts)]), m.group(2)])
    if re.search(r"lesser general public licen[cs]e for linguistic resources|\bLGPL-?LR\b", text, re.I):
        return "LGPL-LR"
    return text.strip().splitlines()[0][:80]


def write_card(folder: str | os.PathLike, updates: dict) -> dict:
    """Merge ``updates`` into ``folder/model.json`` (created when missing); returns the card as written."""
    path = Path(folder) / "model.json"
    card = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    card.update(updates)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return card
