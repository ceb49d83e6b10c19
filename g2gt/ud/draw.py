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
from typing import Sequence

from .io.conllu import read_conllu
from .io import Sentence
from .io.svg import Mark, entity_color, render_svg

__all__ = ["draw_conllu", "draw_sentences", "coref_marks"]


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
