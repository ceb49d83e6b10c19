"""Graph-to-graph Transformer dependency parsing (RNGTr-style iterative refinement), one module per idea:

* :mod:`~g2gt.ud.parse.config` — :class:`ParserConfig` and :func:`parser_train_config`, the recipe's defaults
  (torch-free);
* :mod:`~g2gt.ud.parse.vocab` — :class:`ParserVocab` (words, characters, tags, relations, lemma rules);
* :mod:`~g2gt.ud.parse.lemma_rules` — lemmas as edit scripts;
* :mod:`~g2gt.ud.parse.batching` — examples, padded :class:`ParseBatch`, dependency-channel labels;
* :mod:`~g2gt.ud.parse.model` — :class:`ParserModel` (the ``nn.Module``: training loss and ``decode``);
* :mod:`~g2gt.ud.parse.decode` — sentences in, :class:`ParseResult` out (THE inference path);
* :mod:`~g2gt.ud.parse.task` — :class:`ParsingTask` for the Trainer, :func:`attachment_scores`, :func:`tag_accuracies`;
* :mod:`~g2gt.ud.parse.parser` — :class:`Parser`, the user-facing wrapper;
* :mod:`~g2gt.ud.parse.train` — :func:`train_parser` (torch-free until called).

``import g2gt.ud.parse`` is cheap: names load their module on first use (PEP 562).

Example::

    from g2gt.ud.parse import Parser

    nlp = Parser.load("runs/parser")
    for sent in nlp("The cat sat on the mat. It purred."):
        print(sent.serialize())
"""

from ..._lazy import lazy_exports
from typing import TYPE_CHECKING

_EXPORTS = {
    "ParserConfig": "config", "parser_train_config": "config",
    "ParserVocab": "vocab", "sentence_feats": "vocab",
    "ParseBatch": "batching", "make_batch": "batching", "make_example": "batching", "dependency_labels": "batching",
    "corrupt_graph": "batching", "length_batches": "batching",
    "ParserModel": "model", "DecodedBatch": "model",
    "ParseResult": "decode", "SentenceParse": "decode", "Tree": "decode", "decode_sentences": "decode",
    "ParsingTask": "task", "attachment_scores": "task", "tag_accuracies": "task",
    "Parser": "parser", "rule_segmenter": "parser",
    "train_parser": "train",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .batching import (
        ParseBatch, corrupt_graph, dependency_labels, length_batches, make_batch, make_example,
    )
    from .config import ParserConfig, parser_train_config
    from .decode import ParseResult, SentenceParse, Tree, decode_sentences
    from .model import DecodedBatch, ParserModel
    from .parser import Parser, rule_segmenter
    from .task import ParsingTask, attachment_scores, tag_accuracies
    from .train import train_parser
    from .vocab import ParserVocab, sentence_feats

__all__ = [
    "ParserConfig", "parser_train_config", "ParserVocab", "sentence_feats", "ParseBatch", "make_batch", "make_example",
    "dependency_labels", "corrupt_graph", "length_batches", "ParserModel", "DecodedBatch", "ParseResult",
    "SentenceParse", "Tree", "decode_sentences", "ParsingTask", "attachment_scores", "tag_accuracies",
    "Parser", "rule_segmenter", "train_parser",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
