"""CoNLL-U files (:mod:`g2gt.ud.io.conllu`), sentences (:mod:`g2gt.ud.io.sentence`), their words and surface
tokens (:mod:`g2gt.ud.io.views`) and the one walk over surface tokens (:mod:`g2gt.ud.io.surface`). Raw text is read
by :mod:`g2gt.ud.tokenize.text`; the file plumbing both share (plain / ``.gz`` / stdin inputs checked for UTF-8 up
front) is :mod:`g2gt.core.files`, atomic outputs :mod:`g2gt.core.output`."""

from .build import sentence_from_tokens, sentence_from_words
from .conllu import CoNLLUError, iter_conllu, parse_conllu_string, read_conllu, to_conllu_string, write_conllu
from .sentence import Sentence, check_tree

__all__ = [
    "CoNLLUError",
    "Sentence",
    "check_tree",
    "iter_conllu",
    "parse_conllu_string",
    "read_conllu",
    "sentence_from_tokens",
    "sentence_from_words",
    "to_conllu_string",
    "write_conllu",
]
