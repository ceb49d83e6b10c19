"""Graph, channels, label vocabularies and networkx / PyG round trips."""

from __future__ import annotations

import networkx as nx
import pytest
import torch

from g2gt.core import ChainChannel, EdgeChannel, Graph, LabelVocab, chain_graph, edges_from_heads, relative_position_labels
from g2gt.core.graph import DOWN, UP, merge_label_sizes, num_chain_labels


def test_label_vocab_dependencies_and_save_load():
    v = LabelVocab.for_dependencies(["nsubj", "obj", "root"])
    assert v.name(0) == "<none>" and len(v) == 7
    assert v["nsubj" + UP] == 1 and v["nsubj" + DOWN] == 2 and v.name(4) == "obj" + DOWN
    assert v.get("amod" + UP) == 0 and "obj" + UP in v and "amod" not in v
    with pytest.raises(KeyError, match="unknown relation label"):
        v["amod" + UP]
    saved = v.to_list()
    assert LabelVocab.from_list(saved) == v and LabelVocab.from_list(saved) is not v
    assert v.add("nsubj" + UP) == 1 and len(v) == 7  # adding twice is a no-op
    with pytest.raises(ValueError, match="must start with"):
        LabelVocab.from_list(["nsubj"])


@pytest.mark.parametrize("n,k", [(1, 1), (5, 2), (9, 3), (4, 10)])
def test_chain_labels_formula(n, k):
    g = chain_graph(n, k)
    lab = g.label_matrix("position")
    assert lab.shape == (n, n) and lab.dtype == torch.long
    for i in range(n):
        for j in range(n):
            assert int(lab[i, j]) == max(-k, min(k, j - i)) + k + 1
    assert int(lab.min()) >= 1 and int(lab.max()) < num_chain_labels(k) == g.channels["position"].num_labels
    # incremental-decoding rows: query_offset shifts the rows
    start = max(0, n - 2)
    part = relative_position_labels(n - start, k, n_keys=n, query_offset=start)
    assert torch.equal(part, lab[start:])


def test_chain_graph_tokens_and_errors():
    g = chain_graph(["a", "b", "c"], 2, name="pos")
    assert g.tokens == ["a", "b", "c"] and list(g.channels) == ["pos"] and len(g) == 3
    with pytest.raises(ValueError, match="max_distance"):
        chain_graph(3, 0)


def test_edges_from_heads():
    v = LabelVocab.for_dependencies(["nsubj", "obj", "punct"])
    # "she eats apples ." : she <-nsubj- eats (root), apples <-obj- eats, . <-punct- eats
    heads, rels = [2, 0, 2, 2], ["nsubj", "root", "obj", "punct"]
    ch = edges_from_heads(heads, rels, v)
    dense = ch.dense(4)
    assert ch.num_labels == len(v)
    assert dense[0, 1] == v["nsubj" + UP] and dense[1, 0] == v["nsubj" + DOWN]
    assert dense[2, 1] == v["obj" + UP] and dense[1, 2] == v["obj" + DOWN]
    assert dense[3, 1] == v["punct" + UP] and dense[1, 3] == v["punct" + DOWN]
    assert int((dense > 0).sum()) == 6  # root gets no edge
    # unknown relations are dropped (label 0), never mislabelled
    ch2 = edges_from_heads([2, 0], ["amod", "root"], v)
    assert ch2.edge_label.numel() == 0


def _rich_graph(tokens) -> Graph:
    v = LabelVocab.for_dependencies(["a", "b"])
    deps = edges_from_heads([2, 0, 2, 3], ["a", "root", "b", "a"], v)
    other = EdgeChannel(torch.tensor([[0, 3], [3, 0]]), torch.tensor([2, 1]), num_labels=3)
    return Graph(
        tokens,
        {"position": ChainChannel(3), "deps": deps, "coref": other},
        node_features={"upos": ["NOUN", "VERB", "NOUN", "ADJ"], "head": [2, 0, 2, 3],
                       "vec": torch.arange(8.0).view(4, 2)},
        meta={"sent_id": "s1", "text": "x y z w"},
    )


@pytest.mark.parametrize("tokens", [["x", "y", "z", "w"], [5, 6, 7, 8]])
def test_networkx_round_trip(tokens):
    g = _rich_graph(tokens)
    G = g.to_networkx()
    assert isinstance(G, nx.DiGraph) and G.number_of_nodes() == 4
    assert G.nodes[1]["token"] == tokens[1] and G.nodes[0]["upos"] == "NOUN"
    back = Graph.from_networkx(G)
    assert list(back.channels) == list(g.channels)
    assert torch.equal(back.labels(), g.labels())
    assert back.meta == g.meta and back.tokens == g.tokens
    assert back.node_features["upos"] == g.node_features["upos"]
    assert back.node_features["head"] == g.node_features["head"]
    assert torch.equal(back.node_features["vec"], g.node_features["vec"])
    assert back == g


