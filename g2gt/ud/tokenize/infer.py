"""Inference over texts of any length with overlapping windows (memory bounded by the window).

The model reads the ``n`` non-space characters of a text (:meth:`g2gt.ud.tokenize.chars.CharVocab.compact`);
whitespace gets label 0 (inside / no boundary) without being read. They are covered by *cores* of ``stride = window - 2 * context`` characters; core
``k`` is read inside a window of ``window`` characters that contains it with (where the text allows)
``context`` characters on each side, and each character takes the prediction of the window whose core holds
it. Windows of all texts are batched together (``batch_windows`` at a time), so memory depends on the
window and the batch, never on the text length.

Decisions per character (``p`` = softmax over the 5 labels)::

    token end     p_0 < 0.5
    sentence end  p_2 + p_4 > p_1 + p_3
    multiword     p_3 + p_4 > p_1 + p_2
    its score     (p_3 + p_4) / (p_1 + p_2 + p_3 + p_4)   (kept per token: the lexicon asks the expander to
                                                          decide tokens with a score above a threshold)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from .chars import CharVocab
from .spans import Spans, attach_final_punct, decode_spans, joinable_spaces, split_final_punct

__all__ = ["CharProbs", "window_plan", "predict_probs", "decode_text"]


class CharProbs(NamedTuple):
    """The model's view of one text of ``n`` characters: ``probs [n, 5]`` float32, ``is_space`` and
    ``is_glue [n]`` bool, and ``joinable [n]`` bool (the spaces that may be inside a token) for models
    trained with ``spaces_in_tokens``, else None. Unpacks into :func:`decode_text`'s arguments."""

    probs: np.ndarray
    is_space: np.ndarray
    is_glue: np.ndarray
    joinable: np.ndarray | None = None


def window_plan(n: int, window: int, context: int) -> list[tuple[int, int, int, int]]:
    """``(win_start, win_end, core_start, core_end)`` for a text of ``n`` characters; cores tile ``[0, n)``."""
    if n <= 0:
        return []
    if n <= window:
        return [(0, n, 0, n)]
    stride = window - 2 * context
    if stride < 1:
        raise ValueError(f"window={window} must be larger than 2 * context={2 * context}")
    plan = []
    for core_start in range(0, n, stride):
        core_end = min(n, core_start + stride)
        start = min(max(0, core_start - context), n - window)
        plan.append((start, start + window, core_start, core_end))
    return plan


@torch.inference_mode()
def predict_probs(model, vocab: CharVocab, texts: Sequence[str], batch_windows: int = 64,
                  device: torch.device | str | None = None) -> list[CharProbs]:
    """For each text its :class:`CharProbs`, with the model in its own dtype (cast it, e.g. to bfloat16,
    for speed)."""
    cfg = model.config
    device = torch.device(device) if device is not None else next(model.parameters()).device
    was = model.training
    model.eval()
    encoded = [vocab.compact(t) for t in texts]
    if getattr(cfg, "space_words", ()):
        from .words import WordMatcher, mark_word_spaces

        matcher = WordMatcher(cfg.space_words)
        encoded = [mark_word_spaces(t, c, matcher) for t, c in zip(texts, encoded)]
    kept = [np.zeros((len(c.keep), 5), dtype=np.float32) for c in encoded]
    jobs = []  # (text index, window start, window end, core start, core end), over kept characters
    for i, c in enumerate(encoded):
        jobs.extend((i, *w) for w in window_plan(len(c.keep), cfg.window, cfg.context))
    jobs.sort(key=lambda j: j[2] - j[1])
    try:
        for b in range(0, len(jobs), batch_windows):
            chunk = jobs[b:b + batch_windows]
            longest = max(e - s for _, s, e, _, _ in chunk)
            cols = np.zeros((4, len(chunk), longest), dtype=np.int64)
            for r, (i, s, e, _, _) in enumerate(chunk):
                c = encoded[i]
                for f, x in enumerate((c.ids, c.classes, c.before, c.after)):
                    cols[f, r, :e - s] = x[s:e]
            t = torch.from_numpy(cols).to(device)
            lengths = np.array([e - s for _, s, e, _, _ in chunk])
            mask = None
            if (lengths < longest).any():
                mask = torch.from_numpy(np.arange(longest)[None, :] >= lengths[:, None]).to(device)
            logits = model(t[0], t[1], t[2], t[3], mask)
            p = torch.softmax(logits.float(), -1).cpu().numpy()
            for r, (i, s, _, cs, ce) in enumerate(chunk):
                kept[i][cs:ce] = p[r, cs - s:ce - s]
    finally:
        model.train(was)
    spaces_in_tokens = bool(getattr(cfg, "spaces_in_tokens", False))
    out = []
    for t, c, k in zip(texts, encoded, kept):
        probs = np.zeros((len(t), 5), dtype=np.float32)
        probs[:, 0] = 1.0  # whitespace: no boundary
        probs[c.keep] = k
        out.append(CharProbs(probs, c.is_space, c.is_glue, joinable_spaces(t, c.is_space) if spaces_in_tokens else None))
    return out


def decode_text(text: str, probs: np.ndarray, is_space: np.ndarray, is_glue: np.ndarray,
                joinable: np.ndarray | None = None, max_sentence_tokens: int = 0,
                final_tokens: frozenset[str] | None = None) -> Spans:
    """Token / sentence / multiword decisions from the label probabilities (module docstring), then
    :func:`g2gt.ud.tokenize.spans.decode_spans` (``joinable``: see :class:`CharProbs`),
    :func:`g2gt.ud.tokenize.spans.attach_final_punct` and, given the training data's ``final_tokens``,
    :func:`g2gt.ud.tokenize.spans.split_final_punct`."""
    p = probs
    end_tok = p[:, 0] < 0.5
    sent_score = p[:, 2] + p[:, 4]
    sent = sent_score > p[:, 1] + p[:, 3]
    mwt = p[:, 3] + p[:, 4] > p[:, 1] + p[:, 2]
    mwt_share = (p[:, 3] + p[:, 4]) / np.maximum(p[:, 1:].sum(1), 1e-9)
    spans = decode_spans(text, end_tok, sent, mwt, is_space, is_glue, sent_score, max_sentence_tokens, joinable,
                         mwt_share)
    return split_final_punct(text, attach_final_punct(text, spans), final_tokens)
