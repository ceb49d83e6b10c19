"""From the model's scores to mentions and entities.

For one window (:meth:`g2gt.ud.coref.model.CorefModel.predict`):

1. every word whose head tag is not 0 heads a mention; its extent ``[start, end]`` is the argmax of the
   start / end scores (inside its subtree);
2. mention heads are visited left to right; each takes its best-scoring earlier mention head as antecedent
   when that score is above the threshold (0, the trained score of "no antecedent"), else it starts a new
   entity. With ``genders`` (the ``Gender`` feature of each word that is a personal pronoun, from the parse),
   an antecedent whose entity already holds a personal pronoun of another gender is passed over for the next
   best one ("Mary met John. She gave him her book.": ``him`` cannot join ``She``'s entity); nouns and names
   carry no constraint;
3. the entities are the connected components of the antecedent links (:func:`clusters_from_links`);
   a mention without links is a singleton entity. An entity's type is the type whose probabilities,
   summed over its mentions' head tags, are the highest (GUM gives every mention of an entity its type).

A word heads at most one mention, so two mentions differ in their heads (their extents may coincide).
"""

from __future__ import annotations

from typing import Sequence

import torch

from .io import Mention

__all__ = ["clusters_from_links", "decode_window"]


def clusters_from_links(n: int, links: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Connected components of ``n`` items joined by ``links`` ``(i, j)``, each sorted, in order of their first
    item (union-find)."""
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for i, j in links:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for k in range(n):
        groups.setdefault(find(k), []).append(k)
    return sorted(groups.values(), key=lambda g: g[0])


def decode_window(pred: dict[str, torch.Tensor], b: int, n: int, offset: int, etypes: Sequence[str],
                  first_eid: int = 1, threshold: float = 0.0,
                  genders: Sequence[str | None] | None = None) -> list[Mention]:
    """Mentions with entity ids (``first_eid``, ``first_eid + 1`` ... as strings, in order of their first
    mention) of window ``b`` of ``n`` words starting at document position ``offset`` (module docstring).
    ``threshold``: the score of "no antecedent" (0 as trained; lower links more). ``genders``: per word of
    the window, a personal pronoun's gender or None (``DocExample.genders``; None: no constraint)."""
    tag = pred["tag"][b, :n].tolist()
    heads = [i for i in range(n) if tag[i] > 0]
    if not heads:
        return []
    start, end = pred["start"][b, :n].tolist(), pred["end"][b, :n].tolist()
    ant = pred["antecedent"][b, :n, :n]
    idx = torch.tensor(heads, device=ant.device)
    sub = ant[idx][:, idx]  # [M, M], -inf on and above the diagonal
    links = []
    if len(heads) > 1 and genders is None:
        best, arg = sub.max(-1)
        links = [(k, int(arg[k])) for k in range(1, len(heads)) if float(best[k]) > threshold]
    elif len(heads) > 1:
        links = _agreeing_links(sub, [genders[h] for h in heads], threshold)
    groups = clusters_from_links(len(heads), links)
    probs = pred["tag_probs"][b, :n, 1:]  # [n, T - 1]: the mention types
    out: list[Mention] = []
    for g_i, group in enumerate(groups):
        t = int(probs[[heads[k] for k in group]].sum(0).argmax())  # one type per entity (summed votes)
        for k in group:
            h = heads[k]
            out.append(Mention(str(first_eid + g_i), list(range(offset + start[h], offset + end[h] + 1)),
                               etypes[t] if 0 <= t < len(etypes) else "", "", offset + h))
    out.sort(key=lambda m: (m.start, -m.end))
    return out


def _agreeing_links(scores: torch.Tensor, genders: Sequence[str | None], threshold: float) -> list[tuple[int, int]]:
    """Left to right, each mention's best antecedent above ``threshold`` whose entity so far holds no personal
    pronoun of another gender (``scores [M, M]``, -inf on and above the diagonal)."""
    M = len(genders)
    root = list(range(M))
    held: list[set] = [{g} if g else set() for g in genders]  # the pronoun genders of each entity (at its root)

    def find(a: int) -> int:
        while root[a] != a:
            root[a] = root[root[a]]
            a = root[a]
        return a

    links = []
    order = torch.argsort(scores, dim=-1, descending=True).tolist()
    values = scores.tolist()
    for k in range(1, M):
        for j in order[k][:k]:
            if not values[k][j] > threshold:
                break
            rj, rk = find(j), find(k)
            if len(held[rj] | held[rk]) <= 1:
                links.append((k, j))
                root[rk] = rj
                held[rj] |= held[rk]
                break
    return links
