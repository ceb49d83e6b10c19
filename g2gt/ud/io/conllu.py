"""Reading, validating and writing CoNLL-U files, one sentence at a time.

* **Streaming**: :func:`iter_conllu` yields :class:`~g2gt.ud.io.sentence.Sentence` objects
  while it reads, so memory does not grow with the file; :func:`read_conllu` is
  ``list(iter_conllu(...))`` and :func:`parse_conllu_string` runs the same parser on a
  string.  Inputs are paths (``.gz`` decompressed), ``"-"`` (stdin) or open streams, opened
  and checked by :mod:`g2gt.core.files`: a directory, a ``.gz`` name that is not gzip, or
  bytes that are not UTF-8 fail at the call, before any sentence is parsed.  A UTF-8
  byte-order mark is dropped; an empty file (or one with only blank lines) has no sentences.
* **Validation** with messages ``FILE:LINE: what is wrong (expected ...)``
  (:class:`CoNLLUError`): wrong column count, bad or out-of-order ids, non-integer or
  out-of-range HEAD, a comment block without words, raw text given instead of CoNLL-U.
* **Byte-identical round trip**: :func:`write_conllu` re-emits each line verbatim unless a
  parsed value on it was changed (see :mod:`g2gt.ud.io.sentence`); output to a path is
  atomic (temporary file + rename).

Example::

    with open_output("pred.conllu") as out:
        write_conllu((s.with_parse(*predict(s)) for s in iter_conllu("in.conllu.gz")), out)
"""

from __future__ import annotations

import io
import os
import re
from typing import IO, Iterable, Iterator

from conllu.models import Metadata, TokenList

from ...core.files import InputError, Source, open_input
from ...core.output import open_output
from .sentence import FIELDS, Sentence, comment_pairs, parse_columns

__all__ = [
    "CoNLLUError",
    "iter_conllu",
    "read_conllu",
    "parse_conllu_string",
    "write_conllu",
    "to_conllu_string",
]

_INT_RE = re.compile(r"[1-9][0-9]*\Z")
_RANGE_RE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)\Z")
_EMPTY_RE = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)\Z")
_HEAD_RE = re.compile(r"(0|[1-9][0-9]*)\Z")
_COLUMNS = "(ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC)"


class CoNLLUError(InputError):
    """Malformed CoNLL-U input.

    ``str(err)`` is ``"FILE:LINE: what is wrong (expected ...)"`` (``"FILE: ..."`` for problems of the whole file, such
    as a directory or broken gzip).

    Args:
        path: the file name.
        line: the 1-based line number (0: the whole file).
        message: what is wrong.
    """


# --------------------------------------------------------------------------- reading
def iter_conllu(source: Source, *, name: str | None = None, require_heads: bool = False) -> Iterator[Sentence]:
    """Read and validate a CoNLL-U file one sentence at a time.

    The input is opened and checked by this call (so a missing file, a directory, a broken
    ``.gz`` or bytes that are not UTF-8 fail here, before any work); the sentences are then
    parsed as the iterator is consumed.  Each sentence is yielded as soon as the next one
    starts, so memory holds one sentence at a time.

    Args:
        source: a path (``.gz`` is decompressed), ``"-"`` for stdin, or an open text / binary stream.
        name: file name used in messages (default: the path, ``<stdin>`` or the stream's ``name``).
        require_heads: reject ``_`` in the HEAD column of syntactic words.

    Yields:
        The sentences, in order.

    Raises:
        CoNLLUError: ``"FILE:LINE: ..."`` for the first problem found (see the module docstring).
        FileNotFoundError: if the path does not exist.
    """
    inp = open_input(source, name, error=CoNLLUError, kind="CoNLL-U")
    return _sentences(inp.lines(), inp.name, require_heads)


