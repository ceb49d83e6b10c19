"""Data shipped inside the package, and where the full data sets are looked for.

* ``ud-en-ewt/``: the first 1,200 training and 300 dev sentences of UD English EWT (CC BY-SA 4.0,
  attribution in ``ud-en-ewt/README.md``), used by ``g2gt demo``, the tests and the examples. They are
  package data, so they are found next to this file after any kind of install.
* Full data sets are never shipped and never looked for in a fixed place: they are named by arguments, or
  found by :func:`find_data` under ``$G2GT_DATA`` (a folder laid out as the repository's ``data/README.md``
  describes; ``data/prepare.py`` builds one from a UD release).

This module imports nothing heavy (no torch).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SAMPLES_DIR", "EWT_SAMPLE_TRAIN", "EWT_SAMPLE_DEV", "EWT_TRAIN", "EWT_DEV", "EWT_ATTRIBUTION",
           "find_data", "DATA_ENV"]

SAMPLES_DIR = Path(__file__).resolve().parent / "ud-en-ewt"
EWT_SAMPLE_TRAIN = SAMPLES_DIR / "en_ewt-ud-train.sample.conllu"
EWT_SAMPLE_DEV = SAMPLES_DIR / "en_ewt-ud-dev.sample.conllu"

# the full treebank, relative to a data root (see find_data)
EWT_TRAIN = "ud-en-ewt/en_ewt-ud-train.conllu"
EWT_DEV = "ud-en-ewt/en_ewt-ud-dev.conllu"

EWT_ATTRIBUTION = ("Data: Universal Dependencies English Web Treebank (UD_English-EWT), CC BY-SA 4.0, "
                   "https://github.com/UniversalDependencies/UD_English-EWT")


DATA_ENV = "G2GT_DATA"


def find_data(rel: str) -> Path | None:
    """A file of the data folder ``$G2GT_DATA``, when the variable is set and the file exists.

    Args:
        rel: the file's path inside the folder, e.g. :data:`EWT_TRAIN` or ``"multi30k/train.en.gz"``.

    Returns:
        ``$G2GT_DATA/rel``, or ``None``.
    """
    root = os.environ.get(DATA_ENV)
    if root and (Path(root) / rel).exists():
        return Path(root) / rel
    return None
