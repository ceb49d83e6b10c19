"""g2gt inside spaCy: a parsed :class:`~g2gt.ud.document.Document` as a ``spacy.tokens.Doc``
(:func:`~g2gt.ud.spacy.convert.to_spacy`, ``doc.to_spacy()``), and a spaCy ``Language`` whose tokenizer runs a
g2gt pipeline (:func:`~g2gt.ud.spacy.language.load_pipeline`, the spacy-stanza pattern)::

    import g2gt.spacy
    nlp = g2gt.spacy.load_pipeline("en_combined")      # pip install "g2gt[spacy]"
    doc = nlp("I don't know. She left.")                # a spacy.tokens.Doc
    [(t.text, t.lemma_, t.pos_, t.dep_, t.head.i) for t in doc]

spaCy is imported only when one of these is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS = {"to_spacy": "convert", "load_pipeline": "language", "from_pipeline": "language",
            "G2GTTokenizer": "language"}

if TYPE_CHECKING:  # pragma: no cover - for type checkers (spaCy is imported on first use)
    from .convert import to_spacy as to_spacy
    from .language import G2GTTokenizer as G2GTTokenizer, from_pipeline as from_pipeline
    from .language import load_pipeline as load_pipeline

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
