"""Training on several treebanks: each data file's treebank name, and the treebank index of each sentence.

A parser trained on several treebanks (``g2gt train parser --train A B``) learns one vector per treebank
(``ParserConfig.treebanks``, :class:`g2gt.ud.parse.ParserModel`); each training sentence gets its file's
treebank, and at parse time the first treebank is the default (``Parser.treebank`` chooses another).

Names: ``NAME=FILE`` names a file's treebank; otherwise a UD file name ``xx_name-ud-split.conllu[.gz]`` gives
``xx_name`` (``en_gum-ud-train.conllu.gz`` -> ``en_gum``), any other file its name without ``.conllu`` /
``.gz``, with ``-`` turned into ``_``. Files of one name are one treebank. Torch-free.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

_log = logging.getLogger("g2gt")

__all__ = ["treebank_name", "named_file", "read_named_files", "as_named_sets", "treebank_list", "treebank_index"]

_UD_FILE = re.compile(r"^(?P<name>[A-Za-z]{2,3}_[A-Za-z0-9]+)-ud-[A-Za-z]+")
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


def treebank_name(path: str | os.PathLike) -> str:
    """The treebank name of a data file (see the module docstring)."""
    base = Path(path).name
    m = _UD_FILE.match(base)
    if m:
        return m.group("name")
    return re.sub(r"(\.conllu)?(\.gz)?$", "", base).replace("-", "_") or "treebank"


def named_file(value: str, flag: str = "--train") -> tuple[str, str]:
    """``"NAME=FILE"`` -> ``(NAME, FILE)``; ``"FILE"`` -> ``(treebank_name(FILE), FILE)``. A value that is an
    existing file is a file even when it contains ``=``. ``ValueError`` for an empty or malformed name."""
    if "=" in value and not os.path.exists(value):
        name, path = value.split("=", 1)
        if not _NAME.match(name):
            raise ValueError(f"{flag} {value}: the treebank name {name!r} must be letters, digits, '_', '-', '.' or '+' "
                             "(NAME=FILE, e.g. en_gum=gum-train.conllu)")
        if not path:
            raise ValueError(f"{flag} {value}: no file after '=' (expected NAME=FILE)")
        return name, path
    return treebank_name(value), value


def read_named_files(values: Sequence[str], flag: str = "--train", quiet: bool = False) -> dict[str, list]:
    """``{treebank name: sentences}`` of ``[NAME=]FILE`` values (:func:`named_file`; files of one name are
    concatenated, in order), read with a HEAD required for every word; one line per file on stderr unless
    ``quiet``.
    ``ValueError`` naming ``flag`` for a missing file or a bad name."""
    from ..io.conllu import read_conllu

    named = [named_file(str(v), flag) for v in values]
    for _, path in named:
        if not os.path.isfile(path):
            raise ValueError(f"{flag} {path}: {'is a directory, expected a file' if os.path.isdir(path) else 'no such file'}")
    sets: dict[str, list] = {}
    for name, path in named:
        sents = read_conllu(path, require_heads=True)
        if not quiet:
            _log.info("%s: %s: %s (%d sentences)", flag.lstrip("-"), name, path, len(sents))
        sets.setdefault(name, []).extend(sents)
    return sets


def as_named_sets(data: Sequence | Mapping[str, Sequence]) -> list[tuple[str | None, list]]:
    """``{name: sentences}`` (several treebanks, in order) -> ``[(name, sentences), ...]``; a plain sequence of
    sentences (one treebank) -> ``[(None, sentences)]``."""
    if isinstance(data, Mapping):
        return [(str(name), list(sents)) for name, sents in data.items()]
    return [(None, list(data))]


def treebank_list(train_names: Sequence[str | None], source: Sequence[str] = (), embedding: bool = True) -> list[str]:
    """``ParserConfig.treebanks`` for training sets named ``train_names`` (in order, repeats allowed): their
    distinct names when there are at least two and ``embedding`` is on, else ``[]`` (no treebank vectors).
    A warm start from a model with treebanks ``source`` keeps them first (their rows keep their meaning)."""
    names = list(dict.fromkeys(n for n in train_names if n is not None))
    if source:
        if not embedding:
            raise ValueError(f"the warm-start model has treebank vectors ({', '.join(source)}); they cannot be "
                             "dropped (train with the treebank embedding, or start from scratch)")
        return list(source) + [n for n in names if n not in source]
    return names if embedding and len(names) >= 2 else []


def treebank_index(treebanks: Sequence[str], name: str | None) -> int:
    """The index of ``name`` in ``treebanks``; 0 (the default treebank) for a model without treebank vectors,
    an unnamed set, or a name that is not among them (e.g. a dev set of another treebank)."""
    return treebanks.index(name) if name in treebanks else 0
