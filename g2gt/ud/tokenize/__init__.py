"""A learned tokenizer, sentence splitter and multiword-token splitter for raw text.

A character-level tagger on the library's own layers: the characters of a window are a linear-chain
graph (edge label = clipped relative distance) read by a :class:`g2gt.nn.GraphEncoder`, which labels each
character as inside a token, token end, sentence end, multiword-token end or multiword-token + sentence end
(as Stanza's tokenizer does). Documents of any length are read in overlapping windows.

* :mod:`.config`: ``SegmenterConfig`` (the model), ``SegmentDataConfig`` (training text rendering);
* :mod:`.chars`: character ids and classes; :mod:`.data`: raw text + labels from CoNLL-U documents;
* :mod:`.model`: ``SegmenterModel``; :mod:`.task`: the Trainer task; :mod:`.train`: ``train_segmenter``
  (``g2gt train segmenter``);
* :mod:`.infer`, :mod:`.spans`: windows -> probabilities -> token / sentence spans (a single space may be inside
  a token for models trained with ``spaces_in_tokens``, e.g. Vietnamese);
* :mod:`.mwt`: ``MWTLexicon`` (learned splits, the learned expander for unseen tokens, English clitic rules
  for English models only); :mod:`.expander`, :mod:`.expander_train`: the multiword-token expander, a
  character encoder-decoder on :class:`g2gt.nn.G2GTransformer`; :mod:`.casing`: casing of predicted words;
* :mod:`.output`: ``build_sentences``, ``text_from_sentences`` (UDPipe's ``SpacesAfter`` whitespace);
* :mod:`.segmenter`: ``Segmenter.load(path).segment(text) -> list[Sentence]``;
* :mod:`.metrics`: tokens / sentences / words F1 by character spans.

Importing this package does not import torch; the torch-based names load on first use.
"""

from ..._lazy import lazy_exports
from typing import TYPE_CHECKING

from .config import LABEL_NAMES, SegmentDataConfig, SegmenterConfig

_LAZY = {
    "Segmenter": "segmenter", "SegmenterModel": "model", "SegmentTask": "task", "train_segmenter": "train",
    "default_train_config": "train", "MWTLexicon": "mwt", "CharVocab": "chars", "text_from_sentences": "output",
    "build_sentences": "output", "escape_spaces": "output", "unescape_spaces": "output",
    "documents_from_sentences": "data", "render_document": "data", "SpanScorer": "metrics",
}

if TYPE_CHECKING:  # pragma: no cover
    from .chars import CharVocab
    from .data import documents_from_sentences, render_document
    from .metrics import SpanScorer
    from .model import SegmenterModel
    from .mwt import MWTLexicon
    from .output import build_sentences, escape_spaces, text_from_sentences, unescape_spaces
    from .segmenter import Segmenter
    from .task import SegmentTask
    from .train import default_train_config, train_segmenter


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "LABEL_NAMES", "CharVocab", "MWTLexicon", "SegmentDataConfig", "SegmentTask", "Segmenter", "SegmenterConfig",
    "SegmenterModel", "SpanScorer", "build_sentences", "default_train_config", "documents_from_sentences",
    "escape_spaces", "render_document", "text_from_sentences", "train_segmenter", "unescape_spaces",
]
