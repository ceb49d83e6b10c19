"""Text formats of the server: request decoding, UDPipe's input / output formats, sentence surgery.

* :func:`decode_utf8`: bytes -> str, or a :class:`RequestError` naming the first bad byte's offset;
  :func:`check_unicode`: the same for text that holds a lone surrogate (JSON's ``"\\ud800"``);
* readers (``conllu``, ``horizontal``, ``vertical``): text -> :class:`g2gt.ud.io.Sentence` objects, errors with
  the line number;
* writers (``conllu``, ``horizontal``, ``vertical``, ``plaintext``): sentences -> text, as UDPipe writes them
  (CoNLL-U through the library's one writer, :func:`g2gt.ud.io.to_conllu_string`);
* :func:`surface_tokens`, :func:`rebuild`, :func:`merge_sentences`, :func:`limit_lengths`: multiword-token-aware
  splitting and joining of sentences (MISC of every surface token kept, so offsets and spacing survive).

Character offsets and the JSON of ``/v1/parse`` are the library's (:class:`g2gt.ud.document.Document`).

Nothing here touches a model or a file.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..ud.io import (
    CoNLLUError, Sentence, parse_conllu_string, sentence_from_tokens, sentence_from_words, to_conllu_string,
)
from ..ud.io.surface import space_after as _space_after
from ..ud.io.surface import surface_tokens as _walk
from ..ud.limits import SentenceTooLong, limit_sentence_words, max_sentence_words

__all__ = ["RequestError", "decode_utf8", "check_unicode", "READERS", "WRITERS", "read_conllu_text", "read_horizontal",
           "read_vertical", "surface_tokens", "rebuild", "merge_sentences", "limit_lengths"]


class RequestError(ValueError):
    """A mistake in a request: answered with ``status`` (400 unless said otherwise) and ``str(err)`` as the
    plain-text body."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def decode_utf8(data: bytes, what: str) -> str:
    """``data`` as text; :class:`RequestError` naming the byte offset of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(f"{what}: byte {e.start} (0x{data[e.start]:02x}) is not valid UTF-8; send UTF-8 "
                           "text") from None


def check_unicode(text: str, what: str) -> None:
    """:class:`RequestError` naming the first lone surrogate of ``text`` (not a character: no UTF-8 for it)."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise RequestError(f"{what}: character {e.start} is a lone surrogate (U+{ord(text[e.start]):04X}), which "
                           "is not valid Unicode; send well-formed text (in JSON, a \\uD8xx escape must be "
                           "followed by its \\uDCxx partner)") from None


# --------------------------------------------------------------------------- readers
def read_conllu_text(text: str) -> list[Sentence]:
    """CoNLL-U in a request (``data:LINE: what is wrong`` on an error)."""
    try:
        return parse_conllu_string(text, name="data")
    except CoNLLUError as e:
        raise RequestError(f"malformed CoNLL-U: {e}") from None


def _words_sentence(words: list[str], line: int, k: int) -> Sentence:
    try:
        return sentence_from_words(words, sent_id=str(k))
    except ValueError as e:
        raise RequestError(f"data:{line}: {e}") from None


def read_horizontal(text: str) -> list[Sentence]:
    """UDPipe's ``horizontal`` input: one sentence per line, words separated by spaces (blank lines skipped)."""
    out = []
    for line_no, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if words:
            out.append(_words_sentence(words, line_no, len(out) + 1))
    return out


def read_vertical(text: str) -> list[Sentence]:
    """UDPipe's ``vertical`` input: one word per line (its first tab-separated field), a blank line after
    each sentence."""
    out: list[Sentence] = []
    words: list[str] = []
    start = 1
    lines = text.splitlines()
    for line_no, line in enumerate(lines + [""], 1):
        word = line.split("\t", 1)[0].strip()
        if word:
            if not words:
                start = line_no
            words.append(word)
        elif words:
            out.append(_words_sentence(words, start, len(out) + 1))
            words = []
    return out


READERS: dict[str, Callable[[str], list[Sentence]]] = {
    "conllu": read_conllu_text, "horizontal": read_horizontal, "vertical": read_vertical}


