"""Tokens / sentences / words F1 by character spans, as the CoNLL 2018 scorer compares segmentations.

Gold and predicted segmentations of the same text are compared by spans (``(start, end)`` character offsets,
end exclusive): a token is correct when a gold token has the same span, a sentence when a gold sentence has
the same first and last character. Words: inside two tokens with the same span, the longest common
subsequence of their (lowercased) syntactic words counts as correct, which is what the official scorer does
for multiword tokens. Counts add up over documents (:class:`SpanScorer`); F1 values are percentages.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SpanScorer", "f1_percent"]

Token = tuple[int, int, Sequence[str]]


def f1_percent(correct: int, predicted: int, gold: int) -> float:
    """``100 * 2PR / (P + R)``; 100 when both sides are empty."""
    if predicted == 0 and gold == 0:
        return 100.0
    if correct == 0:
        return 0.0
    p, r = correct / predicted, correct / gold
    return 100.0 * 2 * p * r / (p + r)


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    if len(a) == 1 and len(b) == 1:
        return int(a[0] == b[0])
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


class SpanScorer:
    """Accumulates span matches over documents; :meth:`scores` gives the F1 values."""

    def __init__(self) -> None:
        self.counts = {k: [0, 0, 0] for k in ("tokens", "sentences", "words")}  # correct, predicted, gold

    def add(self, gold_tokens: Sequence[Token], gold_sentences: Sequence[tuple[int, int]],
            pred_tokens: Sequence[Token], pred_sentences: Sequence[tuple[int, int]]) -> None:
        """One document: tokens as ``(start, end, words)``, sentences as ``(start, end)``."""
        gold = {(s, e): w for s, e, w in gold_tokens}
        c = self.counts
        tok_ok = words_ok = 0
        for s, e, w in pred_tokens:
            g = gold.get((s, e))
            if g is not None:
                tok_ok += 1
                words_ok += _lcs([x.lower() for x in w], [x.lower() for x in g])
        c["tokens"][0] += tok_ok
        c["tokens"][1] += len(pred_tokens)
        c["tokens"][2] += len(gold_tokens)
        c["words"][0] += words_ok
        c["words"][1] += sum(len(w) for _, _, w in pred_tokens)
        c["words"][2] += sum(len(w) for _, _, w in gold_tokens)
        gs = set(map(tuple, gold_sentences))
        c["sentences"][0] += sum(1 for x in pred_sentences if tuple(x) in gs)
        c["sentences"][1] += len(pred_sentences)
        c["sentences"][2] += len(gold_sentences)

    def scores(self) -> dict[str, float]:
        """``tokens_f1``, ``sentences_f1``, ``words_f1`` (percent) and ``score`` = their sum."""
        out = {f"{k}_f1": f1_percent(*v) for k, v in self.counts.items()}
        out["score"] = out["tokens_f1"] + out["sentences_f1"] + out["words_f1"]
        return out
