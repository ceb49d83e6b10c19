"""Casing of multiword-token splits (no torch): the lexicon and the learned expander predict lowercased words,
these give them the casing (and the exact characters) of the surface as written."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["UNKNOWN_CHAR", "apply_case", "lower_chars", "restore_words"]

#: stands for a character the expander does not know, in its decoded words
UNKNOWN_CHAR = "\x00"


def lower_chars(s: str) -> str:
    """``s`` lowercased character by character, keeping its length (a character whose lowercase is
    longer, such as ``İ``, stays as it is)."""
    return "".join(low if len(low := c.lower()) == 1 else c for c in s)


def apply_case(words: Sequence[str], surface: str) -> list[str]:
    """Lowercase ``words`` with the casing pattern of ``surface``: all upper, first letter upper, or as is."""
    if surface.isupper():
        return [w.upper() for w in words]
    if surface[:1].isupper():
        return [words[0][:1].upper() + words[0][1:], *words[1:]]
    return list(words)


def restore_words(surface: str, words: Sequence[str]) -> list[str] | None:
    """Predicted lowercased ``words`` (:data:`UNKNOWN_CHAR` = an unknown character) as words of ``surface``:
    when they concatenate to the lowercased surface (an unknown character matches any character) the surface
    *as written* is cut at their boundaries (``Milas'lı`` -> ``Milas 'lı``); otherwise they get the surface's
    casing pattern (``Du`` -> ``De le``). ``None`` when they hold an unknown character that the surface
    cannot give back, or an empty word or one with outer whitespace.

    >>> restore_words("Milas'lı", ["milas", "'lı"]), restore_words("Du", ["de", "le"]), restore_words("x", ["\\x00y"])
    (['Milas', "'lı"], ['De', 'le'], None)
    """
    if not words or any(not w or w != w.strip() for w in words):
        return None
    joined = "".join(words)
    low = lower_chars(surface)
    if len(joined) == len(surface) and all(a == b or a == UNKNOWN_CHAR for a, b in zip(joined, low)):
        out, pos = [], 0
        for w in words:
            out.append(surface[pos:pos + len(w)])
            pos += len(w)
        return out
    if UNKNOWN_CHAR in joined:
        return None
    return apply_case(words, surface)
