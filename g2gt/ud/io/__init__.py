"""Input/output: CoNLL-U files (:mod:`g2gt.ud.io.conllu`, sentences in :mod:`g2gt.ud.io.sentence`, their words and
surface tokens in :mod:`g2gt.ud.io.views`, the one walk over surface tokens in :mod:`g2gt.ud.io.surface`), raw text
(:mod:`g2gt.ud.tokenize.text`) and the file plumbing both share (:mod:`g2gt.core.files`: plain / ``.gz`` / stdin inputs
checked for UTF-8 up front, atomic outputs)."""

from .conllu import (
    CoNLLUError,
    Sentence,
    check_tree,
    iter_conllu,
    parse_conllu_string,
    read_conllu,
    sentence_from_tokens,
    sentence_from_words,
    to_conllu_string,
    write_conllu,
)
from ...core.files import (
    AtomicOutput, InputError, OutputError, iter_lines, open_input, open_output, read_text, same_file,
)

__all__ = [
    "AtomicOutput",
    "CoNLLUError",
    "InputError",
    "OutputError",
    "Sentence",
    "check_tree",
    "iter_conllu",
    "iter_lines",
    "open_input",
    "open_output",
    "parse_conllu_string",
    "read_conllu",
    "read_text",
    "same_file",
    "sentence_from_tokens",
    "sentence_from_words",
    "to_conllu_string",
    "write_conllu",
]
