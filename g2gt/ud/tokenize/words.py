"""A dictionary feature for tokens that contain spaces (Vietnamese words of several syllables: ``chủ tịch``).

Deciding whether a space is inside a word is lexical: which syllables form a word is a matter of the
vocabulary, which a small character model learns slowly (on Vietnamese VTB, a greedy longest match with the
multi-syllable tokens of the training data alone scores 84.9 tokens F1 on dev; splitting at every space,
71.1). So models trained with ``spaces_in_tokens`` get the training data's multi-syllable words
(``SegmenterConfig.space_words``) and one more gap type, :data:`WORD_SPACE`: a single space that a greedy
longest match of the text's whitespace-separated pieces against those words puts inside a word. The
character model reads it like the other gaps (:data:`g2gt.ud.tokenize.chars.GAPS`) and decides; in
training, each word is left out of the dictionary with probability ``space_word_dropout`` per epoch, so the
model also learns to join words the dictionary lacks and to split where a match is wrong.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

import numpy as np

from .chars import GAPS, Compact

__all__ = ["WORD_SPACE", "WordMatcher", "mark_word_spaces", "space_words_of"]

#: the gap id of a single space inside a dictionary word (after the ids of :data:`GAPS`)
WORD_SPACE = len(GAPS)
_PIECE = re.compile(r"\S+")


def space_words_of(tokens: Iterable[str]) -> list[str]:
    """The different lowercased tokens made of pieces joined by single spaces (``"chủ tịch"``), sorted."""
    return sorted({t.lower() for t in tokens if " " in t and t == " ".join(t.split())})


class WordMatcher:
    """Greedy longest match of whitespace-separated pieces against a set of lowercased words of several
    pieces. ``drop(p, rng)`` gives a matcher without each word with probability ``p``."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = frozenset(w.lower() for w in words if " " in w)
        self.longest = max((w.count(" ") + 1 for w in self.words), default=0)

    def __bool__(self) -> bool:
        return bool(self.words)

    def drop(self, p: float, rng: random.Random) -> WordMatcher:
        return WordMatcher(w for w in sorted(self.words) if rng.random() >= p) if p > 0 else self

    def inner_spaces(self, text: str) -> list[int]:
        """Positions of the single spaces of ``text`` that the greedy longest match puts inside a word."""
        pieces = [(m.start(), m.end()) for m in _PIECE.finditer(text)]
        out: list[int] = []
        k, n = 0, len(pieces)
        low = text.lower() if len(text.lower()) == len(text) else None
        while k < n:
            step = 1
            for length in range(min(self.longest, n - k), 1, -1):
                a, b = pieces[k][0], pieces[k + length - 1][1]
                if b - a != sum(e - s for s, e in pieces[k:k + length]) + length - 1:
                    continue  # some gap is not a single character
                span = low[a:b] if low is not None else text[a:b].lower()
                if span in self.words:
                    out.extend(pieces[j][1] for j in range(k, k + length - 1))
                    step = length
                    break
            k += step
        return out


def mark_word_spaces(text: str, compact: Compact, matcher: WordMatcher) -> Compact:
    """``compact`` (:meth:`g2gt.ud.tokenize.chars.CharVocab.compact` of ``text``) with :data:`WORD_SPACE` as the
    gap after the character before, and before the character after, each single space that ``matcher``
    puts inside a word."""
    if not matcher or not len(compact.keep):
        return compact
    spaces = np.array([i for i in matcher.inner_spaces(text) if text[i] == " "], dtype=np.int64)
    if not len(spaces):
        return compact
    left = np.searchsorted(compact.keep, spaces) - 1  # the kept character just before each space
    before, after = compact.before.copy(), compact.after.copy()
    after[left] = WORD_SPACE
    before[left + 1] = WORD_SPACE
    return compact._replace(before=before, after=after)
