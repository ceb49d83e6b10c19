"""Dependency trees as SVG (hand-written SVG text, no extra dependencies).

Words sit on a baseline left to right (UPOS in grey beneath each word); every
dependency is an arc above the words drawn from the head to the dependent,
with an arrowhead at the dependent and the relation label at the top of the
arc.  The root word gets a vertical arrow from above labelled ``root`` (or its
DEPREL).  Arc heights follow nesting: an arc is one level higher than the
highest arc strictly inside its span, so arcs never hide each other's labels.
The picture's width grows with the words' lengths; all text is XML-escaped.
"""

from __future__ import annotations

import os
from typing import Sequence
from xml.sax.saxutils import escape

from .io.conllu import Sentence, read_conllu

__all__ = ["render_svg", "tree_svg", "draw_conllu"]

CHAR_W = 7.6  # approximate advance of one character at FONT px (sans-serif)
FONT = 14
LABEL_FONT = 11
LEVEL_H = 28
MARGIN = 20


def _levels(heads: Sequence[int | None]) -> dict[int, int]:
    """Arc level (1 = lowest) for each dependent index (0-based) with a non-root head."""
    arcs = [(min(d + 1, h), max(d + 1, h), d) for d, h in enumerate(heads) if h]
    arcs.sort(key=lambda a: a[1] - a[0])
    level: dict[int, int] = {}
    placed: list[tuple[int, int, int]] = []  # (lo, hi, level)
    for lo, hi, d in arcs:
        inner = [lv for a, b, lv in placed if lo <= a and b <= hi and (a, b) != (lo, hi)]
        lv = 1 + max(inner, default=0)
        level[d] = lv
        placed.append((lo, hi, lv))
    return level


