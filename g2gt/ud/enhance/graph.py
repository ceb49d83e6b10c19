"""The enhanced graph in Python: a :class:`g2gt.Graph` channel, networkx and PyTorch Geometric.

* :func:`enhanced_channel`: the word-to-word enhanced edges as an :class:`g2gt.core.graph.EdgeChannel` with
  several heads per node. Edges go **dependent -> head** (the direction of ``rel↑`` in the basic ``deps``
  channel), labelled with the ids of a plain :class:`g2gt.core.LabelVocab` of relation names; edges from
  ROOT are left out, as :func:`g2gt.core.graph.edges_from_heads` leaves out the basic root (the node feature
  ``enhanced_root`` marks them). One direction only, because enhanced graphs have 2-cycles
  (``acl:relcl`` one way, ``nsubj`` back).
* :func:`enhanced_graph`: a sentence as a :class:`g2gt.Graph` with channels ``position``, ``deps``
  (the basic tree) and ``enhanced``; :meth:`g2gt.Graph.to_networkx` / :meth:`g2gt.Graph.to_pyg` and back
  work as for the basic tree (``edge_index_enhanced`` / ``edge_type_enhanced`` in PyG).
* :func:`enhanced_networkx`: a :class:`networkx.MultiDiGraph` with readable labels: nodes ``0`` (ROOT),
  ``1..n`` and empty nodes ``"8.1"``; edges **head -> dependent** keyed by relation (``label`` attribute),
  ``layer="enhanced"`` and, with ``basic=True``, the basic tree as ``layer="basic"`` edges too.
  :func:`edges_from_networkx` reads the enhanced edges back.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import torch

from ...core.graph import ChainChannel, EdgeChannel, Graph, LabelVocab, edges_from_heads
from .data import Head, deps_sort_key, sentence_edges

__all__ = ["enhanced_channel", "enhanced_graph", "enhanced_networkx", "edges_from_networkx"]


def enhanced_channel(edges: Iterable[tuple[int, Head, str]], vocab: LabelVocab) -> EdgeChannel:
    """Word-to-word enhanced edges ``(d, h, relation)`` (1-based words, ``h = 0`` = ROOT) -> an
    :class:`EdgeChannel` over 0-based word nodes, edge ``d-1 -> h-1`` labelled ``vocab[relation]``
    (unknown relations get id 0 and are dropped). ROOT and empty-node edges are left out."""
    src, dst, lab = [], [], []
    for d, h, rel in edges:
        if isinstance(h, int) and h > 0 and vocab.get(rel, 0) > 0:
            src.append(d - 1)
            dst.append(h - 1)
            lab.append(vocab[rel])
    return EdgeChannel(torch.tensor([src, dst], dtype=torch.long).reshape(2, -1), torch.tensor(lab, dtype=torch.long),
                       len(vocab))


def enhanced_graph(sentence, edges: Sequence[tuple[int, Head, str]] | None = None,
                   enhanced_vocab: LabelVocab | None = None, rel_vocab: LabelVocab | None = None,
                   max_distance: int = 8) -> Graph:
    """A sentence (basic tree + enhanced graph) as a :class:`g2gt.Graph` over its words.

    ``edges``: the enhanced edges (default: the sentence's DEPS, :func:`sentence_edges`). Vocabularies
    default to the sentence's own relations, sorted (``rel_vocab``: :meth:`LabelVocab.for_dependencies`).
    Node features: ``upos`` and ``enhanced_root`` (1 where the word has the enhanced head 0).
    """
    edges = list(sentence_edges(sentence) if edges is None else edges)
    rels = [r or "_" for r in sentence.deprels]
    if rel_vocab is None:
        rel_vocab = LabelVocab.for_dependencies(sorted(set(rels)))
    if enhanced_vocab is None:
        enhanced_vocab = LabelVocab(sorted({rel for _, _, rel in edges}))
    channels: dict = {"position": ChainChannel(max_distance)}
    if all(h is not None for h in sentence.heads):
        channels["deps"] = edges_from_heads([int(h) for h in sentence.heads], rels, rel_vocab)
    channels["enhanced"] = enhanced_channel(edges, enhanced_vocab)
    roots = {d for d, h, _ in edges if h == 0}
    feats = {"upos": list(sentence.upos), "enhanced_root": [int(i in roots) for i in range(1, len(sentence) + 1)]}
    meta = {"sent_id": sentence.sent_id, "enhanced_labels": enhanced_vocab.to_list()}
    return Graph(list(sentence.forms), channels, feats, meta)


def enhanced_networkx(sentence, edges: Sequence[tuple[int, Head, str]] | None = None, basic: bool = False):
    """A :class:`networkx.MultiDiGraph` of the sentence's enhanced graph (see the module docstring)."""
    import networkx as nx

    edges = list(sentence_edges(sentence) if edges is None else edges)
    G = nx.MultiDiGraph(sent_id=sentence.sent_id, text=sentence.text)
    G.add_node(0, form="<root>", upos=None, empty=False)
    for i, tok in enumerate(sentence.word_rows, 1):
        G.add_node(i, form=tok["form"], lemma=tok["lemma"], upos=tok["upos"], empty=False)
    for tok in sentence.rows:
        tid = tok["id"]
        if isinstance(tid, tuple) and tid[1] == ".":
            G.add_node("".join(str(x) for x in tid), form=tok["form"], lemma=tok["lemma"], upos=tok["upos"],
                       empty=True)
            for lab, h in tok["deps"] if isinstance(tok["deps"], list) else []:
                head = "".join(str(x) for x in h) if isinstance(h, tuple) else h
                G.add_edge(head, "".join(str(x) for x in tid), key=lab, label=lab, layer="enhanced")
    for d, h, lab in edges:
        G.add_edge(h, d, key=lab, label=lab, layer="enhanced")
    if basic:
        for i, (h, r) in enumerate(zip(sentence.heads, sentence.deprels), 1):
            if h is not None:
                G.add_edge(int(h), i, key=f"basic:{r}", label=r, layer="basic")
    return G


def edges_from_networkx(G) -> list[tuple[int, Head, str]]:
    """The word dependents' enhanced edges ``(d, h, relation)`` of :func:`enhanced_networkx`'s graph, sorted
    as DEPS is (by dependent, head, relation)."""
    out = [(d, h, data["label"]) for h, d, data in G.edges(data=True)
           if data.get("layer") == "enhanced" and isinstance(d, int)]
    return sorted(out, key=lambda e: (e[0], deps_sort_key(e[1]), e[2]))
