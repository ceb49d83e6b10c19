"""Dependency trees as SVG text (no extra dependencies): the drawer of :mod:`g2gt.ud.draw`, which documents the
picture; here so that a sentence can draw itself in a notebook (``Sentence._repr_html_``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence
from xml.sax.saxutils import escape

__all__ = ["render_svg", "tree_svg", "Mark", "entity_color", "PALETTE"]

CHAR_W = 7.6  # approximate advance of one character at FONT px (sans-serif)
FONT = 14
LABEL_FONT = 11
LEVEL_H = 28
MARGIN = 20
MARK_H = 16  # one row of coreference bars: the bar and its entity id
# the colours of entities 1..12 of a document (the server's page uses the same list, static/app.js)
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
           "#bcbd22", "#393b79", "#637939", "#843c39")


@dataclass(frozen=True)
class Mark:
    """One coreference mention to draw: words ``start..end`` (1-based, inclusive) of one sentence."""

    start: int
    end: int
    entity: str
    etype: str
    color: str
    text: str = ""


def entity_color(k: int) -> str:
    """The colour of a document's ``k``-th entity (0-based, counting entities with two or more mentions):
    :data:`PALETTE`, then hues 137.5 degrees apart (``hsl(...)``)."""
    if k < len(PALETTE):
        return PALETTE[k]
    return f"hsl({(k - len(PALETTE)) * 137.508 % 360:.0f}, 65%, 40%)"


def _mark_rows(marks: Sequence[Mark]) -> list[int]:
    """Row (1 = nearest the words) of each mark: one below the lowest shorter mark it overlaps."""
    order = sorted(range(len(marks)), key=lambda i: (marks[i].end - marks[i].start, marks[i].start))
    rows = [0] * len(marks)
    for n, i in enumerate(order):
        below = [rows[j] for j in order[:n] if marks[j].start <= marks[i].end and marks[i].start <= marks[j].end]
        rows[i] = 1 + max(below, default=0)
    return rows


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
             upos: Sequence[str] | None = None, title: str | None = None, marks: Sequence[Mark] = ()) -> str:
    """SVG text for a tree given as parallel lists (heads 1-based, 0 = root, None = unknown); ``marks``:
    coreference mentions drawn as bars under the words (module docstring)."""
    n = len(forms)
    if not (len(heads) == len(deprels) == n) or (upos is not None and len(upos) != n):
        raise ValueError(f"tree_svg: {n} forms but {len(heads)} heads and {len(deprels)} deprels")
    for m in marks:
        if not 1 <= m.start <= m.end <= n:
            raise ValueError(f"tree_svg: mention {m.start}..{m.end} of entity {m.entity} is outside words 1..{n}")
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
    rows = _mark_rows(marks)
    marks_y = word_y + (FONT + 8 if upos else 0) + 6  # top of the first row of bars
    height = marks_y - 6 + max(rows, default=0) * MARK_H + MARGIN

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
    for m, row in sorted(zip(marks, rows), key=lambda x: (x[1], x[0].start)):
        x0 = centers[m.start - 1] - widths[m.start - 1] / 2 + 4
        x1 = centers[m.end - 1] + widths[m.end - 1] / 2 - 4
        y = marks_y + (row - 1) * MARK_H
        tip = f"entity {m.entity}" + (f" ({m.etype})" if m.etype else "") + (f": {m.text}" if m.text else "")
        out.append(f'<g class="mention" data-entity="{escape(m.entity, {chr(34): "&quot;"})}">'
                   f"<title>{escape(tip)}</title>"
                   f'<rect x="{x0:.1f}" y="{y:.1f}" width="{x1 - x0:.1f}" height="3" fill="{m.color}"/>'
                   f'<text class="entity" x="{(x0 + x1) / 2:.1f}" y="{y + 12:.1f}" font-size="9" '
                   f'text-anchor="middle" fill="{m.color}">{escape(m.entity)}</text></g>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_svg(sentence: Any, show_upos: bool = True, marks: Sequence[Mark] = ()) -> str:
    """SVG text of one :class:`~g2gt.ud.io.Sentence` (words without a head get no arc); ``marks``: its
    coreference mentions (an entry of :func:`coref_marks`)."""
    title = sentence.sent_id or None
    if sentence.text:
        title = f"{title}: {sentence.text}" if title else sentence.text
    upos = sentence.upos if show_upos and any(u != "_" for u in sentence.upos) else None
    return tree_svg(sentence.forms, sentence.heads, sentence.deprels, upos, title, marks)
