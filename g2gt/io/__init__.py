"""Input/output: CoNLL-U files (:mod:`g2gt.io.conllu`) and raw English text (:mod:`g2gt.io.text`)."""

from .conllu import (
    CoNLLUError,
    Sentence,
    check_tree,
    parse_conllu_string,
    read_conllu,
    sentence_from_tokens,
    sentence_from_words,
    to_conllu_string,
    write_conllu,
)

__all__ = [
    "CoNLLUError",
    "Sentence",
    "check_tree",
    "parse_conllu_string",
    "read_conllu",
    "sentence_from_tokens",
    "sentence_from_words",
    "to_conllu_string",
    "write_conllu",
]
