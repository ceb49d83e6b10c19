r"""CorefUD coreference in the MISC column: reading ``Entity=`` into mentions, writing mentions back.

The CorefUD 1.x format marks mentions with brackets in the ``Entity`` item of a word's MISC::

    Entity=(7-abstract-new-nnnss-cf6-2-coref(3-abstract-giv:act-sssss-cf1-1-coref)
    Entity=7)6)5)4)

``(EID-f2-f3...`` opens a mention of entity ``EID`` at this word, ``EID)`` closes it, ``(EID-...)`` is a
one-word mention; several brackets follow each other with no delimiter. The fields after ``EID`` follow the
document's layout, ``# global.Entity = GRP-etype-infstat-...`` (GUM) or ``eid-etype-head-other`` (the
CorefUD default). A discontinuous mention gives each part an index, ``(3[1/2]-...`` ... ``3[1/2])``
``(3[2/2]-...`` ... ``3[2/2])``. ``SplitAnte=`` and ``Bridge=`` items carry other relations.

Mentions are positions in the *document*: word ``k`` is the ``k``-th syntactic word (0-based) from the
document's first sentence (``# newdoc``). :func:`documents` splits a sentence list into documents,
:func:`read_mentions` reads a document's mentions, :func:`write_mentions` replaces them: it removes
``Entity``, ``SplitAnte`` and ``Bridge`` from every word of the document (the relations this module does
not predict would refer to entities that no longer exist) and writes the new ``Entity`` items; every other
MISC item keeps its text and order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

__all__ = ["Mention", "documents", "entity_layout", "read_mentions", "write_mentions", "format_entity",
           "parse_entity", "entities", "DEFAULT_LAYOUT", "CorefFormatError"]

DEFAULT_LAYOUT = "eid-etype-head-other"
_PART = re.compile(r"(.+?)\[([0-9]+)/([0-9]+)\]\Z")
_RELATION_ITEMS = ("Entity", "SplitAnte", "Bridge")


class CorefFormatError(ValueError):
    """A malformed ``Entity`` value (unbalanced or unknown brackets), naming file, line and the value."""


@dataclass
class Mention:
    """One mention: its entity id, its document word positions (sorted; several runs when
    discontinuous) and its fields after the entity id (``etype`` first in both GUM's and the default
    layout, ``other`` the rest as written, e.g. ``new-nnnss-cf6-2-coref``)."""

    eid: str
    words: list[int]
    etype: str = ""
    other: str = ""
    head: int | None = None  # document position of the head word when known (layout with ``head``)
    parts: list[tuple[int, int]] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.words[0]

    @property
    def end(self) -> int:
        return self.words[-1]

    def spans(self) -> list[tuple[int, int]]:
        """Maximal runs ``(first, last)`` of consecutive words (one for a contiguous mention)."""
        out: list[tuple[int, int]] = []
        for w in self.words:
            if out and out[-1][1] == w - 1:
                out[-1] = (out[-1][0], w)
            else:
                out.append((w, w))
        return out


def documents(sentences: Sequence) -> list[list]:
    """Consecutive sentences grouped into documents: a sentence with ``# newdoc`` (any id) starts one; the
    sentences before the first ``# newdoc`` form a document of their own."""
    docs: list[list] = []
    for s in sentences:
        md = s.metadata
        if not docs or "newdoc id" in md or "newdoc" in md:
            docs.append([])
        docs[-1].append(s)
    return docs


def entity_layout(doc: Sequence) -> str | None:
    """The document's ``# global.Entity`` layout (``None`` when no sentence of it declares one)."""
    for s in doc:
        v = s.metadata.get("global.Entity")
        if v:
            return str(v)
    return None


def parse_entity(value: str) -> list[tuple[str, str, bool, bool]]:
    """The brackets of one ``Entity`` value in order: ``(eid_with_part, fields, opens, closes)``.

    >>> parse_entity("(7-abstract-new(3-abstract)")
    [('7', 'abstract-new', True, False), ('3', 'abstract', True, True)]
    >>> parse_entity("7)6)")
    [('7', '', False, True), ('6', '', False, True)]
    """
    out = []
    pos = 0
    while pos < len(value):
        if value[pos] == "(":
            j = pos + 1
            while j < len(value) and value[j] not in "()":
                j += 1
            body = value[pos + 1:j]
            closes = j < len(value) and value[j] == ")"
            eid, _, rest = body.partition("-")
            if not eid:
                raise ValueError(f"an opening bracket without an entity id at {value[pos:]!r}")
            out.append((eid, rest, True, closes))
            pos = j + 1 if closes else j
        else:
            j = value.find(")", pos)
            if j < 0 or "(" in value[pos:j]:
                raise ValueError(f"expected 'EID)' or '(EID-...' at {value[pos:]!r}")
            out.append((value[pos:j], "", False, True))
            pos = j + 1
    return out


