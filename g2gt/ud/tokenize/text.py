"""Raw English text: reading it (:func:`read_text`, :func:`iter_lines`) and turning it into
unparsed :class:`~g2gt.ud.io.sentence.Sentence` objects.

Reading goes through :mod:`g2gt.core.files`: a path (``.gz`` decompressed), ``"-"`` (stdin) or a
stream; UTF-8 is checked for the whole input first (``FILE:LINE: not valid UTF-8 ...``), a
byte-order mark is dropped, a directory or a broken ``.gz`` is a one-line
:class:`~g2gt.core.files.InputError`.

Two tokenizers:

* the **rule-based** one of :mod:`g2gt.ud.tokenize.rules` (no model, always available; any
  Unicode, linear time);
* stanza's neural English tokenizer, only when its model is already installed
  locally (nothing is downloaded): :func:`load_stanza_tokenizer`.

Both produce ``list[list[TextToken]]``; :func:`text_to_sentences` (a string) and
:func:`iter_text_sentences` (a file, one paragraph at a time) turn that into sentences with
multiword tokens for contractions, ``# sent_id`` and ``# text``.  ``# text`` is the sentence's
own text with each run of whitespace made one space, so every other character of the input
(invisible ones included, which never become words) is in the output.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, Sequence

from ...errors import Error
from ..io import Sentence, sentence_from_tokens
from ...core.files import InputError, Source, iter_lines, open_input, read_text  # noqa: F401 (re-exported)
from ...core.pieces import PIECE_BYTES, scan_pieces
from ..limits import drop_control_characters
from .rules import TextToken, detokenize, sentence_spans, split_sentences, tokenize, tokenize_sentence

__all__ = [
    "TextToken",
    "read_text",
    "iter_lines",
    "split_sentences",
    "tokenize_sentence",
    "tokenize",
    "detokenize",
    "text_to_sentences",
    "iter_text_sentences",
    "lines_to_sentences",
    "iter_line_sentences",
    "load_stanza_tokenizer",
    "stanza_tokenize",
    "StanzaUnavailable",
]


# --------------------------------------------------------------------------- reading
def _one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) made one space, as ``# text`` holds it."""
    return " ".join(text.split())


