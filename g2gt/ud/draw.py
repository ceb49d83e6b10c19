"""Dependency trees as SVG (hand-written SVG text, no extra dependencies).

Words sit on a baseline left to right (UPOS in grey beneath each word); every
dependency is an arc above the words drawn from the head to the dependent,
with an arrowhead at the dependent and the relation label at the top of the
arc.  The root word gets a vertical arrow from above labelled ``root`` (or its
DEPREL).  Arc heights follow nesting: an arc is one level higher than the
highest arc strictly inside its span, so arcs never hide each other's labels.
The picture's width grows with the words' lengths; all text is XML-escaped.

**Coreference** (``marks``, from :func:`coref_marks`): each mention of an entity with two or more mentions is a
bar under its words in its entity's colour (one colour per entity of a document, :func:`entity_color`), the
entity id beneath it and ``entity ID (TYPE): mention text`` as its tooltip (``<title>``). Bars nest like the
arcs: a bar is one row lower than the lowest bar it overlaps among the shorter ones. Singletons get no bar.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence
from xml.sax.saxutils import escape

from .io.conllu import Sentence, read_conllu

__all__ = ["render_svg", "tree_svg", "draw_conllu", "draw_sentences", "Mark", "coref_marks", "entity_color",
           "PALETTE"]

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


def coref_marks(sentences: Sequence[Sentence]) -> list[list[Mark]]:
    """For each sentence, the :class:`Mark` of every mention of an entity with at least two mentions, read from
    the ``Entity=`` items of MISC (:func:`g2gt.ud.coref.io.entities`; documents start at ``# newdoc``). A
    mention across sentences is marked in each of them. Colours count entities per document; the marks of a
    sentence are in order of their first word, then longest first.

    Raises:
        g2gt.ud.coref.io.CorefFormatError: a malformed ``Entity`` value (file and line named).
    """
    from .coref.io import entities

    out: list[list[Mark]] = [[] for _ in sentences]
    k, doc = 0, None
    for e in entities(sentences):
        if len(e["mentions"]) < 2:
            continue
        if e["document"] != doc:
            k, doc = 0, e["document"]
        color = entity_color(k)
        k += 1
        for m in e["mentions"]:
            for s in range(m["sentence"], m["end_sentence"] + 1):
                a = m["start"] if s == m["sentence"] else 1
                b = m["end"] if s == m["end_sentence"] else len(sentences[s])
                out[s].append(Mark(a, b, str(e["id"]), e["type"] or "", color, m["text"]))
    for ms in out:
        ms.sort(key=lambda m: (m.start, -m.end))
    return out


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


def render_svg(sentence: Sentence, show_upos: bool = True, marks: Sequence[Mark] = ()) -> str:
    """SVG text of one :class:`~g2gt.ud.io.Sentence` (words without a head get no arc); ``marks``: its
    coreference mentions (an entry of :func:`coref_marks`)."""
    title = sentence.sent_id or None
    if sentence.text:
        title = f"{title}: {sentence.text}" if title else sentence.text
    upos = sentence.upos if show_upos and any(u != "_" for u in sentence.upos) else None
    return tree_svg(sentence.forms, sentence.heads, sentence.deprels, upos, title, marks)


def draw_conllu(path: str | os.PathLike, sentence: int | None = None, sent_id: str | None = None,
                show_upos: bool = True, coref: bool = False) -> str:
    """SVG of one sentence of a CoNLL-U file, chosen by 1-based number or ``sent_id``
    (default: the first); ``coref``: with its coreference mentions (the file's ``Entity=`` items).

    Raises:
        ValueError: the number is outside ``1..len(file)``, the id is not found, or ``coref`` is asked of a
            file without ``Entity=``.
    """
    return draw_sentences(read_conllu(path), os.fspath(path), sentence, sent_id, show_upos, coref)


def draw_sentences(sents: Sequence[Sentence], name: str, sentence: int | None = None, sent_id: str | None = None,
                   show_upos: bool = True, coref: bool = False) -> str:
    """SVG of one of ``sents`` (named ``name`` in messages), chosen as :func:`draw_conllu` does; ``coref``:
    with the mentions of :func:`coref_marks` (read from the whole document, so that an entity has the same
    colour in every sentence)."""
    if sentence is not None and sent_id is not None:
        raise ValueError("give either a sentence number or a sent_id, not both")
    if sent_id is not None:
        ks = [k for k, s in enumerate(sents, 1) if s.sent_id == sent_id]
        if not ks:
            raise ValueError(f"{name}: no sentence with sent_id {sent_id!r} ({len(sents)} sentences in the file)")
        k = ks[0]
    else:
        k = 1 if sentence is None else int(sentence)
    if not 1 <= k <= len(sents):
        raise ValueError(f"{name} has {len(sents)} sentence(s); sentence number {k} is outside 1..{len(sents)}")
    marks: Sequence[Mark] = ()
    if coref:
        from .coref.metrics import has_entities

        if not has_entities(sents):
            raise ValueError(f"{name}: no coreference to draw (no Entity= item in MISC); resolve it first, e.g. "
                             "g2gt coref --model MODEL INPUT -o OUTPUT, or parse with --coref")
        marks = coref_marks(sents)[k - 1]
    return render_svg(sents[k - 1], show_upos, marks)