def _field_index(layout: str, name: str) -> int | None:
    names = layout.split("-")
    return names.index(name) - 1 if name in names and names.index(name) > 0 else None


def read_mentions(doc: Sequence, layout: str | None = None) -> list[Mention]:
    """The mentions of one document (a list of sentences), in order of their first word, then longest first.

    ``layout``: the fields of an ``Entity`` bracket (default: the document's ``# global.Entity``, else
    :data:`DEFAULT_LAYOUT`). The entity type is the ``etype`` field, the head (when the layout has ``head``)
    the given 1-based position inside the mention.

    Raises:
        CorefFormatError: ``FILE:LINE: ...`` for an unreadable value, a closing bracket with no open
            mention of that entity, or a mention still open at the end of the document.
    """
    layout = layout or entity_layout(doc) or DEFAULT_LAYOUT
    ti, hi = _field_index(layout, "etype"), _field_index(layout, "head")
    open_: dict[str, list[tuple[int, str]]] = {}
    parts: dict[tuple[str, int], list] = {}  # discontinuous mentions: (eid, total) -> parts
    done: list[Mention] = []
    k = 0
    for s in doc:
        for i, tok in enumerate(s.word_rows):
            misc = tok["misc"] or {}
            value = misc.get("Entity")
            if value:
                where = f"{getattr(s, 'path', '<input>')}:{s.word_line(i) if hasattr(s, 'word_line') else 0}"
                try:
                    brackets = parse_entity(value)
                except ValueError as e:
                    raise CorefFormatError(f"{where}: Entity={value}: {e} (expected CorefUD brackets such as "
                                           "'(1-person', '1)' or '(2-place)')") from None
                for eid, fields, opens, closes in brackets:
                    if opens:
                        open_.setdefault(eid, []).append((k, fields))
                    if closes:
                        stack = open_.get(eid)
                        if not stack:
                            raise CorefFormatError(f"{where}: Entity={value}: '{eid})' closes a mention that is "
                                                   "not open (expected a matching '(' earlier in the document)")
                        start, fields = stack.pop()
                        _finish(eid, start, k, fields, ti, hi, parts, done)
            k += 1
    left = [e for e, st in open_.items() if st]
    if left:
        path = getattr(doc[0], "path", "<input>")
        raise CorefFormatError(f"{path}:{getattr(doc[0], 'line', 0)}: the document ends with open mentions of "
                               f"entities {', '.join(left)} (expected a closing 'EID)' for each)")
    for (eid, _), ps in parts.items():  # join the parts of discontinuous mentions
        ps.sort()
        words = sorted({w for a, b, _ in ps for w in range(a, b + 1)})
        f = ps[0][2]
        done.append(_mention(eid, words, f, ti, hi))
        done[-1].parts = [(a, b) for a, b, _ in ps]
    done.sort(key=lambda m: (m.start, -m.end))
    return done


def _mention(eid: str, words: list[int], fields: str, ti: int | None, hi: int | None) -> Mention:
    vals = fields.split("-") if fields else []
    etype = vals[ti] if ti is not None and ti < len(vals) else ""
    head = None
    if hi is not None and hi < len(vals) and vals[hi].isdigit() and 1 <= int(vals[hi]) <= len(words):
        head = words[int(vals[hi]) - 1]
    other = "-".join(v for j, v in enumerate(vals) if j != ti)
    return Mention(eid, words, etype, other, head)


def _finish(eid: str, start: int, end: int, fields: str, ti, hi, parts: dict, done: list) -> None:
    m = _PART.match(eid)
    if m:  # one part of a discontinuous mention
        base, total = m.group(1), int(m.group(3))
        parts.setdefault((base, total), []).append((start, end, fields))
        return
    done.append(_mention(eid, list(range(start, end + 1)), fields, ti, hi))


def format_entity(mentions: Iterable[Mention], layout: str = DEFAULT_LAYOUT) -> dict[int, str]:
    """``{document position: Entity value}`` for contiguous mentions (a discontinuous one is written as its
    full extent). At each word: openings (longest first), one-word mentions, then closings (the latest
    opened first), as GUM orders them; when a mention opens where another (crossing it) closes and no one-word
    mention separates them, the closing comes first, so that the brackets read back as written. Fields: the entity id, ``etype`` where the
    layout has it and ``head`` (1-based in the mention) where the layout has it; other fields are left out
    (CorefUD allows trailing fields to be omitted)."""
    names = layout.split("-")[1:]
    last = max((j for j, n in enumerate(names) if n in ("etype", "head")), default=-1)
    opens: dict[int, list[tuple[int, str]]] = {}
    closes: dict[int, list[tuple[int, str]]] = {}
    singles: dict[int, list[str]] = {}
    for m in mentions:
        a, b = m.start, m.end
        vals = []
        for n in names[:last + 1]:
            if n == "etype":
                vals.append(m.etype or "")
            elif n == "head":
                h = m.head if m.head is not None and a <= m.head <= b else a
                vals.append(str(h - a + 1))
            else:
                vals.append("")
        body = "-".join([m.eid] + vals)
        if a == b:
            singles.setdefault(a, []).append(f"({body})")
        else:
            opens.setdefault(a, []).append((b, f"({body}"))
            closes.setdefault(b, []).append((a, f"{m.eid})"))
    out: dict[int, str] = {}
    for k in sorted(set(opens) | set(closes) | set(singles)):
        o = "".join(t for _, t in sorted(opens.get(k, []), key=lambda x: -x[0]))
        s = "".join(singles.get(k, []))
        c = "".join(t for _, t in sorted(closes.get(k, []), key=lambda x: -x[0]))
        # '(2-place' + '1)' would read as one bracket '(2-place1)': crossing mentions close first
        out[k] = c + o if o and c and not s else o + s + c
    return out


