"""Characters -> model inputs: a lowercased-character id and a character class.

Every character gets two integers:

* ``id``: its lowercased form in the training vocabulary (``0`` padding, ``1`` unknown);
* ``class``: one of :data:`CLASSES`, from the Unicode category and case (upper / lower letter, digit,
  sentence-final punctuation, opening / closing punctuation, quote, whitespace, line break, combining mark,
  format character such as the zero-width joiner, control character ...). Unknown characters (CJK, emoji,
  RTL scripts) still get an informative class.

Whitespace is what ``str.isspace`` says; a *line break* is a character ``str.splitlines`` splits at.
*Glue* characters (combining marks, format characters such as U+200B/U+200D, emoji skin-tone modifiers)
never start a token of their own (see :mod:`g2gt.ud.tokenize.output`).

The model reads only the characters that are not whitespace (:func:`CharVocab.compact`): whitespace can
never be inside a token, so it needs no label, and its information moves to two *gap* features of the
neighbouring characters, the whitespace after and before each one (:data:`GAPS`: none, one space, other
spaces, one line break, a blank line or the edge of the text). That is 15-20 % fewer positions on English.

Encoding is vectorised: code points come from one ``str.encode("utf-32-le")`` and the per-character
lookups run once per distinct character.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

__all__ = ["CLASSES", "GAPS", "FINAL_PUNCT", "CharVocab", "Compact", "char_class", "code_points", "gap_types",
           "is_line_break", "PAD_ID", "UNK_ID"]

PAD_ID, UNK_ID = 0, 1
CLASSES = ("pad", "space", "line_break", "upper", "lower", "other_letter", "digit", "number", "open", "close",
           "dash", "final_punct", "quote", "other_punct", "symbol", "mark", "format", "control", "other")
_C = {name: i for i, name in enumerate(CLASSES)}
SPACE, LINE_BREAK, MARK, FORMAT = _C["space"], _C["line_break"], _C["mark"], _C["format"]

#: whitespace between two non-space characters: none, one space, other spaces / tabs, one line break,
#: two or more line breaks (a blank line) or the edge of the text
GAPS = ("none", "space", "spaces", "line_break", "blank_line")
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_BREAK_CPS = np.array(sorted(ord(c) for c in _LINE_BREAKS), dtype="<u4")
_FINAL = frozenset(".!?\u2026\u3002\uff01\uff1f\u061f\u0964\u203c\u2047\u2048\u2049\uff0e")
#: sentence-final punctuation (class ``final_punct``): . ! ? … and their CJK, Arabic and Devanagari forms
FINAL_PUNCT = _FINAL
_QUOTES = frozenset("'\"`\u00b4")
_BY_CATEGORY = {
    "Lu": "upper", "Lt": "upper", "Ll": "lower", "Lo": "other_letter", "Lm": "other_letter",
    "Nd": "digit", "Nl": "number", "No": "number", "Ps": "open", "Pi": "open", "Pe": "close", "Pf": "close",
    "Pd": "dash", "Po": "other_punct", "Pc": "other_punct", "Sm": "symbol", "Sc": "symbol", "Sk": "symbol",
    "So": "symbol", "Mn": "mark", "Mc": "mark", "Me": "mark", "Cf": "format", "Cc": "control",
}


def is_line_break(c: str) -> bool:
    return c in _LINE_BREAKS


def char_class(c: str) -> int:
    """The class id (index into :data:`CLASSES`) of one character."""
    if c.isspace():
        return LINE_BREAK if c in _LINE_BREAKS else SPACE
    if c in _FINAL:
        return _C["final_punct"]
    if c in _QUOTES:
        return _C["quote"]
    if "\U0001f3fb" <= c <= "\U0001f3ff":  # emoji skin-tone modifiers attach to the previous emoji
        return MARK
    return _C[_BY_CATEGORY.get(unicodedata.category(c), "other")]


def _lower(c: str) -> str:
    low = c.lower()
    return low if len(low) == 1 else c


def code_points(text: str) -> np.ndarray:
    """``[len(text)]`` uint32 code points (lone surrogates allowed)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


