"""Multiword tokens: a surface token -> its syntactic words (``don't`` -> ``do n't``).

The character model says *which* tokens are multiword tokens, overruled in one direction only: a surface
that was a multiword token in at least 3 of 4 of its training occurrences (seen twice or more: ``im``,
``thats``, ``gotta``, ``wanna``, ``cannot``) and an apostrophe-less negation (``dont``, ``havent``) is
always split (:meth:`MWTLexicon.words`); the model alone decides ambiguous ones (``its``: 57 of 221 in EWT
train, ``lets`` 5 of 7).
:class:`MWTLexicon` says how to split them:

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
_NEGATION = re.compile(rf"(?i)^({_AUX})(nt)$")  # apostrophe-less negation: dont, havent, cant
_RULES = [
    re.compile(r"(?i)^(.+?)(n['’`]t)$"),
    re.compile(r"(?i)^(.+?)(['’`](?:s|re|ll|ve|d|m))$"),
    re.compile(r"(?i)^(.+s)(['’`])$"),
    _NEGATION,
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
    """Lowercased surface -> lowercased words, learned from ``(surface, words)`` pairs, and the set
    ``always`` of lowercased surfaces that are split whatever the character model says.

    >>> lex = MWTLexicon.learn([("don't", ["do", "n't"]), ("Gonna", ["Gon", "na"])])
    >>> lex.expand("DON'T"), lex.expand("gonna"), lex.expand("Obama's"), lex.expand("xyz")
    (['DO', "N'T"], ['gon', 'na'], ['Obama', "'s"], ['xyz'])
    """

    def __init__(self, table: dict[str, list[str]] | None = None, always: Iterable[str] = ()) -> None:
        self.table: dict[str, list[str]] = {k: list(v) for k, v in (table or {}).items()}
        self.always: frozenset[str] = frozenset(always)

    @classmethod
    def learn(cls, pairs: Iterable[tuple[str, Sequence[str]]], min_count: int = 2,
              min_share: float = 0.75) -> MWTLexicon:
        """Most frequent split of each lowercased surface (ties: the first seen); ``always``: the surfaces
        seen at least ``min_count`` times that were multiword tokens in at least ``min_share`` of them
        (``pairs`` must then include the one-word tokens too)."""
        counts: dict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
        seen: Counter[str] = Counter()
        for surface, words in pairs:
            seen[surface.lower()] += 1
            if len(words) > 1:
                counts[surface.lower()][tuple(w.lower() for w in words)] += 1
        always = [s for s, c in counts.items() if seen[s] >= min_count and c.total() >= min_share * seen[s]]
        return cls({s: list(c.most_common(1)[0][0]) for s, c in counts.items()}, always)

    def words(self, surface: str, predicted_mwt: bool) -> list[str]:
        """The syntactic words of a token the character model did (``predicted_mwt``) or did not mark as
        a multiword token: split when marked, when its lowercased surface is in ``always``, or when it is
        an apostrophe-less negation (``dont``, ``isnt``); else the token is one word."""
        if predicted_mwt or surface.lower() in self.always or _NEGATION.match(surface):
            return self.expand(surface)
        return [surface]

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
        """The split table (checkpoint key ``mwt``; ``always`` is saved beside it as ``mwt_always``)."""
        return {k: list(v) for k, v in self.table.items()}

    @classmethod
    def from_dict(cls, d: dict[str, list[str]], always: Iterable[str] = ()) -> MWTLexicon:
        return cls(d, always)
