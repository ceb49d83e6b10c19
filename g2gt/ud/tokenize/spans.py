"""Per-character decisions -> token and sentence spans (numpy; no torch).

Given, for every character of a text, whether the model ends a token, a sentence or a multiword token
there, :func:`decode_spans` returns the tokens as character spans and the sentences as token ranges.
Hard rules make the result well formed whatever the model says:

* whitespace (``str.isspace``) always ends a token, except a *joinable* space (``joinable[i]``, given only by
  models trained with ``spaces_in_tokens``: one ``" "`` between two non-space characters) after a character
  the model did not mark as a token end: that space is inside the token (Vietnamese ``chủ tịch``);
* no token starts with a *glue* character (combining mark, format character such as U+200B / U+200D,
  emoji skin-tone modifier) or right after a zero-width joiner: such a split is dropped, so emoji
  sequences and combining accents stay whole;
* a token made only of glue characters is joined to the next token of its whitespace-free run; when it is
  alone between whitespace it is not a token at all (its characters are kept as whitespace-like
  separators, see :mod:`g2gt.ud.tokenize.output`);
* a blank line (two or more line breaks between tokens) always ends a sentence, and so does the text's end;
* a sentence longer than ``max_sentence_tokens`` is cut where the model's sentence-end score is highest;
* (:func:`attach_final_punct`) a sentence made only of sentence-final punctuation (``!``, ``?!``, ``...``) is
  the end of the sentence before it on the same line when that one has none: French writes ``Merci !`` with a
  space, which a model trained on text with few exclamations takes for two sentences;
* (:func:`split_final_punct`, given the training data's ``final_tokens``) a sentence's last token that ends
  in sentence-final punctuation after a letter or digit (``Hi.``, ``Hi!``) keeps it only when the training
  data had that token (``etc.``, ``Inc.``); else the punctuation is a token of its own. Treebank text rarely
  ends a sentence on a short capitalised word, so the character model takes ``Hi.`` at the end of a text for
  an abbreviation (``Dr.``, ``St.``) although it ends the sentence there; a treebank's abbreviations are
  listed in its training data, and one that ends a sentence is kept whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .chars import FINAL_PUNCT, is_line_break

__all__ = ["Spans", "attach_final_punct", "decode_spans", "joinable_spaces", "line_breaks", "split_final_punct"]

ZWJ = "\u200d"
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK_CPS = np.array([ord(c) for c in _BREAKS], dtype="<u4")


@dataclass
class Spans:
    """Tokens ``starts[k]:ends[k]`` (int64 arrays), ``mwt[k]`` (bool), and sentences as token ranges
    ``sentences[s] = (first, last + 1)``; ``mwt_score[k]`` (float, optional): the model's multiword-token
    probability share of token ``k``'s end."""

    starts: np.ndarray
    ends: np.ndarray
    mwt: np.ndarray
    sentences: list[tuple[int, int]]
    mwt_score: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.starts)


def line_breaks(sep: str) -> int:
    """Number of line breaks in a separator (``\\r\\n`` counts once)."""
    return sum(1 for piece in sep.splitlines(True) if piece and is_line_break(piece[-1]))


