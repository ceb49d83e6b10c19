"""Models by name, of every kind: the one registry behind ``g2gt.load``, ``Translator.load``, ``g2gt parse
--model``, ``g2gt translate --model``, ``g2gt models`` and the server.

A **model folder** holds one model's files and its card ``model.json``; what makes it a model of a kind is
one file (:data:`KIND_FILES`): ``parser.pt`` for a UD pipeline (with ``segmenter.pt``, ``enhancer.pt``,
``coref.pt``, ``lemmatizer.pt`` beside it when it has those stages), ``translator.pt`` for a translator.
Every file is a checkpoint that loads with ``weights_only=True`` and ``strict=True``.

Models are found in two places, in this order:

* **shipped** inside the package (``g2gt/models/NAME/``, package data, no download);
* **installed** as their own Python packages (``pip install models/NAME``, written by
  :func:`g2gt.core.package.build_package`), found through the entry-point group :data:`ENTRY_POINT_GROUP`.

Names resolve with one rule (:func:`find_model`), the same in the CLI, in Python and in the server:

1. a name that looks like a path (``./x``, ``/x``, ``x/``, ``~/x``, anything with a path separator, a
   ``.pt`` file) or a ``pathlib.Path`` is that path;
2. a model's name is that model (so a folder ``./en_combined`` in the working directory never shadows the
   model ``en_combined``: give ``./en_combined`` to load the folder);
3. a language code (``"fr"``) is that language's default model (:func:`language_default`);
4. any other existing file or folder is that path; else ``FileNotFoundError`` listing the models.

Each card says what the model may be used for: ``license`` (the training data's licence, which the model
inherits) and ``language``; :func:`model_card` fills them when a card lacks them. This module imports no torch.
"""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "ENTRY_POINT_GROUP", "KIND_FILES", "KINDS", "PACKAGED_DIR", "UNKNOWN_LICENSE",
           "available_models", "installed_models", "shipped_models", "entry_point_folders", "folder_kind",
           "is_model_folder", "looks_like_path", "language_default", "resolve_name", "find_model", "model_card",
           "model_size", "license_name", "write_card"]

#: the model ``g2gt.load()`` and ``g2gt parse`` use when none is named
DEFAULT_MODEL = "en_combined"
#: the entry-point group every g2gt model package declares (UD pipelines and translators alike)
ENTRY_POINT_GROUP = "g2gt.models"
#: kind -> the file that makes a folder a model of that kind
KIND_FILES = {"pipeline": "parser.pt", "translator": "translator.pt"}
#: kind -> what it is, for messages
KINDS = {"pipeline": "a UD pipeline (g2gt.load, g2gt parse)",
         "translator": "a translator (g2gt.Translator.load, g2gt translate)"}
_SINGULAR = {"pipeline": "UD pipeline", "translator": "translator"}
_PLURAL = {"pipeline": "UD pipelines", "translator": "translators"}
UNKNOWN_LICENSE = "unknown: the model card does not say; a model carries the licence of its training data"
#: where shipped models live: package data in g2gt/models/NAME/
PACKAGED_DIR = Path(__file__).resolve().parents[1] / "models"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_log = logging.getLogger("g2gt")
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


# ---------------------------------------------------------------------------- what is where
def folder_kind(path: str | os.PathLike) -> str | None:
    """The kind of model folder ``path`` is (a key of :data:`KIND_FILES`), or None when it is none."""
    p = Path(path)
    if not p.is_dir():
        return None
    return next((kind for kind, file in KIND_FILES.items() if (p / file).is_file()), None)


def is_model_folder(path: str | os.PathLike, kind: str | None = "pipeline") -> bool:
    """Whether ``path`` is a model folder of ``kind`` (None: of any kind)."""
    found = folder_kind(path)
    return found is not None and (kind is None or found == kind)


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


def _check_kind(kind: str | None) -> None:
    if kind is not None and kind not in KIND_FILES:
        raise ValueError(f"kind={kind!r}: expected one of {', '.join(KIND_FILES)} (or None for every kind)")


def shipped_models(kind: str | None = "pipeline") -> dict[str, Path]:
    """Name -> folder of the models of ``kind`` (None: every kind) shipped inside this installation."""
    _check_kind(kind)
    if not PACKAGED_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(PACKAGED_DIR.iterdir()) if is_model_folder(p, kind)}


