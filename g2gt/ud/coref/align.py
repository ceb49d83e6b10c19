"""Mentions predicted on another tokenisation (raw text through the pipeline), moved onto the gold words.

The CRAC scorer compares mentions by word positions, so both files must have the same words. For text that
the pipeline tokenised itself, each predicted mention is moved onto the gold words by characters: the words
of a document, whitespace removed, spell the same character stream in both files (where they do not, e.g.
after normalised quotes, :class:`difflib.SequenceMatcher` aligns the two streams). A mention covering
characters ``[c0, c1)`` becomes the gold words from the one holding ``c0`` to the one holding ``c1 - 1``.
"""

from __future__ import annotations

import bisect
import difflib
from typing import Sequence

from .io import Mention

__all__ = ["word_chars", "project_mentions"]


def word_chars(forms: Sequence[str]) -> tuple[str, list[int]]:
    """The document's characters without whitespace and the first character index of every word (plus the
    total at the end)."""
    starts, text = [], []
    n = 0
    for f in forms:
        starts.append(n)
        s = "".join(f.split())
        text.append(s)
        n += len(s)
    starts.append(n)
    return "".join(text), starts


def _char_map(src: str, dst: str) -> list[int]:
    """For each character of ``src`` its index in ``dst`` (the nearest aligned one where they differ)."""
    if src == dst:
        return list(range(len(src) + 1))
    out = [-1] * (len(src) + 1)
    for a, b, size in difflib.SequenceMatcher(None, src, dst, autojunk=False).get_matching_blocks():
        for k in range(size):
            out[a + k] = b + k
    out[len(src)] = len(dst)
    last = 0
    for i, v in enumerate(out):  # unaligned characters take the previous aligned position
        if v < 0:
            out[i] = last
        else:
            last = v
    return out


def project_mentions(mentions: Sequence[Mention], pred_forms: Sequence[str], gold_forms: Sequence[str]
                     ) -> list[Mention]:
    """``mentions`` (positions in ``pred_forms``, one document) as mentions of the gold words (module docstring);
    heads are dropped (the scorer takes a mention's first word in GUM's layout)."""
    ps, pstart = word_chars(pred_forms)
    gs, gstart = word_chars(gold_forms)
    cmap = _char_map(ps, gs)
    out = []
    for m in mentions:
        c0 = cmap[pstart[m.start]]
        c1 = cmap[pstart[m.end + 1] - 1] if pstart[m.end + 1] > pstart[m.end] else c0
        a = max(0, bisect.bisect_right(gstart, c0) - 1)
        b = max(a, min(len(gold_forms) - 1, bisect.bisect_right(gstart, c1) - 1))
        out.append(Mention(m.eid, list(range(a, b + 1)), m.etype, m.other, None))
    return out