# --------------------------------------------------------------------------- writers
def conllu_text(sentences: Sequence[Sentence], header: Sequence[str] = ()) -> str:
    """CoNLL-U text (:func:`g2gt.ud.io.to_conllu_string`); ``header`` lines (``"# generator = ..."``) go before
    the first sentence's comments, as UDPipe writes them."""
    body = to_conllu_string(sentences)
    return "".join(f"{h}\n" for h in header) + body if body else ""


def write_horizontal(sentences: Sequence[Sentence], header: Sequence[str] = ()) -> str:
    """One sentence per line, words separated by a space (a space inside a word becomes U+00A0)."""
    return "".join(" ".join(f.replace(" ", "\u00a0") for f in s.forms) + "\n" for s in sentences)


def write_vertical(sentences: Sequence[Sentence], header: Sequence[str] = ()) -> str:
    """One word per line, a blank line after each sentence."""
    return "".join("".join(f + "\n" for f in s.forms) + "\n" for s in sentences)


def write_plaintext(sentences: Sequence[Sentence], header: Sequence[str] = (), normalized: bool = False) -> str:
    """The text back: with the whitespace MISC records (``SpaceAfter``, ``SpacesAfter``, ``SpacesBefore``), or
    with ``normalized`` one sentence per line and single spaces (UDPipe's ``plaintext=normalized_spaces``)."""
    if normalized:
        lines = []
        for s in sentences:
            parts = []
            for tok, _ in surface_tokens(s):
                parts.append(tok["form"] + (" " if _space_after(tok) else ""))
            lines.append("".join(parts).rstrip(" "))
        return "".join(line + "\n" for line in lines)
    from ..ud.tokenize import text_from_sentences

    text = text_from_sentences(sentences)
    return text if text.endswith("\n") or not text else text + "\n"


WRITERS: dict[str, Callable[..., str]] = {
    "conllu": conllu_text, "horizontal": write_horizontal, "vertical": write_vertical, "plaintext": write_plaintext}


# --------------------------------------------------------------------------- sentence surgery
def surface_tokens(sentence: Sentence) -> list[tuple[dict, list[int]]]:
    """The surface tokens of ``sentence`` in order, each with the 0-based indices of its words: a
    multiword-token line with the words it spans, or a word outside any (empty nodes skipped);
    :func:`g2gt.ud.io.surface.surface_tokens`."""
    rows = sentence.rows
    return [(rows[t.row], t.words) for t in _walk(sentence)]


def rebuild(pieces: Sequence[tuple[Sentence, Sequence[int]]], sent_id: str | None) -> Sentence:
    """One sentence made of the surface tokens ``pieces`` = ``[(sentence, token indices), ...]`` (indices
    into :func:`surface_tokens`), forms and MISC kept; every other column ``_``."""
    items, miscs = [], []
    for sent, which in pieces:
        toks = surface_tokens(sent)
        forms = sent.forms
        for k in which:
            tok, words = toks[k]
            items.append((tok["form"], [forms[i] for i in words], _space_after(tok)))
            miscs.append(tok["misc"])
    out = sentence_from_tokens(items, sent_id=sent_id)
    for (tok, _), misc in zip(surface_tokens(out), miscs):
        tok["misc"] = dict(misc) if isinstance(misc, dict) else misc
    return out


def merge_sentences(sentences: Sequence[Sentence], sent_id: str | None) -> Sentence:
    """The sentences as one (UDPipe's ``presegmented``: a line is one sentence whatever the splitter says)."""
    if len(sentences) == 1:
        return sentences[0]
    return rebuild([(s, range(len(surface_tokens(s)))) for s in sentences], sent_id)


def limit_lengths(sentences: Sequence[Sentence], max_words: int, split: bool, where: str = "") -> list[Sentence]:
    """``sentences`` with none over ``max_words`` words (the shared guard, :mod:`g2gt.ud.limits`, which also
    caps ``max_words`` at its own limit): a longer one is cut into pieces of at most ``max_words`` words
    between surface tokens (``split``; ids ``ID.1``, ``ID.2`` ...), or refused with a :class:`RequestError`
    naming it. ``max_words <= 0``: only the shared limit."""
    shared = max_sentence_words()
    limit = min(m for m in (max_words, shared) if m > 0) if max(max_words, shared) > 0 else 0
    try:
        return limit_sentence_words(sentences, limit, "split" if split else "error", where,
                                    "g2gt serve --max-sentence-words", warn=False)
    except SentenceTooLong as e:
        raise RequestError(str(e)) from None
