r"""Case-marked enhanced labels as *templates* filled from the basic tree.

Enhanced UD adds the case marker of a dependent to its relation: ``obl:in``, ``nmod:of``,
``advcl:if``, ``conj:and``, ``obl:because_of``. Predicting these as closed classes would
never produce a preposition unseen in training, so a label whose last part equals the
*marker* of its dependent is stored as a template, ``obl:<case>``, and filled back from
the (gold or predicted) basic tree at decoding time:

    template(label, d) = base + ":<case>"   if label = base + ":" + marker(d)
                       = label               otherwise
    fill(template, d)  = base + ":" + marker(d)  if marker(d) is a valid label part
                       = base                     otherwise

``marker(d)`` (:func:`sentence_markers`) reads the basic tree around the dependent ``d``:

* for ``conj`` labels, the ``cc`` child of ``d`` (``and``, ``or``); a conjunct without one
  takes the ``cc`` of the nearest later conjunct of the same head, then of an earlier one
  (``A, B and C`` gives ``conj:and`` to ``B`` too);
* otherwise the ``case`` / ``mark`` child of ``d`` closest to ``d`` (``out of`` gives ``of``,
  ``for him to`` gives ``to``); else an ``advmod`` child that starts the phrase and whose
  FEATS say ``PronType=Int`` or ``Rel`` (``when``, ``where``); a conjunct without any takes
  its first conjunct's marker (``in Paris and London``: ``London`` gets ``obl:in``).

The marker text is the lowercased form of the marker word followed by its ``fixed``
dependents, joined with ``_`` (``because_of``, ``according_to``, ``as_well_as``); for a
``cc`` marker the lemma is used (``&`` -> ``and``). A marker is *valid* when every part is
lowercase letters (the UD validator's rule for the case part of an enhanced relation).

On EWT train 27,644 of the 28,078 case-marked labels (98.5 %; ``obl/nmod/advcl/acl/conj`` with a last
part that is not a subtype such as ``relcl`` or ``poss``) become templates, and the 325 distinct DEPS
labels become 152 classes (:func:`g2gt.ud.enhance.data.template_coverage`). The rest stay literal
(``conj:slash``, ``nmod:versus`` for "vs.", annotation noise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

__all__ = [
    "PLACEHOLDER", "MARKED_RELATIONS", "TreeView", "sentence_markers", "template_label", "fill_template",
    "is_template", "valid_marker",
]

PLACEHOLDER = "<case>"
#: relations whose enhanced label may carry a case marker (the part before ``:<case>``)
MARKED_RELATIONS = ("obl", "nmod", "advcl", "acl", "conj")
_CASE_RELS = ("case", "mark")


@dataclass
class TreeView:
    """The basic tree of one sentence as plain lists over words ``1..n`` (index ``i - 1``).

    ``heads`` 1-based (0 = root), ``deprels`` full relations (``nmod:poss``), ``forms``,
    ``lemmas`` (``"_"`` / None = unknown) and ``feats`` (FEATS dicts or None).
    """

    heads: Sequence[int]
    deprels: Sequence[str]
    forms: Sequence[str]
    lemmas: Sequence[str | None]
    feats: Sequence[dict | None]

    @classmethod
    def of(cls, sentence, heads: Sequence[int] | None = None, deprels: Sequence[str] | None = None) -> "TreeView":
        """From a :class:`g2gt.ud.io.Sentence` (its HEAD / DEPREL unless ``heads`` / ``deprels`` are given)."""
        words = sentence.word_rows
        return cls([int(h or 0) for h in (sentence.heads if heads is None else heads)],
                   [r or "_" for r in (sentence.deprels if deprels is None else deprels)],
                   [t["form"] for t in words], [t["lemma"] for t in words],
                   [t["feats"] if isinstance(t["feats"], dict) else None for t in words])

    def __len__(self) -> int:
        return len(self.heads)


def valid_marker(text: str | None) -> bool:
    """True when ``text`` can be the case part of an enhanced relation: ``_``-joined parts of
    lowercase letters (``because_of``; not ``vs.``, ``/``, ``'s`` or ``2``)."""
    if not text:
        return False
    return all(part and all(ch.isalpha() and not ch.isupper() for ch in part) for part in text.split("_"))


def _univ(rel: str) -> str:
    return rel.split(":", 1)[0]


def sentence_markers(tree: TreeView) -> tuple[list[str | None], list[str | None]]:
    """``(case_markers, cc_markers)``: for every word ``i`` (list index ``i - 1``) the marker text a
    ``:<case>`` template of a dependent ``i`` is filled with, for non-``conj`` and ``conj`` labels
    (None = no marker). See the module docstring for the rules."""
    n = len(tree)
    kids: list[list[int]] = [[] for _ in range(n + 1)]
    for i, h in enumerate(tree.heads, 1):
        if 0 <= h <= n:
            kids[h].append(i)
    rel = [_univ(r) for r in tree.deprels]

    def text(m: int, lemma: bool) -> str:
        words = sorted([m] + [c for c in kids[m] if tree.deprels[c - 1] == "fixed"])
        out = []
        for w in words:
            lem = tree.lemmas[w - 1]
            out.append((lem if lemma and lem not in (None, "_", "") else tree.forms[w - 1]).lower())
        return "_".join(out)

    def own_case(d: int) -> str | None:
        ms = [c for c in kids[d] if rel[c - 1] in _CASE_RELS]
        if ms:
            before = [c for c in ms if c < d]
            return text(max(before) if before else min(ms), False)
        first = min(kids[d] + [d])
        if first != d and rel[first - 1] == "advmod":
            feats = tree.feats[first - 1] or {}
            if feats.get("PronType") in ("Int", "Rel"):
                return text(first, False)
        return None

    def own_cc(d: int) -> str | None:
        ms = [c for c in kids[d] if rel[c - 1] == "cc"]
        return text(min(ms), True) if ms else None

    own = [own_case(d) for d in range(1, n + 1)]
    case: list[str | None] = list(own)
    cc: list[str | None] = [own_cc(d) for d in range(1, n + 1)]
    for d in range(1, n + 1):  # conjuncts without a marker of their own
        if rel[d - 1] != "conj":
            continue
        if cc[d - 1] is None:
            h = tree.heads[d - 1]
            sibs = [c for c in kids[h] if rel[c - 1] == "conj" and cc[c - 1] is not None] if 0 <= h <= n else []
            later = [c for c in sibs if c > d]
            earlier = [c for c in sibs if c < d]
            if later or earlier:
                cc[d - 1] = cc[(min(later) if later else max(earlier)) - 1]
        seen, x = {d}, d
        while case[d - 1] is None and rel[x - 1] == "conj" and 1 <= tree.heads[x - 1] <= n:
            x = tree.heads[x - 1]
            if x in seen:
                break
            seen.add(x)
            case[d - 1] = own[x - 1]
    return case, cc


def is_template(label: str) -> bool:
    return label.endswith(":" + PLACEHOLDER)


def _marker_for(label_base: str, d: int, markers: tuple[list[str | None], list[str | None]]) -> str | None:
    case, cc = markers
    return (cc if _univ(label_base) == "conj" else case)[d - 1]


def template_label(label: str, d: int, markers: tuple[list[str | None], list[str | None]]) -> str:
    """The template of enhanced ``label`` on dependent ``d`` (1-based): ``base:<case>`` when the
    label's last part is ``d``'s marker (see :func:`sentence_markers`), else ``label`` itself."""
    base, sep, last = label.rpartition(":")
    if not sep or _univ(base) not in MARKED_RELATIONS:
        return label
    marker = _marker_for(base, d, markers)
    return f"{base}:{PLACEHOLDER}" if marker is not None and marker == last and valid_marker(marker) else label


def fill_template(template: str, d: int, markers: tuple[list[str | None], list[str | None]]) -> str:
    """Inverse of :func:`template_label` on the same tree: ``base:<case>`` -> ``base:marker`` (just
    ``base`` when ``d`` has no valid marker); other labels are returned unchanged."""
    if not is_template(template):
        return template
    base = template[: -len(PLACEHOLDER) - 1]
    marker = _marker_for(base, d, markers)
    return f"{base}:{marker}" if valid_marker(marker) else base
