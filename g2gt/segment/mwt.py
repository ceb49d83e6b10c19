"""Multiword tokens: a surface token -> its syntactic words (``don't`` -> ``do n't``).

The character model says *which* tokens are multiword tokens; :class:`MWTLexicon` says how to split them:

1. a dictionary learned from training data: lowercased surface -> its most frequent split. When the
   words concatenate to the surface (always so in English EWT: ``gonna`` -> ``gon na``, ``cannot`` ->
   ``can not``) the split is applied to the surface as written, so casing is kept exactly (``DON'T`` ->
   ``DO N'T``); otherwise the stored words get the surface's casing pattern;
2. English clitic rules for unseen tokens: ``...n't``, ``...'s``, ``'re``, ``'ll``, ``'ve``, ``'d``, ``'m``
   (with ``'``, ``’`` or `````), a possessive ``s'``, apostrophe-less ``didnt`` / ``youre`` ... as EWT
   writes them, ``gonna`` / ``wanna`` / ``gotta`` / ``cannot``;
3. otherwise the token stays one word.

Every rule-based split concatenates back to the surface.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

__all__ = ["MWTLexicon", "split_clitics"]

_AUX = ("do|does|did|is|are|ar|was|were|have|has|had|could|would|should|ca|wo|ai|must|need|might|dare")
_RULES = [
    re.compile(r"(?i)^(.+?)(n['’`]t)$"),
    re.compile(r"(?i)^(.+?)(['’`](?:s|re|ll|ve|d|m))$"),
    re.compile(r"(?i)^(.+s)(['’`])$"),
    re.compile(rf"(?i)^({_AUX})(nt)$"),
    re.compile(r"(?i)^(i|you|we|they)(m|re|ve|ll|d)$"),
    re.compile(r"(?i)^(gon|wan|got|out)(na|ta)$"),
    re.compile(r"(?i)^(can)(not)$"),
    re.compile(r"(?i)^(.{2,}?)(s)$"),
]


def split_clitics(surface: str) -> list[str]:
    """The rule-based split of an unseen multiword token (``[surface]`` when no rule applies)."""
    for rule in _RULES:
        m = rule.match(surface)
        if m:
            return [m.group(1), m.group(2)]
    return [surface]


def _apply_case(words: Sequence[str], surface: str) -> list[str]:
    if surface.isupper():
        return [w.upper() for w in words]
    if surface[:1].isupper():
        return [words[0][:1].upper() + words[0][1:], *words[1:]]
    return list(words)


class MWTLexicon:
    """Lowercased surface -> lowercased words, learned from ``(surface, words)`` pairs.

    >>> lex = MWTLexicon.learn([("don't", ["do", "n't"]), ("Gonna", ["Gon", "na"])])
    >>> lex.expand("DON'T"), lex.expand("gonna"), lex.expand("Obama's"), lex.expand("xyz")
    (['DO', "N'T"], ['gon', 'na'], ['Obama', "'s"], ['xyz'])
    """

    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table: dict[str, list[str]] = {k: list(v) for k, v in (table or {}).items()}

    @classmethod
    def learn(cls, pairs: Iterable[tuple[str, Sequence[str]]]) -> MWTLexicon:
        """Most frequent split of each lowercased surface (ties: the first seen)."""
        counts: dict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
        for surface, words in pairs:
            if len(words) > 1:
                counts[surface.lower()][tuple(w.lower() for w in words)] += 1
        return cls({s: list(c.most_common(1)[0][0]) for s, c in counts.items()})

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, surface: object) -> bool:
        return isinstance(surface, str) and surface.lower() in self.table

    def expand(self, surface: str) -> list[str]:
        """The syntactic words of ``surface`` (one word when it cannot be split)."""
        words = self.table.get(surface.lower())
        if words is None:
            return split_clitics(surface)
        if "".join(words) == surface.lower() and len(surface.lower()) == len(surface):
            out, pos = [], 0
            for w in words:
                out.append(surface[pos:pos + len(w)])
                pos += len(w)
            return out
        return _apply_case(words, surface)

    def to_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self.table.items()}

    @classmethod
    def from_dict(cls, d: dict[str, list[str]]) -> MWTLexicon:
        return cls(d)
