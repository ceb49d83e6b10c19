"""Multiword tokens: a surface token -> its syntactic words (``don't`` -> ``do n't``).

The character model says *which* tokens are multiword tokens (English defaults below; the apostrophe-less
negations and the clitic rules apply only when the lexicon's ``rules`` is ``"en"``), overruled in one direction only: a surface
that was a multiword token in at least 3 of 4 of its training occurrences (``im``, ``thats``, ``gotta``,
``wanna``, ``cannot``; also those seen once: in the dev sets of Turkish IMST, English EWT and GUM, tokens
seen once in training, as a multiword token, were multiword tokens 67 times of 70) and an apostrophe-less
negation (``dont``, ``havent``) is always split (:meth:`MWTLexicon.words`); the model alone decides
ambiguous ones (``its``: 57 of 221 in EWT train, ``lets`` 5 of 7).
:class:`MWTLexicon` says how to split them:

1. a dictionary learned from training data: lowercased surface -> its most frequent split. When the
   words concatenate to the surface (always so in English EWT: ``gonna`` -> ``gon na``, ``cannot`` ->
   ``can not``) the split is applied to the surface as written, so casing is kept exactly (``DON'T`` ->
   ``DO N'T``); otherwise the stored words get the surface's casing pattern;
2. the learned expander (:class:`g2gt.ud.tokenize.expander.MWTExpander`, when the segmenter was trained with
   one) for unseen tokens, in any language and for splits that are not cuts of the surface (``du`` -> ``de le``).
   It also *decides* about the tokens the character model did not mark but gave a multiword score of at
   least :data:`CANDIDATE_SCORE`: in agglutinative languages (Turkish ``kenarındaki`` -> ``kenarında ki``)
   the small character model finds few multiword tokens on its own;
3. English clitic rules for unseen tokens, only when ``rules == "en"`` (English models; segmenters saved
   before this setting existed count as English): ``...n't``, ``...'s``, ``'re``, ``'ll``, ``'ve``, ``'d``,
   ``'m`` (with ``'``, ``’`` or `````), a possessive ``s'``, apostrophe-less ``didnt`` / ``youre`` ... as EWT
   writes them, ``gonna`` / ``wanna`` / ``gotta`` / ``cannot``;
4. otherwise the token stays one word.

Every rule-based split concatenates back to the surface. The lexicon also keeps ``final_tokens``, the
training surfaces that end in sentence-final punctuation (``etc.``, ``mr.``, ``u.s.``): at the end of a
sentence only these keep their final ``.`` / ``!`` / ``?`` (:func:`g2gt.ud.tokenize.spans.split_final_punct`).
In a segmenter checkpoint's ``task`` entry the lexicon is ``mwt`` (the table), ``mwt_always``, ``mwt_rules``,
``mwt_final_tokens`` and ``mwt_expander`` (:meth:`MWTLexicon.checkpoint_entries` /
:meth:`MWTLexicon.from_checkpoint`).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .casing import apply_case
from .chars import FINAL_PUNCT

if TYPE_CHECKING:  # pragma: no cover
    from .expander import MWTExpander

__all__ = ["CANDIDATE_SCORE", "MWTLexicon", "RULES", "split_clitics"]

#: values of :attr:`MWTLexicon.rules`: English clitic rules, or none
RULES = ("en", "none")
#: an unmarked token whose multiword score (the character model's probability share) is at least this goes to
#: the expander's decide mode (Turkish IMST dev, a 10-minute segmenter: multiword tokens found 53 -> 102, 7 wrong
#: splits, Words F1 96.54 -> 97.14)
CANDIDATE_SCORE = 0.05

_AUX = ("do|does|did|is|are|ar|was|were|have|has|had|could|would|should|ca|wo|ai|must|need|might|dare")
_NEGATION = re.compile(rf"(?i)^({_AUX})(nt)\Z")  # apostrophe-less negation: dont, havent, cant
_RULES = [
    re.compile(r"(?i)^(.+?)(n['’`]t)\Z"),
    re.compile(r"(?i)^(.+?)(['’`](?:s|re|ll|ve|d|m))\Z"),
    re.compile(r"(?i)^(.+s)(['’`])\Z"),
    _NEGATION,
    re.compile(r"(?i)^(i|you|we|they)(m|re|ve|ll|d)\Z"),
    re.compile(r"(?i)^(gon|wan|got|out)(na|ta)\Z"),
    re.compile(r"(?i)^(can)(not)\Z"),
    re.compile(r"(?i)^(.{2,}?)(s)\Z"),
]


def split_clitics(surface: str) -> list[str]:
    """The rule-based split of an unseen multiword token (``[surface]`` when no rule applies)."""
    for rule in _RULES:
        m = rule.match(surface)
        if m:
            return [m.group(1), m.group(2)]
    return [surface]


class MWTLexicon:
    """Lowercased surface -> lowercased words, learned from ``(surface, words)`` pairs, and the set
    ``always`` of lowercased surfaces that are split whatever the character model says; ``rules``
    (:data:`RULES`) and an optional learned ``expander`` for surfaces not in the table. ``final_tokens``:
    the lowercased training surfaces of two or more characters that end in sentence-final punctuation
    (:data:`g2gt.ud.tokenize.chars.FINAL_PUNCT`), the only ones that keep it at a sentence end; ``None`` (a
    segmenter saved before they were learned) leaves such tokens as the character model cut them.

    >>> lex = MWTLexicon.learn([("don't", ["do", "n't"]), ("Gonna", ["Gon", "na"])])
    >>> lex.expand("DON'T"), lex.expand("gonna"), lex.expand("Obama's"), lex.expand("xyz")
    (['DO', "N'T"], ['gon', 'na'], ['Obama', "'s"], ['xyz'])
    """

    def __init__(self, table: dict[str, list[str]] | None = None, always: Iterable[str] = (), rules: str = "en",
                 expander: MWTExpander | None = None, final_tokens: Iterable[str] | None = None) -> None:
        if rules not in RULES:
            raise ValueError(f"MWTLexicon rules must be one of {RULES}, got {rules!r}")
        self.table: dict[str, list[str]] = {k: list(v) for k, v in (table or {}).items()}
        self.always: frozenset[str] = frozenset(always)
        self.rules = rules
        self.expander = expander
        self.candidate_score = CANDIDATE_SCORE
        self.final_tokens: frozenset[str] | None = None if final_tokens is None else frozenset(final_tokens)

    @classmethod
    def learn(cls, pairs: Iterable[tuple[str, Sequence[str]]], min_count: int = 1,
              min_share: float = 0.75) -> MWTLexicon:
        """Most frequent split of each lowercased surface (ties: the first seen); ``always``: the surfaces
        seen at least ``min_count`` times that were multiword tokens in at least ``min_share`` of them
        (``pairs`` must then include the one-word tokens too); ``final_tokens``: the surfaces of two or more
        characters that end in sentence-final punctuation."""
        counts: dict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
        seen: Counter[str] = Counter()
        for surface, words in pairs:
            seen[surface.lower()] += 1
            if len(words) > 1:
                counts[surface.lower()][tuple(w.lower() for w in words)] += 1
        always = [s for s, c in counts.items() if seen[s] >= min_count and c.total() >= min_share * seen[s]]
        final = [s for s in seen if len(s) > 1 and s[-1] in FINAL_PUNCT]
        return cls({s: list(c.most_common(1)[0][0]) for s, c in counts.items()}, always, final_tokens=final)

    def words(self, surface: str, predicted_mwt: bool, score: float = 0.0) -> list[str]:
        """The syntactic words of a token the character model did (``predicted_mwt``) or did not mark as
        a multiword token: split when marked, when its lowercased surface is in ``always``, or when it is
        an apostrophe-less negation (``dont``, ``isnt``; English rules only). A token it did not mark but
        scored at least :attr:`candidate_score` (its multiword probability share) and that is not in the
        table goes to the expander's decide mode (when it has one): split if the expander splits it.
        Else the token is one word."""
        if predicted_mwt or surface.lower() in self.always or (self.rules == "en" and _NEGATION.match(surface)):
            return self.expand(surface)
        if self.is_candidate(score) and surface.lower() not in self.table:
            decided = self.expander.decide_many([surface])[0]
            if decided is not None:
                return decided
        return [surface]

    def is_candidate(self, score: float) -> bool:
        """Whether an unmarked token with this multiword score goes to the expander's decide mode."""
        return score >= self.candidate_score and self.expander is not None and self.expander.can_decide

    def prepare(self, surfaces: Iterable[str], candidates: Iterable[str] = ()) -> None:
        """Run the expander once, batched, on the surfaces (to split) and the candidates (to decide) that are
        not in the table; the results are cached, so that the following :meth:`words` calls do not run it
        one token at a time."""
        if self.expander is not None:
            self.expander.expand_many([s for s in surfaces if s.lower() not in self.table])
            self.expander.decide_many([s for s in candidates if s.lower() not in self.table])

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, surface: object) -> bool:
        return isinstance(surface, str) and surface.lower() in self.table

    def expand(self, surface: str) -> list[str]:
        """The syntactic words of ``surface`` (one word when it cannot be split)."""
        words = self.table.get(surface.lower())
        if words is None:
            learned = self.expander.expand(surface) if self.expander is not None else None
            if learned is not None:
                return learned
            return split_clitics(surface) if self.rules == "en" else [surface]
        if "".join(words) == surface.lower() and len(surface.lower()) == len(surface):
            out, pos = [], 0
            for w in words:
                out.append(surface[pos:pos + len(w)])
                pos += len(w)
            return out
        return apply_case(words, surface)

    def to_dict(self) -> dict[str, list[str]]:
        """The split table (checkpoint key ``mwt``; ``always`` is saved beside it as ``mwt_always``)."""
        return {k: list(v) for k, v in self.table.items()}

    @classmethod
    def from_dict(cls, d: dict[str, list[str]], always: Iterable[str] = (), rules: str = "en") -> MWTLexicon:
        return cls(d, always, rules)

    def checkpoint_entries(self) -> dict:
        """The lexicon's entries of a segmenter checkpoint's ``task`` dict (weights_only-safe)."""
        out = {"mwt": self.to_dict(), "mwt_always": sorted(self.always), "mwt_rules": self.rules}
        if self.final_tokens is not None:
            out["mwt_final_tokens"] = sorted(self.final_tokens)
        if self.expander is not None:
            out["mwt_expander"] = self.expander.to_dict()
        return out

    @classmethod
    def from_checkpoint(cls, task: dict, device: str | object = "cpu") -> MWTLexicon:
        """The lexicon of a segmenter checkpoint's ``task`` dict (:meth:`checkpoint_entries`); checkpoints
        without ``mwt_rules`` were English models (rules ``"en"``). The expander runs on ``device``."""
        expander = None
        if task.get("mwt_expander"):
            from .expander import MWTExpander

            expander = MWTExpander.from_dict(task["mwt_expander"], device)
        return cls(task.get("mwt", {}), task.get("mwt_always", ()), task.get("mwt_rules", "en"), expander,
                   task.get("mwt_final_tokens"))
