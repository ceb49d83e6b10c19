"""g2gt in spaCy (``pip install "g2gt[spacy]"``): ``nlp = g2gt.spacy.load_pipeline("en_combined")`` is a spaCy
``Language`` whose tokenizer runs the g2gt pipeline; ``g2gt_doc.to_spacy()`` converts one result. See
:mod:`g2gt.ud.spacy`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

_EXPORTS = {"to_spacy": "ud.spacy.convert", "load_pipeline": "ud.spacy.language",
            "from_pipeline": "ud.spacy.language", "G2GTTokenizer": "ud.spacy.language"}

if TYPE_CHECKING:  # pragma: no cover - for type checkers (spaCy is imported on first use)
    from .ud.spacy.convert import to_spacy as to_spacy
    from .ud.spacy.language import G2GTTokenizer as G2GTTokenizer, from_pipeline as from_pipeline
    from .ud.spacy.language import load_pipeline as load_pipeline

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports("g2gt", _EXPORTS, globals())