def _set_item(misc: dict | None, key: str, value: str | None) -> dict | None:
    """``misc`` with ``key`` set (keeping its place, else in alphabetical place) or removed (``None``)."""
    items = dict(misc or {})
    if value is None:
        items.pop(key, None)
        return items or None
    if key in items:
        items[key] = value
        return items
    out, placed = {}, False
    for k, v in items.items():
        if not placed and k.lower() > key.lower():
            out[key] = value
            placed = True
        out[k] = v
    if not placed:
        out[key] = value
    return out


def write_mentions(doc: Sequence, mentions: Iterable[Mention], layout: str | None = None,
                   declare: bool = True) -> None:
    """Replace the coreference of one document (its sentences, changed in place) by ``mentions``.

    ``Entity``, ``SplitAnte`` and ``Bridge`` are removed from every word, then ``Entity`` is written from
    ``mentions`` (:func:`format_entity`) in ``layout`` (default: the document's ``# global.Entity``; when
    it has none, :data:`DEFAULT_LAYOUT`, declared on its first sentence unless ``declare`` is false: ``doc`` is
    then a later part of a document, whose first part declared it). Every other MISC item is kept.
    """
    declared = entity_layout(doc)
    layout = layout or declared or DEFAULT_LAYOUT
    if declared is None and doc and declare:
        doc[0].metadata["global.Entity"] = layout
    values = format_entity(mentions, layout)
    k = 0
    for s in doc:
        for tok in s.word_rows:
            misc = tok["misc"]
            if misc and any(key in misc for key in _RELATION_ITEMS) or k in values:
                for key in _RELATION_ITEMS[1:]:
                    misc = _set_item(misc, key, None)
                tok["misc"] = _set_item(misc, "Entity", values.get(k))
            k += 1


def entities(sentences: Sequence) -> list[dict]:
    """The entities of annotated sentences (``Entity=`` in MISC), per document in order of their first mention:
    ``{"document": k, "id": eid, "type": etype, "mentions": [{"sentence": s, "start": a, "end": b, "text": ...,
    "head": h}]}`` with ``s`` the sentence's index in ``sentences`` and ``a`` / ``b`` / ``h`` 1-based word ids in
    it (``end`` inclusive, in sentence ``end_sentence``, which differs from ``sentence`` only for a mention
    across sentences). ``head``: the layout's head field; without one (GUM's layout), the mention's syntactic
    head: its first word whose HEAD lies outside the mention (None without trees)."""
    out: list[dict] = []
    base = 0
    for k, doc in enumerate(documents(sentences)):
        where = [(base + si, i + 1) for si, s in enumerate(doc) for i in range(len(s))]
        forms = [f for s in doc for f in s.forms]
        heads = _document_heads(doc)
        base += len(doc)
        by_eid: dict[str, dict] = {}
        for m in read_mentions(doc):
            e = by_eid.setdefault(m.eid, {"document": k, "id": m.eid, "type": m.etype, "mentions": []})
            (s0, a), (s1, b) = where[m.start], where[m.end]
            e["mentions"].append({"sentence": s0, "start": a, "end": b, "end_sentence": s1,
                                  "text": " ".join(forms[w] for w in m.words),
                                  "head": where[h][1] if (h := _span_head(m, heads)) is not None else None})
        out += list(by_eid.values())
    return out


def _document_heads(doc: Sequence) -> list[int | None]:
    """Per word of a document, its head's document position (-1 = root; None without a tree)."""
    out: list[int | None] = []
    for s in doc:
        off = len(out)
        for w in s.word_rows:
            h = w.get("head")
            out.append(None if h is None else off + int(h) - 1)
    return out


def _span_head(m: Mention, heads: Sequence[int | None]) -> int | None:
    """``m.head``, else the first word of ``m`` whose head is outside ``m`` (None without trees)."""
    if m.head is not None:
        return m.head
    inside = set(m.words)
    return next((w for w in m.words if heads[w] is not None and heads[w] not in inside), None)
