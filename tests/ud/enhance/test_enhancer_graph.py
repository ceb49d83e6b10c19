"""The enhanced graph as a g2gt.Graph channel (several heads per node), networkx and PyG."""

from __future__ import annotations

import pytest

from g2gt import Graph
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.enhance import edges_from_networkx, enhanced_graph, enhanced_networkx, sentence_edges
from g2gt.ud.io.conllu import read_conllu


@pytest.fixture(scope="module")
def multi_head():
    """Dev-sample sentences where some word has several enhanced heads."""
    out = []
    for s in read_conllu(EWT_SAMPLE_DEV):
        heads = [d for d, _, _ in sentence_edges(s)]
        if len(heads) != len(set(heads)):
            out.append(s)
    assert len(out) > 20
    return out


def test_channel_holds_several_heads_per_word(multi_head):
    for s in multi_head[:20]:
        g = enhanced_graph(s)
        ch = g.channels["enhanced"]
        vocab = g.meta["enhanced_labels"]
        want = sorted((d - 1, h - 1, lab) for d, h, lab in sentence_edges(s) if isinstance(h, int) and h > 0)
        got = sorted((a, b, vocab[k]) for (a, b), k in zip(ch.edge_index.t().tolist(), ch.edge_label.tolist()))
        assert got == want
        roots = [d for d, h, _ in sentence_edges(s) if h == 0]
        assert [i + 1 for i, r in enumerate(g.node_features["enhanced_root"]) if r] == roots


def test_graph_round_trips_through_networkx_and_pyg(multi_head):
    for s in multi_head[:10]:
        g = enhanced_graph(s)
        assert Graph.from_networkx(g.to_networkx()) == g
        assert Graph.from_pyg(g.to_pyg()) == g
        data = g.to_pyg()
        assert data.edge_index_enhanced.shape[1] == g.channels["enhanced"].edge_label.numel()


def test_multidigraph_has_the_deps_edges_and_empty_nodes():
    sents = [s for s in read_conllu(EWT_SAMPLE_TRAIN)
             if any(isinstance(t["id"], tuple) and t["id"][1] == "." for t in s.rows)]
    for s in sents:
        G = enhanced_networkx(s, basic=True)
        assert edges_from_networkx(G) == sentence_edges(s)
        empties = [n for n, a in G.nodes(data=True) if a["empty"]]
        assert empties and all(G.in_degree(e) >= 1 for e in empties)
        basic = [(h, d) for h, d, a in G.edges(data=True) if a["layer"] == "basic"]
        assert sorted(basic) == sorted((int(h), i) for i, h in enumerate(s.heads, 1))