def paragraph_blocks(text: str, block_bytes: int = PIECE_BYTES) -> Iterator[str]:
    """``text`` cut into consecutive blocks of about ``block_bytes`` bytes (UTF-8) or more, each cut made right
    after a run of blank lines (a paragraph end), so a document-level segmenter can work one block at a time
    without a sentence crossing a cut. The cuts are those of :func:`g2gt.core.pieces.scan_pieces` on the text's
    bytes, the pieces ``g2gt parse --raw FILE`` reads (one process or workers), so a text gives the same blocks
    in Python and from a file. ``"".join(paragraph_blocks(t)) == t`` always; a text without blank lines is one
    block up to 1 MiB, then cut at a line end."""
    if len(text) * 4 <= max(1, block_bytes // 8):  # so few bytes whatever the characters: one block (as the scan)
        if text:
            yield text
        return
    data = text.encode("utf-8", "surrogatepass")
    for piece in scan_pieces([data], "paragraph", block_bytes, total=len(data)):
        yield data[piece.offset:piece.offset + piece.length].decode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- sentences
def text_to_sentences(text: str, tokenizer: str = "rule", sent_id_prefix: str = "s",
                      pipeline: Any = None) -> list[Sentence]:
    """Raw text -> unparsed :class:`Sentence` objects (with multiword tokens for
    contractions, ``# sent_id = {prefix}{k}`` and ``# text``).

    Args:
        tokenizer: ``"rule"`` (built in), ``"stanza"`` (needs the local English model,
            see :func:`load_stanza_tokenizer`) or ``"auto"`` (stanza if installed, else rules).
        pipeline: an already loaded stanza pipeline (optional).
    """
    nlp = _stanza_for(tokenizer, pipeline)
    return list(_numbered(_text_sentences(text, nlp), sent_id_prefix))


def iter_text_sentences(source: Source, name: str | None = None, *, tokenizer: str = "rule",
                        sent_id_prefix: str = "s", pipeline: Any = None) -> Iterator[Sentence]:
    """Like :func:`text_to_sentences` for a text file, ``"-"`` or stream, read one paragraph at a
    time (a blank line always ends a sentence), so memory is bounded by the longest paragraph.
    The input is opened and checked by this call (see :func:`read_text`)."""
    nlp = _stanza_for(tokenizer, pipeline)
    lines = iter_lines(source, name)

    def paragraphs() -> Iterator[str]:
        para: list[str] = []
        for line in lines:
            if line.strip():
                para.append(line)
            elif para:
                yield "\n".join(para)
                para = []
        if para:
            yield "\n".join(para)

    return _numbered((s for p in paragraphs() for s in _text_sentences(p, nlp)), sent_id_prefix)


def _text_sentences(text: str, nlp: Any) -> Iterator[tuple[str, list[TextToken]]]:
    """``(# text, tokens)`` of each non-empty sentence."""
    text = drop_control_characters(text)
    if nlp is not None:
        for toks in stanza_tokenize(text, nlp):
            if toks:
                yield detokenize(toks), toks
        return
    for a, b in sentence_spans(text):
        toks = tokenize_sentence(text[a:b], a)
        if toks:
            yield _one_line(text[a:b]), toks


def _numbered(sents: Iterator[tuple[str, list[TextToken]]] | Any, prefix: str) -> Iterator[Sentence]:
    for k, (raw, toks) in enumerate(sents, start=1):
        yield _to_sentence(toks, f"{prefix}{k}", raw)


def _stanza_for(tokenizer: str, pipeline: Any) -> Any:
    """The stanza pipeline a ``tokenizer`` choice asks for, or None for the rule tokenizer."""
    if tokenizer not in ("rule", "stanza", "auto"):
        raise ValueError(f"unknown tokenizer {tokenizer!r} (expected 'rule', 'stanza' or 'auto')")
    if tokenizer == "rule":
        return None
    return pipeline or load_stanza_tokenizer(required=tokenizer == "stanza")


def _to_sentence(toks: Sequence[TextToken], sent_id: str, text: str) -> Sentence:
    return sentence_from_tokens([(t.text, t.words, t.space_after) for t in toks], text=text, sent_id=sent_id)


def iter_line_sentences(lines: Iterable[str], name: str = "<lines>", tokenizer: str = "rule",
                        pipeline: Any = None, first_line: int = 1) -> Iterator[Sentence]:
    """Lazy :func:`lines_to_sentences` (pass :func:`iter_lines` of a file to stream it); ``first_line``: the line
    number of the first line (for a piece of a file, :mod:`g2gt.core.pieces`)."""
    nlp = _stanza_for(tokenizer, pipeline)
    for lineno, line in enumerate(lines, start=first_line):
        line = drop_control_characters(line, f"{name}:{lineno}")
        if nlp is not None and line.strip():
            toks = [t for sent in stanza_tokenize(line, nlp) for t in sent]
        else:
            toks = tokenize_sentence(line)
        if not toks:
            raise InputError(name, lineno, "empty line; expected one sentence per line (every line must hold at "
                                           "least one word, so that the output stays aligned line by line)")
        yield _to_sentence(toks, str(lineno), _one_line(line))


def lines_to_sentences(lines: Iterable[str], name: str = "<lines>", tokenizer: str = "rule",
                       pipeline: Any = None) -> list[Sentence]:
    """One sentence per line -> exactly one unparsed :class:`Sentence` per line, in order
    (no sentence splitting inside a line), with ``# sent_id = {line number}`` and ``# text``.

    This is the shape parallel corpora have, so the output stays aligned with the other
    side (e.g. ``g2gt train seq2seq --src-graphs``).

    Raises:
        InputError: ``"NAME:LINE: ..."`` for a line without any word (an empty sentence
            cannot be written as CoNLL-U, and dropping it would break the alignment).
    """
    return list(iter_line_sentences(lines, name, tokenizer, pipeline))


# --------------------------------------------------------------------------- stanza
class StanzaUnavailable(Error, RuntimeError):
    """stanza's English tokenize model is not installed locally."""


def load_stanza_tokenizer(required: bool = False, model_dir: str | None = None, use_gpu: bool = False) -> Any:
    """stanza's English tokenizer (+ multiword expansion when available), loaded only
    from local files (``download_method=None``: nothing is downloaded).

    Args:
        required: raise :class:`StanzaUnavailable` instead of returning None when the
            model is missing.
        model_dir: stanza resources directory (default ``$STANZA_RESOURCES_DIR`` or
            ``~/stanza_resources``).

    Returns:
        a ``stanza.Pipeline`` or None.
    """
    try:
        import stanza
    except ImportError as e:  # pragma: no cover - stanza is a dependency
        if required:
            raise StanzaUnavailable(f"stanza is not installed: {e}") from None
        return None
    d = model_dir or os.environ.get("STANZA_RESOURCES_DIR") or os.path.expanduser("~/stanza_resources")
    last: Exception | None = None
    for processors in ("tokenize,mwt", "tokenize"):
        try:
            return stanza.Pipeline(lang="en", processors=processors, dir=d, download_method=None,
                                   use_gpu=use_gpu, logging_level="WARN")
        except Exception as e:  # stanza raises several types for missing resources
            last = e
    if required:
        raise StanzaUnavailable(
            f"stanza's English tokenize model is not installed in {d} ({type(last).__name__}: {last}). "
            "Install it once with: python -c \"import stanza; stanza.download('en', processors='tokenize,mwt')\""
        )
    return None


def stanza_tokenize(text: str, pipeline: Any) -> list[list[TextToken]]:
    """Tokenize with a loaded stanza pipeline into :class:`TextToken` sentences."""
    doc = pipeline(text)
    out: list[list[TextToken]] = []
    for sent in doc.sentences:
        toks = []
        stoks = list(sent.tokens)
        for i, t in enumerate(stoks):
            start = int(getattr(t, "start_char", 0) or 0)
            end = int(getattr(t, "end_char", start + len(t.text)) or start + len(t.text))
            if i + 1 < len(stoks):
                nxt = int(getattr(stoks[i + 1], "start_char", end) or end)
                space = nxt > end
            else:
                space = True
            toks.append(TextToken(t.text, [w.text for w in t.words], space, start, end))
        out.append(toks)
    return out