def decode_spans(text: str, token_end: np.ndarray, sentence_end: np.ndarray, mwt_end: np.ndarray,
                 is_space: np.ndarray, is_glue: np.ndarray, sentence_score: np.ndarray | None = None,
                 max_sentence_tokens: int = 0, joinable: np.ndarray | None = None,
                 mwt_score: np.ndarray | None = None) -> Spans:
    """Spans from per-character booleans ``[len(text)]`` (see the module docstring for the rules).

    ``token_end[i]``: a token ends at character ``i``; ``sentence_end[i]`` / ``mwt_end[i]``: that token ends a
    sentence / is a multiword token; ``sentence_score`` (floats, optional) ranks cut points of over-long
    sentences (default: cut every ``max_sentence_tokens`` tokens; 0 = no limit); ``joinable`` (optional):
    the spaces that may lie inside a token (:func:`joinable_spaces`); ``mwt_score`` (optional, floats): kept
    per token in :attr:`Spans.mwt_score`.
    """
    n = len(text)
    empty = np.zeros(0, dtype=np.int64)
    if n == 0:
        return Spans(empty, empty.copy(), np.zeros(0, dtype=bool), [])
    ns = ~is_space
    if joinable is not None and joinable.any():
        inside = np.zeros(n, dtype=bool)  # a joinable space after a character that does not end a token
        inside[1:] = joinable[1:] & ~token_end[:-1]
        ns = ns | inside
    nxt = np.zeros(n, dtype=bool)
    nxt[:-1] = ns[1:]
    nxt_glue = np.zeros(n, dtype=bool)
    nxt_glue[:-1] = is_glue[1:]
    cut = token_end & ns & nxt & ~nxt_glue
    if ZWJ in text:
        cut &= np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4") != ord(ZWJ)
    run_end = ns & ~nxt
    prev = np.zeros(n, dtype=bool)
    prev[1:] = ns[:-1]
    run_start = ns & ~prev
    ends_mask = run_end | cut
    starts_mask = run_start.copy()
    starts_mask[1:] |= cut[:-1]
    starts = np.flatnonzero(starts_mask)
    ends = np.flatnonzero(ends_mask) + 1
    keep = np.ones(len(starts), dtype=bool)
    if is_glue.any():
        nonglue = np.concatenate([[0], np.cumsum(~is_glue & ns)])
        for k in np.flatnonzero(nonglue[ends] - nonglue[starts] == 0):
            if ends[k] < n and ns[ends[k]]:  # glue-only piece followed by more of its run: join them
                starts[k + 1] = starts[k]
            keep[k] = False
        starts, ends = starts[keep], ends[keep]
    last = ends - 1
    mwt = mwt_end[last]
    sent = sentence_end[last].copy()
    if len(sent):
        sent[-1] = True
        gaps = np.flatnonzero(_gap_breaks(text, starts, ends) >= 2)
        sent[gaps] = True
    bounds = np.flatnonzero(sent) + 1
    sentences = list(zip(np.concatenate([[0], bounds[:-1]]).tolist(), bounds.tolist()))
    if max_sentence_tokens > 0:
        score = sentence_score[last] if sentence_score is not None else None
        sentences = _limit(sentences, max_sentence_tokens, score)
    score = mwt_score[last].astype(np.float32) if mwt_score is not None else None
    return Spans(starts.astype(np.int64), ends.astype(np.int64), mwt.astype(bool), sentences, score)


def joinable_spaces(text: str, is_space: np.ndarray) -> np.ndarray:
    """``[len(text)]`` bool: the characters that are one ``" "`` (U+0020) between two non-space characters,
    the only whitespace a token may contain when a model is trained with ``spaces_in_tokens``."""
    n = len(text)
    out = np.zeros(n, dtype=bool)
    if n < 3:
        return out
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    out[1:-1] = (cps[1:-1] == 32) & ~is_space[:-2] & ~is_space[2:]
    return out