def installed_models(kind: str | None = "pipeline") -> dict[str, Path]:
    """Name -> folder of the model packages of ``kind`` (None: every kind) installed in this environment
    (entry points of :data:`ENTRY_POINT_GROUP`). An entry point that names no model folder is skipped with a
    warning."""
    _check_kind(kind)
    out: dict[str, Path] = {}
    for name, value, folder in entry_point_folders(ENTRY_POINT_GROUP):
        found = folder_kind(folder)
        if found is None:
            warnings.warn(f"model package entry point {name} = {value} names {folder}, which is not a model "
                          f"folder (none of {', '.join(KIND_FILES.values())})", stacklevel=2)
        elif kind is None or found == kind:
            out.setdefault(name, folder)
    return out


def _registered(kind: str | None) -> dict[str, Path]:
    """Name -> folder of every model of ``kind`` this installation knows; a shipped one wins over an installed
    package of the same name."""
    return {**installed_models(kind), **shipped_models(kind)}


def available_models(kind: str | None = None) -> list[str]:
    """Names of the models of ``kind`` this installation can load by name.

    Shipped models and installed packages count.

    Args:
        kind: ``"pipeline"``, ``"translator"`` or ``None`` (every kind).

    Returns:
        The names.
    """
    return sorted(_registered(kind))


# ---------------------------------------------------------------------------- names
def looks_like_path(name_or_path: str | os.PathLike) -> bool:
    """Whether ``name_or_path`` is meant as a path, never as a model's name: a ``pathlib.Path`` (or other
    ``os.PathLike``), or a string with a path separator, starting with ``.`` or ``~`` or ending with ``.pt``."""
    if not isinstance(name_or_path, str):
        return True
    s = name_or_path
    return "/" in s or os.sep in s or s.startswith((".", "~")) or s.endswith(".pt")


def _language(folder: Path) -> str | None:
    card = folder / "model.json"
    try:
        data = json.loads(card.read_text(encoding="utf-8")) if card.is_file() else {}
    except (OSError, ValueError):
        data = {}
    if data.get("language"):
        return str(data["language"])
    m = re.match(r"([a-z]{2,3})_", str(data.get("name") or folder.name))
    return m.group(1) if m else None


def language_default(code: str, kind: str = "pipeline") -> str | None:
    """The model a language code (``"fr"``) stands for.

    :data:`DEFAULT_MODEL` when it is of that language, else the first shipped model of that language, else the first
    installed one (by name); None when no model of ``kind`` is of that language.

    Args:
        code: a language code (``"fr"``).
        kind: ``"pipeline"`` (default) or ``"translator"``.

    Returns:
        The model's name, or ``None``.
    """
    if not _LANGUAGE.match(code or ""):
        return None
    return _language_default(code, shipped_models(kind), installed_models(kind))


def _language_default(code: str, shipped: dict[str, Path], installed: dict[str, Path]) -> str | None:
    if not _LANGUAGE.match(code or ""):
        return None
    if DEFAULT_MODEL in shipped and _language(shipped[DEFAULT_MODEL]) == code:
        return DEFAULT_MODEL
    for group in (shipped, installed):
        for name in sorted(group):
            if _language(group[name]) == code:
                return name
    return None


def resolve_name(name: str, kind: str = "pipeline") -> str:
    """The model name that ``name`` stands for: ``name`` itself when it is a model of ``kind``, else the
    default model of the language when ``name`` is a language code (:func:`language_default`), else ``name``
    unchanged (the caller reports it as unknown)."""
    return _resolve(name, shipped_models(kind), installed_models(kind))


def _resolve(name: str, shipped: dict[str, Path], installed: dict[str, Path]) -> str:
    if name in shipped or name in installed:
        return name
    return _language_default(name, shipped, installed) or name


