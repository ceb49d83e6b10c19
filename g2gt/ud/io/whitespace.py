r"""Whitespace between surface tokens as MISC records it (UDPipe's convention), and the text it gives back.

* one space after a token: nothing; no space: ``SpaceAfter=No``;
* any other whitespace after it: ``SpacesAfter=...``, escaped (:func:`escape_spaces`);
* whitespace before the first token of a text: ``SpacesBefore=...`` on that token.

:func:`text_from_sentences` rebuilds a text from the FORMs and MISC of its sentences (see
:mod:`g2gt.ud.tokenize.output`, which writes them).
"""

from __future__ import annotations

from collections.abc import Iterable

from .surface import surface_tokens

__all__ = ["escape_spaces", "unescape_spaces", "text_from_sentences"]

_ESC = {" ": "\\s", "\t": "\\t", "\r": "\\r", "\n": "\\n", "|": "\\p", "\\": "\\\\"}
_UNESC = {"s": " ", "t": "\t", "r": "\r", "n": "\n", "p": "|", "\\": "\\"}


def escape_spaces(s: str) -> str:
    """UDPipe's escaping of a whitespace string for ``SpacesAfter`` / ``SpacesBefore`` (see the module)."""
    out = []
    for c in s:
        e = _ESC.get(c)
        if e is None:
            cp = ord(c)
            e = f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"
        out.append(e)
    return "".join(out)


def unescape_spaces(s: str) -> str:
    """Inverse of :func:`escape_spaces` (an unknown escape is kept as written)."""
    if "\\" not in s:
        return s
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        k = s[i + 1]
        if k in _UNESC:
            out.append(_UNESC[k])
            i += 2
        elif k in "uU" and i + 2 + (4 if k == "u" else 8) <= n:
            width = 4 if k == "u" else 8
            digits = s[i + 2:i + 2 + width]
            try:
                out.append(chr(int(digits, 16)))
                i += 2 + width
            except ValueError:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def text_from_sentences(sentences: Iterable) -> str:
    """The text the sentences were segmented from: FORMs joined by the whitespace their MISC records
    (``SpaceAfter=No``, ``SpacesAfter``, ``SpacesBefore``; one space by default, nothing after the very
    last token). ``text_from_sentences(seg.segment(t)) == t`` for every text with a token."""
    parts: list[str] = []
    pending: str | None = None  # default separator owed to the previous token
    for sent in sentences:
        rows = sent.rows
        for surface in surface_tokens(sent):
            tok = rows[surface.row]
            misc = tok["misc"] if isinstance(tok["misc"], dict) else {}
            if pending is not None:
                parts.append(pending)
            before = misc.get("SpacesBefore")
            if before:
                parts.append(unescape_spaces(before))
            parts.append(tok["form"])
            after = misc.get("SpacesAfter")
            if after is not None:
                parts.append(unescape_spaces(after))
                pending = ""
            elif misc.get("SpaceAfter") == "No":
                pending = ""
            else:
                pending = " "
    return "".join(parts)
