r"""Coreference scores of the CRAC shared tasks: MUC, B³, CEAF-e and their mean, the CoNLL F1.

Computed as the official CorefUD scorer (``corefud-scorer.py``) computes them, per document then summed:

1. a mention is its set of words plus its head; in GUM's layout (no ``head`` field) the head is the first
   word. Duplicate mentions of one entity count once; without ``singletons`` every entity of one mention is
   dropped, from the key and from the response, before anything else.
2. **matching** key and response mentions: first the identical ones (same words, and same head with
   ``match="head"``); then, among the rest, a one-to-one assignment that maximises the summed similarity
   (the Hungarian algorithm), pairs of similarity 0 left unmatched:

   * ``head``: same head, similarity ``|K ∩ R| / |K|``;
   * ``partial``: the key's head inside the response and the response inside the key, ``|K ∩ R| / |K|``;
   * ``exact``: identical words only.
3. with response mentions renamed to their matched key mentions:

   * MUC: recall ``Σ_K (|K| - p(K)) / Σ_K (|K| - 1)``, ``p(K)`` = number of response entities (and unmatched
     mentions) that cover ``K``; precision the same with key and response swapped;
   * B³: recall ``Σ_K Σ_R |K ∩ R|² / |K| / Σ_K |K|``, precision swapped;
   * CEAF-e: ``φ(K, R) = 2 |K ∩ R| / (|K| + |R|)``, the best one-to-one entity alignment ``g*``;
     recall ``Σ φ(K, g*(K)) / #key entities``, precision ``/ #response entities``;
   * CoNLL F1: the mean of the three F1 values.

Scores are in percent. :func:`coref_scores` takes documents of :class:`g2gt.ud.coref.io.Mention` lists;
:func:`score_files` reads two CoNLL-U files.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

from .io import Mention

__all__ = ["coref_scores", "score_files", "assignment", "mention_scores", "coref_report", "coref_table", "has_entities",
           "MATCHES"]

MATCHES = ("head", "partial", "exact")
_Key = tuple  # (words tuple, head)


def _clusters(mentions: Iterable[Mention], match: str, singletons: bool) -> list[list[_Key]]:
    by_eid: dict[str, list[_Key]] = {}  # entities in order of their first mention, as udapi orders them
    for m in sorted(mentions, key=lambda m: (m.start, -len(m.words), m.end, m.eid)):
        head = m.head if m.head is not None else m.start
        k = (tuple(m.words), head)
        c = by_eid.setdefault(m.eid, [])
        if all(_eq(k, x, match) is False for x in c):
            c.append(k)
    return [c for c in by_eid.values() if singletons or len(c) > 1]


def _eq(a: _Key, b: _Key, match: str) -> bool:
    return a == b if match == "head" else a[0] == b[0]


def _norm(k: _Key, match: str) -> _Key:
    """The identity of a mention under ``match`` (head match compares the head too)."""
    return k if match == "head" else (k[0], None)


def assignment(weights: dict[tuple[int, int], float]) -> list[tuple[int, int]]:
    """A one-to-one assignment of rows to columns maximising the summed weight of the given (positive)
    entries; pairs of weight 0 are not returned. The entries are split into connected components first,
    each solved by the Hungarian algorithm (``O(k³)`` for a component of ``k`` rows and columns)."""
    rows: dict[int, list[int]] = defaultdict(list)
    cols: dict[int, list[int]] = defaultdict(list)
    for (r, c) in weights:
        rows[r].append(c)
        cols[c].append(r)
    seen_r: set[int] = set()
    out: list[tuple[int, int]] = []
    for r0 in sorted(rows):
        if r0 in seen_r:
            continue
        comp_r, comp_c, stack = {r0}, set(), [("r", r0)]
        while stack:
            kind, x = stack.pop()
            nxt = rows[x] if kind == "r" else cols[x]
            for y in nxt:
                target = comp_c if kind == "r" else comp_r
                if y not in target:
                    target.add(y)
                    stack.append(("c" if kind == "r" else "r", y))
        seen_r |= comp_r
        rs, cs = sorted(comp_r), sorted(comp_c)
        w = [[weights.get((r, c), 0.0) for c in cs] for r in rs]
        for i, j in _hungarian(w):
            if w[i][j] > 0:
                out.append((rs[i], cs[j]))
    return out


def _hungarian(w: list[list[float]]) -> list[tuple[int, int]]:
    """Maximum-weight assignment of a dense ``r x c`` matrix (shortest augmenting paths with potentials)."""
    r, c = len(w), len(w[0]) if w else 0
    n = max(r, c)
    big = max((x for row in w for x in row), default=0.0)
    cost = [[(big - w[i][j]) if i < r and j < c else big for j in range(n)] for i in range(n)]
    inf = float("inf")
    u, v, p, way = [0.0] * (n + 1), [0.0] * (n + 1), [0] * (n + 1), [0] * (n + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (n + 1)
        used = [False] * (n + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], inf, 0
            for j in range(1, n + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(n + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    return [(p[j] - 1, j - 1) for j in range(1, n + 1) if p[j] and p[j] - 1 < r and j - 1 < c]


def _similarity(k: _Key, s: _Key, match: str) -> float:
    kw, sw = set(k[0]), set(s[0])
    if match == "head":
        return len(kw & sw) / len(kw) if k[1] == s[1] else 0.0
    if match == "partial":
        return len(kw & sw) / len(kw) if k[1] in sw and sw <= kw else 0.0
    return 0.0


def _align(key: list[list[_Key]], sys: list[list[_Key]], match: str) -> dict:
    """Response mention -> matched key mention and back (identical ones map to themselves)."""
    K = {_norm(m, match): m for c in key for m in c}
    S = {_norm(m, match): m for c in sys for m in c}
    out = {}
    rest_k = sorted((m for n, m in K.items() if n not in S), key=_order)
    rest_s = sorted((m for n, m in S.items() if n not in K), key=_order)
    if match != "exact" and rest_k and rest_s:
        by_head: dict = defaultdict(list)
        for j, s in enumerate(rest_s):
            for w in (s[0] if match == "partial" else (s[1],)):
                by_head[w].append(j)
        weights = {}
        for i, k in enumerate(rest_k):
            for j in by_head.get(k[1], ()):
                x = _similarity(k, rest_s[j], match)
                if x > 0:
                    weights[(i, j)] = x
        for i, j in assignment(weights):
            out[("k", _norm(rest_k[i], match))] = _norm(rest_s[j], match)
            out[("s", _norm(rest_s[j], match))] = _norm(rest_k[i], match)
    return out


def _order(m: _Key) -> tuple:
    return (m[0][0], m[0][-1], len(m[0]))


def _doc_counts(key: list[list[_Key]], sys: list[list[_Key]], match: str) -> dict[str, list[float]]:
    al = _align(key, sys, match)
    kn = [[_norm(m, match) for m in c] for c in key]
    sn = [[_norm(m, match) for m in c] for c in sys]
    k_of = {m: i for i, c in enumerate(kn) for m in c}
    s_of = {m: i for i, c in enumerate(sn) for m in c}

    def mapped(m, side):  # a mention renamed to its partner on the other side
        return al.get((side, m), m)

    def muc(clusters, other_of, side):  # a singleton entity adds nothing, with or without singletons
        tp = p = 0
        for c in clusters:
            p += len(c) - 1
            linked, missing = set(), 0
            for m in c:
                m = mapped(m, side)
                if m in other_of:
                    linked.add(other_of[m])
                else:
                    missing += 1
            tp += len(c) - missing - len(linked)
        return tp, p

    def b3(clusters, other_of, side):
        num = den = 0.0
        for c in clusters:
            counts: dict[int, int] = defaultdict(int)
            for m in c:
                m = mapped(m, side)
                if m in other_of:
                    counts[other_of[m]] += 1
            num += sum(v * v for v in counts.values()) / len(c)
            den += len(c)
        return num, den

    mr, mrd = muc(kn, s_of, "k")
    mp, mpd = muc(sn, k_of, "s")
    br, brd = b3(kn, s_of, "k")
    bp, bpd = b3(sn, k_of, "s")
    weights = {}
    s_all: dict = defaultdict(list)  # CEAF-e counts a mention in every response entity that holds it
    for j, c in enumerate(sn):
        for m in c:
            s_all[m].append(j)
    for i, c in enumerate(kn):  # CEAF-e: phi4 of key entity i and response entity j
        shared: dict[int, int] = defaultdict(int)
        for m in c:
            for j in s_all.get(mapped(m, "k"), ()):
                shared[j] += 1
        for j, x in shared.items():
            weights[(i, j)] = 2.0 * x / (len(c) + len(sn[j]))
    sim = sum(weights[p] for p in assignment(weights))
    k_words = {m for c in kn for m in c}
    s_words = {m for c in sn for m in c}
    matched = len(k_words & s_words) + sum(1 for side, _ in al if side == "k")
    return {"muc": [mp, mpd, mr, mrd], "bcub": [bp, bpd, br, brd], "ceafe": [sim, len(sn), sim, len(kn)],
            "mentions": [matched, len(s_words), matched, len(k_words)]}


def _f1(pn: float, pd: float, rn: float, rd: float) -> tuple[float, float, float]:
    p = pn / pd if pd else 0.0
    r = rn / rd if rd else 0.0
    return 100 * p, 100 * r, (200 * p * r / (p + r) if p + r else 0.0)


def coref_scores(key_docs: Sequence[Sequence[Mention]], sys_docs: Sequence[Sequence[Mention]], match: str = "head",
                 singletons: bool = False) -> dict[str, float]:
    """Scores (percent) of response documents against key documents (lists of mentions, aligned by position):
    ``{metric}_{p,r,f1}`` for ``muc``, ``bcub``, ``ceafe`` and ``mentions`` (mention matching, as matched in
    step 2 of the module docstring), and ``conll`` = the mean of the three F1 values."""
    if match not in MATCHES:
        raise ValueError(f"match must be one of {', '.join(MATCHES)}, got {match!r}")
    if len(key_docs) != len(sys_docs):
        raise ValueError(f"{len(key_docs)} key documents but {len(sys_docs)} response documents (expected the same "
                         "documents in the same order)")
    tot: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for k, s in zip(key_docs, sys_docs):
        for name, c in _doc_counts(_clusters(k, match, singletons), _clusters(s, match, singletons), match).items():
            tot[name] = [a + b for a, b in zip(tot[name], c)]
    out: dict[str, float] = {}
    for name in ("muc", "bcub", "ceafe", "mentions"):
        p, r, f = _f1(*tot[name])
        out.update({f"{name}_p": p, f"{name}_r": r, f"{name}_f1": f})
    out["conll"] = (out["muc_f1"] + out["bcub_f1"] + out["ceafe_f1"]) / 3
    return out


def mention_scores(key_docs, sys_docs) -> dict[str, float]:
    """Mention detection with head match and singletons, and the entity-type accuracy (percent) on the
    matched mentions (``mention_f1``, ``type_acc``)."""
    n_k = n_s = hit = typed = 0
    for k, s in zip(key_docs, sys_docs):
        kc = _clusters(k, "head", True)
        sc = _clusters(s, "head", True)
        ktype = {(tuple(m.words), m.head if m.head is not None else m.start): m.etype for m in k}
        stype = {(tuple(m.words), m.head if m.head is not None else m.start): m.etype for m in s}
        al = _align(kc, sc, "head")
        km = {m for c in kc for m in c}
        sm = {m for c in sc for m in c}
        n_k += len(km)
        n_s += len(sm)
        for m in km:
            partner = m if m in sm else al.get(("k", m))
            if partner is not None:
                hit += 1
                typed += ktype.get(m) == stype.get(partner)
    p, r, f = _f1(hit, n_s, hit, n_k)
    return {"mention_p": p, "mention_r": r, "mention_f1": f, "type_acc": 100.0 * typed / hit if hit else 0.0}


def score_files(key_path: str, sys_path: str, match: str = "head", singletons: bool = False) -> dict[str, float]:
    """:func:`coref_scores` of two CoNLL-U files with ``Entity=`` annotations (the same documents and words)."""
    from ..io.conllu import read_conllu
    from .io import documents, read_mentions

    kd = documents(read_conllu(key_path))
    sd = documents(read_conllu(sys_path))
    for a, b in zip(kd, sd):
        fa = [f for s in a for f in s.forms]
        fb = [f for s in b for f in s.forms]
        if fa != fb:
            raise ValueError(f"{key_path} and {sys_path} differ in the words of a document (expected the same "
                             "sentences and words, with different Entity annotations)")
    return coref_scores([read_mentions(d) for d in kd], [read_mentions(d) for d in sd], match, singletons)


def has_entities(sentences) -> bool:
    """True when some word of ``sentences`` has an ``Entity`` item in MISC."""
    return any("Entity" in (t["misc"] or {}) for s in sentences for t in s.word_rows)


def coref_report(gold, pred) -> dict:
    """Every score of :func:`g2gt.ud.coref.metrics.coref_scores` for the three matchings, with and without
    singletons, plus :func:`mention_scores`: ``{"head": {...}, "head+singletons": {...}, ..., "mentions": {...}}``.
    ``gold`` / ``pred``: sentences (the same documents) with ``Entity=`` annotations; where a predicted document
    has other words (raw text tokenised by the pipeline) its mentions are moved onto the gold words by
    characters (:func:`g2gt.ud.coref.align.project_mentions`)."""
    from .io import documents, read_mentions

    from .align import project_mentions

    kd, sd = documents(gold), documents(pred)
    if len(kd) != len(sd):
        raise ValueError(f"coreference scores need the same documents ('# newdoc') in both files: gold has "
                         f"{len(kd)}, the prediction {len(sd)}")
    km = [read_mentions(d) for d in kd]
    sm = []
    for a, b in zip(kd, sd):  # another tokenisation (raw text): mentions moved onto the gold words
        fa, fb = [f for s in a for f in s.forms], [f for s in b for f in s.forms]
        ms = read_mentions(b)
        sm.append(ms if fa == fb else project_mentions(ms, fb, fa))
    out: dict = {}
    for match in MATCHES:
        for sg in (False, True):
            out[match + ("+singletons" if sg else "")] = coref_scores(km, sm, match, sg)
    out["mentions"] = mention_scores(km, sm)
    return out


def coref_table(report: dict) -> str:
    """A text table of :func:`coref_report` (F1 of MUC, B³, CEAF-e and CoNLL per matching)."""
    lines = ["Coreference (CorefUD, as the CRAC scorer; primary: CoNLL F1, head match, no singletons)",
             f"{'matching':<24}{'MUC':>8}{'B3':>8}{'CEAF-e':>8}{'CoNLL':>8}"]
    for name, s in report.items():
        if name == "mentions":
            continue
        lines.append(f"{name:<24}{s['muc_f1']:>8.2f}{s['bcub_f1']:>8.2f}{s['ceafe_f1']:>8.2f}{s['conll']:>8.2f}")
    m = report["mentions"]
    lines.append(f"mentions (head match, with singletons): P {m['mention_p']:.2f} R {m['mention_r']:.2f} "
                 f"F1 {m['mention_f1']:.2f}; entity type accuracy on matched mentions {m['type_acc']:.2f}%")
    return "\n".join(lines)