def _gap_breaks(text: str, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``[K]`` line breaks between token ``k`` and token ``k + 1`` (0 after the last token; ``\\r\\n``
    counts once), as :func:`line_breaks` counts them."""
    out = np.zeros(len(starts), dtype=np.int64)
    if len(starts) < 2 or not any(c in text for c in _BREAKS):
        return out
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    lb = np.isin(cps, _BREAK_CPS)
    crlf = np.zeros(len(cps), dtype=bool)
    crlf[:-1] = (cps[:-1] == 13) & (cps[1:] == 10)
    cum = np.concatenate([[0], np.cumsum(lb & ~crlf)])
    out[:-1] = cum[starts[1:]] - cum[ends[:-1]]
    return out


def _limit(sentences: list[tuple[int, int]], limit: int, score: np.ndarray | None) -> list[tuple[int, int]]:
    """Cut sentences longer than ``limit`` tokens after the best-scoring token in the second half of each
    ``limit``-token stretch."""
    out: list[tuple[int, int]] = []
    for a, b in sentences:
        while b - a > limit:
            lo, hi = a + max(1, limit // 2) - 1, a + limit - 1
            cut = hi if score is None else lo + int(np.argmax(score[lo:hi + 1]))
            out.append((a, cut + 1))
            a = cut + 1
        out.append((a, b))
    return out


def split_final_punct(text: str, spans: Spans, final_tokens: frozenset[str] | None) -> Spans:
    """``spans`` with the final punctuation (:data:`g2gt.ud.tokenize.chars.FINAL_PUNCT`) of each sentence's
    last token made a token of its own when that token has two or more characters, a letter or digit before
    the punctuation, is not one of ``final_tokens`` (lowercased: the training data's tokens that end in such
    punctuation, :attr:`g2gt.ud.tokenize.mwt.MWTLexicon.final_tokens`) and is not written like an
    abbreviation (an initial ``K.``, inner periods ``p.m.``): ``Hi.`` -> ``Hi`` ``.``; ``etc.``, ``K.`` and
    ``μ.μ.`` kept. Sentence boundaries do not move; the new token is not a multiword token. ``final_tokens``
    None: ``spans`` unchanged."""
    if final_tokens is None or not spans.sentences:
        return spans
    cut = []
    for _, b in spans.sentences:
        k = b - 1
        s, e = int(spans.starts[k]), int(spans.ends[k])
        word = text[s:e - 1]
        if (e - s > 1 and text[e - 1] in FINAL_PUNCT and word[-1].isalnum() and text[s:e].lower() not in final_tokens
                and not _abbreviation_like(word)):
            cut.append(k)
    if not cut:
        return spans
    at = np.array(cut, dtype=np.int64)
    punct_start = spans.ends[at] - 1
    starts = np.insert(spans.starts, at + 1, punct_start)
    ends = np.insert(spans.ends, at, punct_start)
    mwt = np.insert(spans.mwt, at + 1, False)
    score = None if spans.mwt_score is None else np.insert(spans.mwt_score, at + 1, 0.0).astype(np.float32)
    shift = np.searchsorted(at, np.arange(len(spans) + 1), side="left")  # [K + 1]: tokens inserted before k
    sentences = [(a + int(shift[a]), b + int(shift[b])) for a, b in spans.sentences]
    return Spans(starts, ends, mwt, sentences, score)


def attach_final_punct(text: str, spans: Spans) -> Spans:
    """``spans`` with each sentence that holds only tokens of sentence-final punctuation
    (:data:`g2gt.ud.tokenize.chars.FINAL_PUNCT`: ``!``, ``?!``, ``...``) joined to the sentence before it
    when that one does not end in such punctuation itself and only spaces separate them (no line break):
    ``Merci !`` is one sentence, ``Contract. ?`` (a stray ``?`` in e-mail text) stays two. Tokens do not
    change."""
    if len(spans.sentences) < 2:
        return spans
    starts, ends = spans.starts.tolist(), spans.ends.tolist()
    out = [spans.sentences[0]]
    for a, b in spans.sentences[1:]:
        only_punct = all(all(c in FINAL_PUNCT for c in text[starts[k]:ends[k]]) for k in range(a, b))
        if only_punct and text[ends[a - 1] - 1] not in FINAL_PUNCT and line_breaks(text[ends[a - 1]:starts[a]]) == 0:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    if len(out) == len(spans.sentences):
        return spans
    return Spans(spans.starts, spans.ends, spans.mwt, out, spans.mwt_score)


def _abbreviation_like(word: str) -> bool:
    """Whether ``word`` (a token without its final period) is written like an abbreviation: one letter (an
    initial) or with a period inside (``p.m``, ``U.S``)."""
    return (len(word) == 1 and word.isalpha()) or "." in word
