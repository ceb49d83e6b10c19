"""Data shipped inside the package, and where the full data sets are looked for.

* ``ud-en-ewt/``: the first 1,200 training and 300 dev sentences of UD English EWT (CC BY-SA 4.0,
  attribution in ``ud-en-ewt/README.md``), used by ``g2gt demo``, the tests and the examples. They are
  package data, so they are found next to this file after any kind of install.
* Full data sets are never shipped: :func:`shared_data` looks for them under ``$G2GT_DATA``, else under
  ``../shared/data`` or ``./data`` relative to the current folder.

This module imports nothing heavy (no torch).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SAMPLES_DIR", "EWT_SAMPLE_TRAIN", "EWT_SAMPLE_DEV", "EWT_TRAIN", "EWT_DEV", "EWT_ATTRIBUTION",
           "shared_data"]

SAMPLES_DIR = Path(__file__).resolve().parent / "ud-en-ewt"
EWT_SAMPLE_TRAIN = SAMPLES_DIR / "en_ewt-ud-train.sample.conllu"
EWT_SAMPLE_DEV = SAMPLES_DIR / "en_ewt-ud-dev.sample.conllu"

# the full treebank, relative to a data root (see shared_data)
EWT_TRAIN = "ud-en-ewt/en_ewt-ud-train.conllu"
EWT_DEV = "ud-en-ewt/en_ewt-ud-dev.conllu"

EWT_ATTRIBUTION = ("Data: Universal Dependencies English Web Treebank (UD_English-EWT), CC BY-SA 4.0, "
                   "https://github.com/UniversalDependencies/UD_English-EWT")


def shared_data(rel: str) -> Path | None:
    """The first existing ``$G2GT_DATA/rel``, ``../shared/data/rel`` or ``./data/rel`` (relative to the
    current folder), or None. ``rel`` is e.g. :data:`EWT_TRAIN` or ``"multi30k/train.en.gz"``."""
    roots = []
    if os.environ.get("G2GT_DATA"):
        roots.append(Path(os.environ["G2GT_DATA"]))
    roots += [Path.cwd().parent / "shared" / "data", Path.cwd() / "data"]
    for root in roots:
        if (root / rel).exists():
            return root / rel
    return None