@pytest.mark.parametrize("tokens", [["x", "y", "z", "w"], [5, 6, 7, 8]])
def test_networkx_round_trip_exact_without_tensor_features(tokens):
    g = _rich_graph(tokens)
    del g.node_features["vec"]
    assert Graph.from_networkx(g.to_networkx()) == g


@pytest.mark.parametrize("tokens", [["x", "y", "z", "w"], [5, 6, 7, 8]])
@pytest.mark.parametrize("single", [False, True])
def test_pyg_round_trip(tokens, single):
    pytest.importorskip("torch_geometric")
    g = _rich_graph(tokens)
    if single:
        g = Graph(g.tokens, {"deps": g.channels["deps"]}, g.node_features, g.meta)
    data = g.to_pyg()
    assert data.num_nodes == 4
    if single:
        assert torch.equal(data.edge_index, g.channels["deps"].edge_index)
    if isinstance(tokens[0], int):
        assert torch.equal(data.x, torch.tensor(tokens))
    back = Graph.from_pyg(data)
    assert back == g
    assert torch.equal(back.labels(), g.labels())


def test_from_plain_pyg_data():
    from torch_geometric.data import Data

    data = Data(x=torch.tensor([4, 5, 6]), edge_index=torch.tensor([[0, 1], [1, 2]]), edge_type=torch.tensor([3, 1]))
    g = Graph.from_pyg(data)
    assert g.tokens == [4, 5, 6] and list(g.channels) == ["edges"]
    assert g.label_matrix("edges")[0, 1] == 3 and g.label_matrix("edges")[1, 2] == 1


def test_edge_channel_equality_ignores_edge_order():
    a = EdgeChannel(torch.tensor([[0, 2, 1], [1, 0, 2]]), torch.tensor([3, 1, 2]), 4)
    b = EdgeChannel(torch.tensor([[1, 0, 2], [2, 1, 0]]), torch.tensor([2, 3, 1]), 4)
    c = EdgeChannel(torch.tensor([[1, 0, 2], [2, 1, 0]]), torch.tensor([2, 1, 3]), 4)
    assert a == b and a != c and a != EdgeChannel(b.edge_index, b.edge_label, 5)
    assert torch.equal(a.dense(3), b.dense(3))


def test_labels_stack_and_with_channel():
    g = chain_graph(3, 1)
    g2 = g.with_channel("deps", EdgeChannel(torch.tensor([[0], [2]]), torch.tensor([4]), 5))
    assert list(g.channels) == ["position"]  # the original is untouched
    lab = g2.labels()
    assert lab.shape == (2, 3, 3) and lab[1, 0, 2] == 4 and int(lab[1].sum()) == 4
    assert g2.labels(["deps"]).shape == (1, 3, 3)
    assert merge_label_sizes(g2.channels) == [4, 5]
    assert Graph([1, 2]).labels().shape == (0, 2, 2)
    assert "position=chain(k=1)" in repr(g2) and "deps=edges(1)" in repr(g2)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="edge to node 3, graph has 3 nodes"):
        Graph([1, 2, 3], {"e": EdgeChannel(torch.tensor([[0], [3]]), torch.tensor([1]))})
    with pytest.raises(ValueError, match="edge to node -1"):
        Graph([1, 2, 3], {"e": EdgeChannel(torch.tensor([[-1], [0]]), torch.tensor([1]))})
    with pytest.raises(ValueError, match="node feature 'upos' has 2 entries for 3 nodes"):
        Graph([1, 2, 3], node_features={"upos": ["A", "B"]})
    with pytest.raises(ValueError, match="node feature 'vec' has 4 entries"):
        Graph([1, 2, 3], node_features={"vec": torch.zeros(4, 2)})
    with pytest.raises(ValueError, match="edge labels must be >= 1"):
        EdgeChannel(torch.tensor([[0], [1]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="2 edges but edge_label has 1"):
        EdgeChannel(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1]))
    G = nx.DiGraph()
    G.add_nodes_from(["a", "b"])
    with pytest.raises(ValueError, match="0..n-1"):
        Graph.from_networkx(G)