def tree_svg(forms: Sequence[str], heads: Sequence[int | None], deprels: Sequence[str | None],
             upos: Sequence[str] | None = None, title: str | None = None) -> str:
    """SVG text for a tree given as parallel lists (heads 1-based, 0 = root, None = unknown)."""
    n = len(forms)
    if not (len(heads) == len(deprels) == n) or (upos is not None and len(upos) != n):
        raise ValueError(f"tree_svg: {n} forms but {len(heads)} heads and {len(deprels)} deprels")
    label_w = [len(r or "") * 0.62 * LABEL_FONT for r in deprels]
    widths = []
    for i, f in enumerate(forms):
        w = max(len(f) * CHAR_W, len(upos[i]) * CHAR_W * 0.8 if upos else 0, 30.0)
        widths.append(w + 18)
    # make room for labels of short arcs between neighbours
    for d, h in enumerate(heads):
        if h and abs(h - (d + 1)) == 1:
            lo = min(d, h - 1)
            need = label_w[d] + 8 - (widths[lo] + widths[lo + 1]) / 2
            if need > 0:
                widths[lo] += need / 2
                widths[lo + 1] += need / 2
    centers = []
    x = MARGIN
    for w in widths:
        centers.append(x + w / 2)
        x += w
    width = x + MARGIN
    levels = _levels(heads)
    max_level = max(levels.values(), default=0)
    has_root = any(h == 0 for h in heads)
    top = MARGIN + (LABEL_FONT + 6 if title else 0)
    base = top + max(max_level, 1 if has_root else 0) * LEVEL_H + LABEL_FONT + 16
    word_y = base + FONT + 6
    height = word_y + (FONT + 8 if upos else 0) + MARGIN

    out: list[str] = []
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
               f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif">')
    if title:
        out.append(f"<title>{escape(title)}</title>")
    out.append('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
               'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/>'
               "</marker></defs>")
    out.append(f'<rect x="0" y="0" width="{width:.0f}" height="{height:.0f}" fill="white"/>')
    if title:
        out.append(f'<text class="title" x="{MARGIN}" y="{MARGIN:.0f}" font-size="{LABEL_FONT}" '
                   f'fill="#555">{escape(title)}</text>')
    labels: list[str] = []
    for d, h in enumerate(heads):
        if h is None:
            continue
        rel = deprels[d] or ""
        xd = centers[d]
        if h == 0:  # the label on top, the arrow starting below its box (nothing of the line shows above it)
            lx, ly = xd, top + LABEL_FONT
            out.append(f'<path class="arc root" d="M {xd:.1f} {ly + 3:.1f} L {xd:.1f} {base:.1f}" stroke="#333" '
                       'fill="none" stroke-width="1.3" marker-end="url(#arrow)"/>')
        else:
            lv = levels[d]
            xh = centers[h - 1] + (4 if h - 1 < d else -4)
            xd2 = xd + (-3 if h - 1 < d else 3)
            y_top = base - lv * LEVEL_H * 4 / 3  # cubic Bezier peak = 3/4 of control height
            out.append(f'<path class="arc" d="M {xh:.1f} {base:.1f} C {xh:.1f} {y_top:.1f}, {xd2:.1f} {y_top:.1f}, '
                       f'{xd2:.1f} {base:.1f}" stroke="#333" fill="none" stroke-width="1.3" '
                       'marker-end="url(#arrow)"/>')
            lx, ly = (xh + xd2) / 2, base - lv * LEVEL_H + 4
        w = len(rel) * 0.62 * LABEL_FONT + 4
        labels.append(f'<rect x="{lx - w / 2:.1f}" y="{ly - LABEL_FONT + 1:.1f}" width="{w:.1f}" '
                      f'height="{LABEL_FONT + 2}" fill="white" fill-opacity="0.85"/>'
                      f'<text class="label" x="{lx:.1f}" y="{ly:.1f}" font-size="{LABEL_FONT}" '
                      f'text-anchor="middle" fill="#a0301c">{escape(rel)}</text>')
    out.extend(labels)
    for i, f in enumerate(forms):
        out.append(f'<text class="word" x="{centers[i]:.1f}" y="{word_y:.1f}" font-size="{FONT}" '
                   f'text-anchor="middle">{escape(f)}</text>')
        if upos:
            out.append(f'<text class="upos" x="{centers[i]:.1f}" y="{word_y + FONT + 4:.1f}" '
                       f'font-size="{LABEL_FONT}" text-anchor="middle" fill="#777">{escape(upos[i])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_svg(sentence: Sentence, show_upos: bool = True) -> str:
    """SVG text of one :class:`~g2gt.ud.io.Sentence` (words without a head get no arc)."""
    title = sentence.sent_id or None
    if sentence.text:
        title = f"{title}: {sentence.text}" if title else sentence.text
    upos = sentence.upos if show_upos and any(u != "_" for u in sentence.upos) else None
    return tree_svg(sentence.forms, sentence.heads, sentence.deprels, upos, title)


def draw_conllu(path: str | os.PathLike, sentence: int | None = None, sent_id: str | None = None,
                show_upos: bool = True) -> str:
    """SVG of one sentence of a CoNLL-U file, chosen by 1-based number or ``sent_id``
    (default: the first).

    Raises:
        ValueError: the number is outside ``1..len(file)`` or the id is not found.
    """
    return draw_sentences(read_conllu(path), os.fspath(path), sentence, sent_id, show_upos)


def draw_sentences(sents: Sequence[Sentence], name: str, sentence: int | None = None, sent_id: str | None = None,
                   show_upos: bool = True) -> str:
    """SVG of one of ``sents`` (named ``name`` in messages), chosen as :func:`draw_conllu` does."""
    if sentence is not None and sent_id is not None:
        raise ValueError("give either a sentence number or a sent_id, not both")
    if sent_id is not None:
        for s in sents:
            if s.sent_id == sent_id:
                return render_svg(s, show_upos)
        raise ValueError(f"{name}: no sentence with sent_id {sent_id!r} ({len(sents)} sentences in the file)")
    k = 1 if sentence is None else int(sentence)
    if not 1 <= k <= len(sents):
        raise ValueError(f"{name} has {len(sents)} sentence(s); sentence number {k} is outside 1..{len(sents)}")
    return render_svg(sents[k - 1], show_upos)