def read_conllu(source: Source, *, name: str | None = None, require_heads: bool = False) -> list[Sentence]:
    """All sentences of a CoNLL-U file (see :func:`iter_conllu`).

    :func:`write_conllu` of them reproduces the file (a byte-order mark dropped, a final blank line added if missing).

    Args:
        source: a path (``.gz`` is decompressed), ``"-"`` for stdin, or an open stream.
        name: file name used in messages (``None``: the path, ``<stdin>`` or the stream's ``name``).
        require_heads: reject ``_`` in the HEAD column of syntactic words.

    Returns:
        The sentences.

    Raises:
        CoNLLUError: ``"FILE:LINE: ..."`` for the first problem found.
        FileNotFoundError: the path does not exist.
    """
    return list(iter_conllu(source, name=name, require_heads=require_heads))


def parse_conllu_string(text: str, name: str = "<string>", *, require_heads: bool = False, first_line: int = 1
                        ) -> list[Sentence]:
    """Like :func:`read_conllu` for CoNLL-U text held in a string.

    Args:
        text: the CoNLL-U text.
        name: the name used in messages.
        require_heads: reject ``_`` in the HEAD column of syntactic words.
        first_line: the line number of the text's first line in the file it comes from (a piece of a file,
            :mod:`g2gt.core.pieces`), for messages; a text that does not start the file (``first_line > 1``) is
            not checked as a file's start is.

    Returns:
        The sentences.

    Raises:
        CoNLLUError: ``"NAME:LINE: ..."`` for the first problem found.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    return list(_sentences(iter(lines), name, require_heads, first_line))


def _sentences(lines: Iterable[str], label: str, require_heads: bool, first_line: int = 1) -> Iterator[Sentence]:
    """Group lines into sentences; blank lines after a sentence are kept as its trailer.
    Blank lines before the first sentence are dropped."""
    pending: Sentence | None = None
    block: list[str] = []
    start = 0
    first = first_line == 1
    lineno = 0
    for lineno, line in enumerate(lines, first_line):
        if line.strip():
            if not block:
                if pending is not None:
                    yield pending
                    pending = None
                start = lineno
            block.append(line)
        elif block:
            pending = _parse_block(block, start, label, require_heads, first)
            pending._trailer = [line]
            block, first = [], False
        elif pending is not None and pending._trailer is not None:
            pending._trailer.append(line)
    if block:
        if pending is not None:
            yield pending
        pending = _parse_block(block, start, label, require_heads, first)
        pending._trailer = []
    if pending is not None:
        yield pending


def _not_conllu(line: str) -> str:
    """Why a line without tabs is not a token line, with the fix."""
    if len(line.split()) == 10 and _INT_RE.match(line.split()[0]):
        return "columns are separated by spaces, expected 10 tab-separated columns " + _COLUMNS
    return "this looks like plain text, not CoNLL-U; use --raw (or --text) to tokenize it"


def _parse_block(block: list[str], first_line: int, label: str, require_heads: bool, first: bool) -> Sentence:
    comments: list[str] = []
    token_lines: list[str] = []
    line_nos: list[int] = []
    tokens = []
    n_words = 0
    last_empty = (0, 0)  # (word id, sub id) of the last empty node
    pending_range_end = 0
    head_checks: list[tuple[int, int]] = []
    for off, raw in enumerate(block):
        ln = first_line + off
        line = raw[:-1] if raw.endswith("\r") else raw
        if line.startswith("#"):
            if token_lines:
                raise CoNLLUError(label, ln, "comment line inside a sentence (expected comments only before "
                                             "the first token line)")
            comments.append(raw)
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            if len(cols) == 1 and first and not token_lines:
                raise CoNLLUError(label, ln, f"found a line without tabs: {_not_conllu(line)}")
            raise CoNLLUError(label, ln, f"found {len(cols)} tab-separated column(s), expected 10 {_COLUMNS}")
        for c, val in enumerate(cols):
            if val == "" or val != val.strip():
                raise CoNLLUError(label, ln, f"column {c + 1} ({FIELDS[c].upper()}) is empty or has leading/"
                                             "trailing whitespace (expected a value or '_')")
        tid = cols[0]
        if _INT_RE.match(tid):
            k = int(tid)
            if k != n_words + 1:
                raise CoNLLUError(label, ln, f"word id {k} out of order (expected {n_words + 1})")
            n_words = k
            head = cols[6]
            if head == "_":
                if require_heads:
                    raise CoNLLUError(label, ln, "HEAD is '_' (expected an integer head, 0 for the root)")
            elif not _HEAD_RE.match(head):
                raise CoNLLUError(label, ln, f"HEAD {head!r} is not an integer (expected 0..n or '_')")
            else:
                head_checks.append((ln, int(head)))
        elif m := _RANGE_RE.match(tid):
            a, b = int(m.group(1)), int(m.group(2))
            if a != n_words + 1 or b <= a:
                raise CoNLLUError(label, ln, f"multiword token range {tid} out of order (expected "
                                             f"{n_words + 1}-M with M > {n_words + 1})")
            pending_range_end = max(pending_range_end, b)
        elif m := _EMPTY_RE.match(tid):
            a, b = int(m.group(1)), int(m.group(2))
            expected_sub = last_empty[1] + 1 if last_empty[0] == a else 1
            if a != n_words or b != expected_sub:
                raise CoNLLUError(label, ln, f"empty node {tid} out of order (expected "
                                             f"{n_words}.{expected_sub if a == n_words else 1})")
            last_empty = (a, b)
        else:
            raise CoNLLUError(label, ln, f"ID {tid!r} is not an integer, a range N-M or an empty node N.M")
        try:
            tokens.append(parse_columns(cols))
        except ValueError as e:
            raise CoNLLUError(label, ln, str(e)) from None
        token_lines.append(raw)
        line_nos.append(ln)
    if not token_lines:
        raise CoNLLUError(label, first_line, "empty sentence: comment lines not followed by any token line")
    if n_words == 0:
        raise CoNLLUError(label, first_line, "sentence has no syntactic words (expected word ids 1, 2, ...)")
    if pending_range_end > n_words:
        raise CoNLLUError(label, first_line, f"a multiword token ends at word {pending_range_end} but the "
                                             f"sentence has {n_words} words")
    for ln, head in head_checks:
        if head > n_words:
            raise CoNLLUError(label, ln, f"HEAD {head} is out of range (expected 0..{n_words})")
    meta = Metadata()
    for c in comments:
        for key, value in comment_pairs(c):
            meta[key] = value
    word_idx = [k for k, t in enumerate(tokens) if isinstance(t["id"], int)]
    return Sentence(TokenList(tokens, meta, default_fields=FIELDS), label, first_line, token_lines, comments,
                    line_nos, None, word_idx)


# --------------------------------------------------------------------------- writing
def write_conllu(sentences: Iterable[Sentence], dest: str | os.PathLike[str] | IO[str]) -> None:
    """Write sentences as CoNLL-U (UTF-8), consuming ``sentences`` one at a time.

    ``dest`` is a path (written atomically: temporary file + rename, nothing left behind on
    failure), ``"-"`` for stdout, or an open text stream.  Sentences read by
    :func:`read_conllu` are reproduced byte for byte except for the values that were changed
    (e.g. by :meth:`Sentence.with_parse`).

    Args:
        sentences: the sentences, any iterable.
        dest: a path, ``"-"`` for stdout, or an open text stream.
    """
    if isinstance(dest, (str, os.PathLike)):
        with open_output(dest) as f:
            _write(sentences, f)
    else:
        _write(sentences, dest)


def _write(sentences: Iterable[Sentence], f: IO[str]) -> None:
    for s in sentences:
        f.write(s.serialize())


def to_conllu_string(sentences: Iterable[Sentence]) -> str:
    """The CoNLL-U text :func:`write_conllu` would write.

    Args:
        sentences: the sentences.

    Returns:
        The CoNLL-U text.
    """
    buf = io.StringIO()
    _write(sentences, buf)
    return buf.getvalue()