class CharVocab:
    """Lowercased characters seen at least ``min_count`` times in training get their own id.

    >>> v = CharVocab.build(["abca"], min_count=1)
    >>> ids, cls = v.encode("Ab?")
    >>> ids.tolist()[:2] == [v.stoi["a"], v.stoi["b"]], CLASSES[cls[0]], CLASSES[cls[2]]
    (True, 'upper', 'final_punct')
    """

    def __init__(self, chars: Iterable[str]) -> None:
        self.itos: list[str] = ["<pad>", "<unk>"]
        self.stoi: dict[str, int] = {}
        for c in chars:
            if len(c) != 1:
                raise ValueError(f"a character vocabulary holds single characters, got {c!r}")
            if c not in self.stoi:
                self.stoi[c] = len(self.itos)
                self.itos.append(c)
        self._cache: dict[int, tuple[int, int, bool, bool]] = {}

    @classmethod
    def build(cls, texts: Iterable[str], min_count: int = 2) -> CharVocab:
        """Characters (lowercased) of ``texts`` seen at least ``min_count`` times, most frequent first."""
        counts: Counter[str] = Counter()
        for t in texts:
            counts.update(t)
        low: Counter[str] = Counter()
        for c, n in counts.items():
            low[_lower(c)] += n
        return cls(c for c, n in sorted(low.items(), key=lambda kv: (-kv[1], kv[0])) if n >= min_count)

    def __len__(self) -> int:
        return len(self.itos)

    def to_list(self) -> list[str]:
        return self.itos[2:]

    @classmethod
    def from_list(cls, chars: list[str]) -> CharVocab:
        return cls(chars)

    def _info(self, cp: int) -> tuple[int, int, bool, bool]:
        """``(id, class, is_whitespace, is_glue)`` of one code point."""
        info = self._cache.get(cp)
        if info is None:
            c = chr(cp)
            k = char_class(c)
            info = (self.stoi.get(_lower(c), UNK_ID), k, k in (SPACE, LINE_BREAK), k in (MARK, FORMAT))
            self._cache[cp] = info
        return info

    def lookup(self, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(ids, classes, is_space, is_glue)`` arrays of ``[len(text)]`` (int64, int64, bool, bool)."""
        cps = code_points(text)
        if cps.size == 0:
            e = np.zeros(0, dtype=np.int64)
            return e, e.copy(), np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
        uniq, inv = np.unique(cps, return_inverse=True)
        table = np.array([self._info(int(cp)) for cp in uniq], dtype=np.int64).reshape(-1, 4)
        rows = table[inv]
        return rows[:, 0], rows[:, 1], rows[:, 2].astype(bool), rows[:, 3].astype(bool)

    def encode(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, classes)``: ``[len(text)]`` int64 arrays."""
        ids, cls, _, _ = self.lookup(text)
        return ids, cls

    def compact(self, text: str) -> Compact:
        """The non-space characters of ``text`` with their ids, classes and gap features."""
        ids, cls, is_space, is_glue = self.lookup(text)
        keep = np.flatnonzero(~is_space)
        before, after = gap_types(text, keep)
        return Compact(ids[keep], cls[keep], before, after, keep, is_space, is_glue)


class Compact(NamedTuple):
    """Model inputs over the ``K`` non-space characters of a text of ``n`` characters: ``ids``, ``classes``,
    ``before``, ``after`` (:data:`GAPS` ids) ``[K]`` int64; ``keep [K]`` their positions in the text;
    ``is_space``, ``is_glue`` ``[n]`` bool over the whole text."""

    ids: np.ndarray
    classes: np.ndarray
    before: np.ndarray
    after: np.ndarray
    keep: np.ndarray
    is_space: np.ndarray
    is_glue: np.ndarray


def gap_types(text: str, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(before, after)``: the :data:`GAPS` id of the whitespace before / after each kept character
    (``keep``: sorted positions of the non-space characters; ``\\r\\n`` is one line break)."""
    k = len(keep)
    if k == 0:
        e = np.zeros(0, dtype=np.int64)
        return e, e.copy()
    cps = code_points(text)
    lb = np.isin(cps, _BREAK_CPS)
    if lb.any():
        lb[:-1] &= ~((cps[:-1] == 13) & (cps[1:] == 10))
    cum = np.concatenate([[0], np.cumsum(lb)])
    nxt = np.append(keep[1:], len(text))  # the next kept position (or the end)
    gap_len = nxt - keep - 1
    breaks = cum[nxt] - cum[keep + 1]
    single = np.zeros(k, dtype=bool)
    ones = np.flatnonzero(gap_len == 1)
    single[ones] = cps[keep[ones] + 1] == 32
    after = np.where(gap_len == 0, 0, np.where(breaks >= 2, 4, np.where(breaks == 1, 3, np.where(single, 1, 2))))
    after[-1] = 4  # the end of the text
    before = np.empty(k, dtype=np.int64)
    before[0] = 4  # the start of the text
    before[1:] = after[:-1]
    return before, after.astype(np.int64)