def find_model(name_or_path: str | os.PathLike, kind: str = "pipeline") -> Path:
    """The folder (or file) ``name_or_path`` names.

    By the rule of the module docstring: a path-like name as a path, a model's name as that model, a language code as
    its default model, another existing path as it is.

    Raises ``FileNotFoundError`` saying what was looked for and naming the available models; a model of
    another kind is named as such (``en_de_multi30k is a translator ...``).

    Args:
        name_or_path: a model's name, a language code or a path.
        kind: ``"pipeline"`` (default) or ``"translator"``.

    Returns:
        The model's folder or file.

    Raises:
        FileNotFoundError: nothing of that name or path, naming the available models.
    """
    _check_kind(kind)
    if looks_like_path(name_or_path):
        p = Path(name_or_path).expanduser()
        if p.exists():
            return p
        raise FileNotFoundError(f"{name_or_path}: no such file or folder; give a model's name, a model or training "
                                f"folder or a checkpoint file (shipped and installed {_PLURAL[kind]}: "
                                f"{_listing(kind)})")
    name = str(name_or_path)
    shipped, installed = shipped_models(kind), installed_models(kind)  # the entry points are read once
    registered = {**installed, **shipped}
    resolved = _resolve(name, shipped, installed)
    if resolved in registered:
        if Path(name).exists():
            _log.warning("%s: loading the model %s (%s), not the %s %s in this folder; give ./%s to load that",
                         name, resolved, registered[resolved], "folder" if Path(name).is_dir() else "file", name, name)
        elif resolved != name:
            _log.info("%s: the language's model %s (%s)", name, resolved, registered[resolved])
        return registered[resolved]
    if Path(name).exists():
        _log.info("%s: the %s %s in this folder (no model has that name)", name,
                  "folder" if Path(name).is_dir() else "file", name)
        return Path(name)
    other = {k: n for k in KIND_FILES if k != kind for n in _registered(k) if n == name}
    if other:
        (other_kind, _), = list(other.items())[:1]
        raise FileNotFoundError(f"{name} is {KINDS[other_kind]}, not {KINDS[kind]}")
    hint = ""
    repo = PACKAGED_DIR.parent.parent / "models"  # the model packages beside a source checkout
    if _NAME.match(name) and (repo / name / "pyproject.toml").is_file():
        hint = f"; the model package {name} is in the g2gt repository: pip install models/{name}"
    elif _LANGUAGE.match(name) and repo.is_dir():
        found = sorted(p.parent.name for p in repo.glob(f"{name}_*/pyproject.toml"))
        if found:
            hint = f"; this language's model packages are in the g2gt repository: pip install models/{found[0]}"
    raise FileNotFoundError(f"{name}: not a shipped or installed {_SINGULAR[kind]}, a language with one, or a file or "
                            f"folder (shipped and installed {_PLURAL[kind]}: {_listing(kind)}){hint}; give a model's "
                            "name, a model or training folder or a checkpoint file, or install a model package "
                            "(pip install models/NAME)")


def _listing(kind: str) -> str:
    return ", ".join(available_models(kind)) or "none in this installation"


# ---------------------------------------------------------------------------- cards
def model_card(name_or_path: str | os.PathLike, kind: str | None = None) -> dict:
    """The ``model.json`` card of a model folder, with ``kind``, ``language`` and ``license`` always present.

    The folder is found by :func:`find_model` (``kind`` None: a name of any kind). A card that lacks a language gets the
    code its name starts with (``fr_sequoia`` -> ``fr``; None when the name has none), one that lacks a licence
    :data:`UNKNOWN_LICENSE`.

    Args:
        name_or_path: a model's name, a language code or a path.
        kind: the model kind to look for (``None``: any kind).

    Returns:
        The card, as a dict.
    """
    where = _find_any(name_or_path) if kind is None else find_model(name_or_path, kind)
    file = where / "model.json"
    card = json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}
    card["kind"] = folder_kind(where) or card.get("kind")
    if not card.get("language"):
        card["language"] = _language(where)
    if not card.get("license"):
        card["license"] = UNKNOWN_LICENSE
    return card


def _find_any(name_or_path: str | os.PathLike) -> Path:
    errors = []
    for kind in KIND_FILES:
        try:
            return find_model(name_or_path, kind)
        except FileNotFoundError as e:
            errors.append(str(e))
    raise FileNotFoundError(errors[0])


def model_size(name_or_path: str | os.PathLike, kind: str | None = None) -> int:
    """Bytes of a model folder's checkpoint files (``*.pt``)."""
    where = _find_any(name_or_path) if kind is None else find_model(name_or_path, kind)
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
