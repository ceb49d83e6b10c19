"""A request's work cut into pieces of about ``piece_words`` words, and the pieces' documents joined again.

The batcher (:mod:`g2gt.serve.batching`) gives waiting requests their turns piece by piece, so a large request
no longer holds the workers until it is done, and a client that goes away or runs out of time stops its
request between two pieces.

* raw text: cut after a blank line (a paragraph end) in the second half of a piece or up to twice its length,
  else after a line break, else after a sentence end (``.``, ``!``, ``?`` and a space), else at a space; the
  learned segmenter reads paragraph blocks one by one anyway, so a cut at a blank line changes nothing, and
  the white space at a cut is written as it would have been mid-text; a cut inside a paragraph can end a
  sentence the segmenter would have run on (an abbreviation's full stop, a very long sentence);
* presegmented text: whole lines; sentences (word lists, CoNLL-U): whole sentences;
* a request with coreference is one piece (its entities span the whole document).

:func:`join_pieces` makes one :class:`~g2gt.ud.document.Document` of the pieces' documents: the whole text,
sentence ids counted over the whole request, ``# newdoc`` on the first sentence only, as if it had been one
piece.
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import islice
from typing import Sequence

from ..ud.document import Document
from ..ud.tokenize.spans import line_breaks
from .formats import surface_tokens
from .service import Work

__all__ = ["CHARS_PER_WORD", "split_work", "join_pieces"]

CHARS_PER_WORD = 5  # the estimate Work.size uses for raw text
# where a piece may end, best first: after group 1 and the white space that follows it (no pattern starts
# with a repeat of white space: linear time on any text)
_BLANK_LINE = re.compile(r"(\n[ \t\r\f\v]*\n)")
_LINE_BREAK = re.compile(r"(\n)")
_SENTENCE_END = re.compile(r"[.!?][\"')\]»”’]*(\s+)")
_SPACE = re.compile(r"(\s+)")
_WHITE = re.compile(r"\s*")


def _last(pattern: re.Pattern, text: str, low: int, high: int) -> re.Match | None:
    last = None
    for m in pattern.finditer(text, low, high):
        last = m
    return last


def _ends_sentence(text: str, m: re.Match) -> bool:
    """A full stop (or ! ?) that likely ends a sentence: not after a lone letter (an initial, "W. Graae"),
    and followed by a capital letter or a digit (after any opening quotes or brackets)."""
    before = text[max(0, m.start() - 2):m.start()]
    if len(before) == 2 and before[1].isalpha() and not before[0].isalnum():
        return False
    after = text[m.end(1):m.end(1) + 4].lstrip("\"'“‘«([¿¡")
    return bool(after) and (after[0].isupper() or after[0].isdigit())


def _sentence_end(text: str, low: int, end: int) -> re.Match | None:
    """The last likely sentence end in the last 256 characters of ``text[low:end]`` (a bounded search: linear
    time on any text)."""
    ends = [m for m in _SENTENCE_END.finditer(text, max(low, end - 256), end) if _ends_sentence(text, m)]
    return ends[-1] if ends else None


def _cut(text: str, start: int, end: int) -> int:
    """Where to end the piece that starts at ``start`` and should end near ``end`` (see the module docs): after
    the last blank line (else line break, else sentence end) in the second half of the piece, or the first one
    up to twice its length; else the rest of the text if that is no longer; else after the last space in its
    second half; else at ``end``."""
    low, far = start + (end - start) // 2, min(len(text), end + (end - start))
    found = None
    for pattern in (_BLANK_LINE, _LINE_BREAK):
        found = found or _last(pattern, text, low, end) or pattern.search(text, end, far)
    if found is None:
        found = _sentence_end(text, low, end) or next(
            (m for m in islice(_SENTENCE_END.finditer(text, end, far), 64) if _ends_sentence(text, m)), None)
    if found is None and far == len(text):  # the rest is at most twice a piece: one piece
        return far
    found = found or _last(_SPACE, text, low, end)
    if found is None:
        return end
    return _WHITE.match(text, found.end(1)).end()  # all of the white space (the search may have stopped at end)


def split_text(text: str, piece_chars: int) -> list[str]:
    """``text`` in consecutive pieces of about ``piece_chars`` characters (at most twice that); they join to
    ``text``."""
    pieces, start = [], 0
    while len(text) - start > piece_chars:
        cut = _cut(text, start, start + piece_chars)
        pieces.append(text[start:cut])
        start = cut
    if start < len(text) or not pieces:
        pieces.append(text[start:])
    return pieces


def _groups(items: Sequence, sizes: Sequence[int], limit: int) -> list[list]:
    out: list[list] = [[]]
    size = 0
    for item, n in zip(items, sizes):
        if out[-1] and size + n > limit:
            out.append([])
            size = 0
        out[-1].append(item)
        size += n
    return out


def split_work(work: Work, piece_words: int, coref: bool = False) -> list[Work]:
    """``work`` as pieces of about ``piece_words`` words (0 or ``coref``: one piece)."""
    if piece_words <= 0 or coref or work.size <= piece_words:
        return [work]
    if work.sentences is not None:
        groups = _groups(work.sentences, [len(s) for s in work.sentences], piece_words)
        return [replace(work, sentences=g) for g in groups]
    text = work.text or ""
    if work.presegmented:
        lines = text.splitlines(keepends=True)
        groups = _groups(lines, [max(1, len(line) // CHARS_PER_WORD) for line in lines], piece_words)
        return [replace(work, text="".join(g)) for g in groups]
    return [replace(work, text=t) for t in split_text(text, piece_words * CHARS_PER_WORD)]


def join_pieces(work: Work, docs: Sequence[Document]) -> Document:
    """One document for ``work`` from its pieces' documents (see the module docstring)."""
    if len(docs) == 1:
        return docs[0]
    sentences = [s for doc in docs for s in doc]
    if work.sentences is not None:
        return Document(sentences, None, docs[0].model)
    for s in sentences[1:]:  # one text, one document: only its first sentence opens it
        s.metadata.pop("newdoc", None)
    if not work.presegmented:
        _mend_cuts(docs)
    for k, s in enumerate(sentences, 1):  # ids count over the whole text, as for one piece
        s.metadata["sent_id"] = f"{work.id_prefix}{k}"
    return Document(sentences, "".join(doc.text for doc in docs), docs[0].model)


def _mend_cuts(docs: Sequence[Document]) -> None:
    """What the segmenter wrote at the end and start of a piece as it would have written it mid-text: the
    white space after the last token of a piece (``SpacesAfter=\\s`` is the default one space there, and no
    white space at all is ``SpaceAfter=No``), and ``# newpar`` only after a blank line."""
    before = None  # the white space at the end of the pieces so far, once a sentence was seen
    for doc in docs:
        if len(doc) and before is not None and line_breaks(before) < 2:
            doc[0].metadata.pop("newpar", None)
        if not len(doc):
            continue
        text = doc.text
        trailing = text[len(text.rstrip()):]
        before = trailing
        if doc is docs[-1]:
            continue
        token = surface_tokens(doc[-1])[-1][0]
        misc = token.get("misc")
        if misc is None or isinstance(misc, dict):
            misc = dict(misc or {})
            if misc.get("SpacesAfter") == "\\s":
                del misc["SpacesAfter"]
            elif not trailing:
                misc["SpaceAfter"] = "No"
            token["misc"] = misc or None
