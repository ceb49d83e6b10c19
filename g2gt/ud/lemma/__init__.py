"""Character-level lemmatization: a small encoder-decoder that writes a word's lemma from its characters, UPOS
and features, for the words whose lemma the parser's edit scripts are unsure of.

* :mod:`~g2gt.ud.lemma.config` — :class:`LemmaConfig`, :func:`needs_fallback` (when the parser asks it);
* :mod:`~g2gt.ud.lemma.model` — :class:`CharLemmatizer` (inference, the ``lemmatizer.pt`` stage file),
  :class:`LemmaVocab`;
* :mod:`~g2gt.ud.lemma.train` — :func:`train_lemmatizer` (``g2gt train lemmatizer``).

A model folder with ``lemmatizer.pt`` beside ``parser.pt`` makes :class:`g2gt.ud.parse.Parser` use it. Names
load on first use (no torch at import).
"""

from ..._lazy import lazy_exports

__all__ = ["CharLemmatizer", "LemmaConfig", "LemmaVocab", "LEMMATIZER_FILE", "USE_WHEN", "needs_fallback",
           "train_lemmatizer"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "CharLemmatizer": "model", "LemmaVocab": "model", "LEMMATIZER_FILE": "model", "LemmaConfig": "config",
    "USE_WHEN": "config", "needs_fallback": "config", "train_lemmatizer": "train"}, globals())
