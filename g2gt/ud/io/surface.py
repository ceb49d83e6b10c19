"""The one walk over a sentence's surface tokens, and the character offsets it gives.

A CoNLL-U sentence has three kinds of token lines: a multiword-token range ``2-3`` (the surface form
``don't``), the syntactic words ``2`` / ``3`` it spans (``do``, ``n't``), words outside any range (a surface
token of one word), and empty nodes ``8.1`` (no surface form). Everything that needs the text as written (the
text rebuilt from MISC whitespace, character offsets, splitting a long sentence between tokens, the server's
plain-text output, the spaCy and Stanza bridges, the result objects) walks the lines with :func:`surface_tokens`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

__all__ = ["Surface", "surface_tokens", "space_after", "sentence_spans", "token_spans"]

Span = tuple[int, int]


class Surface(NamedTuple):
    """One surface token of a sentence.

    Attributes:
        row: position in ``sentence.rows`` of its line (the multiword-token range line, or the word's own line).
        words: 0-based word indices of its syntactic words (``[i]`` for a plain word).
        word_rows: positions in ``sentence.rows`` of those words' lines.
    """

    row: int
    words: list[int]
    word_rows: list[int]

    @property
    def is_mwt(self) -> bool:
        """True for a multiword-token range line."""
        return self.row not in self.word_rows


def surface_tokens(sentence: Any) -> list[Surface]:
    """The surface tokens of ``sentence`` in order: each multiword-token range line with the word lines it
    spans (ids ``a..b`` following it), and each word outside any range; empty nodes are skipped.

    Args:
        sentence: a :class:`g2gt.ud.io.Sentence` (its ``rows``; any object with a ``rows`` list of
            ``conllu`` token dicts works).

    Returns:
        One :class:`Surface` per surface token. Linear in the number of lines.
    """
    out: list[Surface] = []
    first, last = 1, 0  # id range of the open multiword token (none yet)
    word = 0
    for k, row in enumerate(sentence.rows):
        tid = row["id"]
        if isinstance(tid, tuple):
            if tid[1] == "-":
                out.append(Surface(k, [], []))
                first, last = tid[0], tid[2]
            continue
        if first <= tid <= last:
            out[-1].words.append(word)
            out[-1].word_rows.append(k)
        else:
            out.append(Surface(k, [word], [k]))
        word += 1
    return out


def space_after(row: dict) -> bool:
    """Whether the surface token of this line is followed by whitespace: False when its MISC says
    ``SpaceAfter=No``, else True."""
    misc = row.get("misc")
    return not (isinstance(misc, dict) and misc.get("SpaceAfter") == "No")


def sentence_spans(sentence: Any, text: str, pos: int = 0) -> tuple[list[Span | None], int]:
    """The span in ``text`` of each line of ``sentence.rows``, found by reading the surface forms left to right
    from ``pos``: each form is looked for from the end of the previous one.

    Args:
        sentence: the sentence (its ``rows``).
        text: the text the sentence was read from (a document's text, or the sentence's own).
        pos: where in ``text`` to start looking.

    Returns:
        ``(spans, end)``: ``spans[k]`` is ``(start_char, end_char)`` of line ``k`` (a word of a multiword token
        gets its token's span; empty nodes and forms not found in the rest of ``text`` get ``None``, never the
        case for the tokenizers' output, whose forms are slices of the text); ``end`` is where the last found
        form ends (``pos`` when none was found).
    """
    rows = sentence.rows
    spans: list[Span | None] = [None] * len(rows)
    for tok in surface_tokens(sentence):
        form = rows[tok.row]["form"]
        at = text.find(form, pos) if form else -1
        if at < 0:
            continue
        span = (at, at + len(form))
        pos = span[1]
        spans[tok.row] = span
        for k in tok.word_rows:
            spans[k] = span
    return spans, pos


def token_spans(sentences: Sequence[Any], text: str) -> list[list[Span | None]]:
    """:func:`sentence_spans` of consecutive sentences over one ``text`` (each sentence searched from where the
    previous one ended). Linear in ``len(text)``."""
    out: list[list[Span | None]] = []
    pos = 0
    for s in sentences:
        spans, pos = sentence_spans(s, text, pos)
        out.append(spans)
    return out
