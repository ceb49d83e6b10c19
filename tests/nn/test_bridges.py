"""Bridges end to end on the shipped UD EWT dev sample: stanza Document <-> Sentence,
Document <-> Graph, Graph <-> networkx, Graph <-> PyG Data, and a stanza parse as
G2GConv input."""

from __future__ import annotations


import pytest
import torch

pytest.importorskip("stanza")
from stanza.models.common.doc import Document  # noqa: E402

from g2gt import Graph  # noqa: E402
from g2gt.data import EWT_SAMPLE_DEV  # noqa: E402
from g2gt.ud.io.conllu import read_conllu, to_conllu_string  # noqa: E402
from g2gt.ud.io.stanza import (  # noqa: E402
    apply_parse,
    document_from_graphs,
    document_from_sentences,
    document_vocab,
    graph_heads,
    graphs_from_document,
    sentences_from_document,
)

SAMPLE = EWT_SAMPLE_DEV


@pytest.fixture(scope="module")
def sentences():
    if not SAMPLE.exists():
        pytest.skip(f"shipped sample {SAMPLE} is missing")
    return read_conllu(SAMPLE)


@pytest.fixture(scope="module")
def doc(sentences):
    return document_from_sentences(sentences)


def _canonical(g: Graph) -> Graph:
    """Edges of each edge channel sorted by (source, target): networkx lists a node's
    out-edges together, so from_networkx returns the same edge set in another order."""
    from g2gt.core.graph import EdgeChannel

    out = g
    for name, ch in g.channels.items():
        if isinstance(ch, EdgeChannel):
            n = max(g.num_nodes, 1)
            order = torch.argsort(ch.edge_index[0] * n + ch.edge_index[1])
            out = out.with_channel(name, EdgeChannel(ch.edge_index[:, order], ch.edge_label[order], ch.num_labels))
    return out


def _mwt_ranges(sentence) -> list[tuple[int, int, str]]:
    out = []
    for tok in sentence.rows:
        if isinstance(tok["id"], tuple) and tok["id"][1] == "-":
            out.append((tok["id"][0], tok["id"][2], tok["form"]))
    return out


def test_document_matches_sentences(sentences, doc) -> None:
    assert len(doc.sentences) == len(sentences)
    n_mwt = 0
    for s, ds in zip(sentences, doc.sentences):
        assert [w.text for w in ds.words] == s.forms
        assert [w.head for w in ds.words] == s.heads
        assert [w.deprel for w in ds.words] == s.deprels
        assert [w.upos for w in ds.words] == s.upos
        assert ds.sent_id == s.sent_id
        stanza_mwt = [(t.id[0], t.id[-1], t.text) for t in ds.tokens if len(t.words) > 1]
        assert stanza_mwt == _mwt_ranges(s)
        n_mwt += len(stanza_mwt)
    assert n_mwt > 0, "the sample should contain multiword tokens"


def test_document_roundtrip_is_lossless(sentences, doc) -> None:
    back = sentences_from_document(doc)
    assert len(back) == len(sentences)
    for a, b in zip(sentences, back):
        assert (a.forms, a.heads, a.deprels, a.upos, a.sent_id, a.text) == (
            b.forms, b.heads, b.deprels, b.upos, b.sent_id, b.text)
        assert _mwt_ranges(a) == _mwt_ranges(b)
    # every line (comments, MWT ranges, empty nodes, FEATS, MISC) survives the trip through stanza
    assert to_conllu_string(back) == to_conllu_string(sentences)


def test_graphs_networkx_pyg_and_back_to_stanza(sentences, doc) -> None:
    vocab = document_vocab(doc)
    graphs = graphs_from_document(doc, vocab)
    assert len(graphs) == len(sentences)
    graphs, sentences = graphs[:100], sentences[:100]  # keeps the test fast; MWTs are among them
    assert any(_mwt_ranges(s) for s in sentences)
    for g, s in zip(graphs, sentences):
        assert g.tokens == s.forms and list(g.node_features["upos"]) == s.upos
        assert graph_heads(g, vocab) == (s.heads, s.deprels)
        assert _canonical(Graph.from_networkx(g.to_networkx())) == _canonical(g)
        assert Graph.from_pyg(g.to_pyg()) == g
    # through networkx and PyG, back into a stanza Document
    via = [Graph.from_pyg(Graph.from_networkx(g.to_networkx()).to_pyg()) for g in graphs]
    assert [_canonical(v) for v in via] == [_canonical(g) for g in graphs]
    doc2 = document_from_graphs(via, vocab)
    for s, ds in zip(sentences, doc2.sentences):
        assert [w.text for w in ds.words] == s.forms
        assert [w.head for w in ds.words] == s.heads
        assert [w.deprel for w in ds.words] == s.deprels
        assert [w.upos for w in ds.words] == s.upos
        assert ds.sent_id == s.sent_id
    # the per-document vocabulary is shared by all graphs
    assert graphs_from_document(doc)[0] == graphs[0]


def test_apply_parse_sets_stanza_words(sentences) -> None:
    doc = document_from_sentences(sentences[:20])
    heads = [[i for i in range(len(s))] for s in sentences[:20]]  # word i+1 -> word i, word 1 -> root
    rels = [["root"] + ["dep"] * (len(s) - 1) for s in sentences[:20]]
    upos = [["X"] * len(s) for s in sentences[:20]]
    assert apply_parse(doc, heads, rels, upos) is doc
    for ds, h, r in zip(doc.sentences, heads, rels):
        assert [w.head for w in ds.words] == h
        assert [w.deprel for w in ds.words] == r
        assert all(w.upos == "X" for w in ds.words)
        assert [(gov.id if gov.id else 0, rel, dep.id) for gov, rel, dep in ds.dependencies] == [
            (hh, rr, i + 1) for i, (hh, rr) in enumerate(zip(h, r))
        ]
    back = sentences_from_document(doc)
    for a, b, h, r in zip(sentences[:20], back, heads, rels):
        assert b.heads == h and b.deprels == r and b.forms == a.forms
        assert _mwt_ranges(a) == _mwt_ranges(b)
        # identical to editing the CoNLL-U sentence directly
        assert to_conllu_string([b]) == to_conllu_string([a.with_parse(h, r, ["X"] * len(a))])
    with pytest.raises(ValueError, match="sentences"):
        apply_parse(doc, heads[:3], rels[:3])
    bad = [list(h) for h in heads]
    bad[0] = bad[0][:-1]
    with pytest.raises(ValueError, match="sentence 0"):
        apply_parse(doc, bad, rels)


def test_tokenized_only_document_and_bad_graphs() -> None:
    doc = Document([[{"id": 1, "text": "Dogs"}, {"id": 2, "text": "bark"}]])
    sents = sentences_from_document(doc)
    assert sents[0].forms == ["Dogs", "bark"] and sents[0].heads == [None, None]
    g = graphs_from_document(doc)[0]
    assert "deps" not in g.channels and g.tokens == ["Dogs", "bark"]
    # our parse goes into the tokenize-only document
    apply_parse(doc, [[2, 0]], [["nsubj", "root"]])
    assert sentences_from_document(doc)[0].heads == [2, 0]
    vocab = document_vocab(doc)
    g2 = graphs_from_document(doc, vocab)[0]
    assert graph_heads(g2, vocab) == ([2, 0], ["nsubj", "root"])
    with pytest.raises(ValueError, match="no edge channel"):
        graph_heads(g, vocab)
    from g2gt.core.graph import EdgeChannel

    cyc = g2.with_channel("deps", EdgeChannel(torch.tensor([[0, 1], [1, 0]]), torch.tensor([vocab["nsubj↑"]] * 2)))
    with pytest.raises(ValueError, match="tree"):
        graph_heads(cyc, vocab)


def test_stanza_parse_as_g2gconv_input(doc) -> None:
    """A stanza parse becomes PyG mini-batches for G2GConv (deps + relative positions)."""
    pytest.importorskip("torch_geometric")
    from torch_geometric.loader import DataLoader

    from g2gt.core import num_chain_labels
    from g2gt.nn import G2GConv
    from g2gt.nn.conv import edge_relative_positions, node_positions

    vocab = document_vocab(doc)
    graphs = graphs_from_document(doc, vocab)[:12]
    words = sorted({t for g in graphs for t in g.tokens})
    wid = {w: i for i, w in enumerate(words)}
    data = []
    for g in graphs:
        d = g.to_pyg()
        d.x = torch.tensor([wid[t] for t in g.tokens])
        del d.tokens
        data.append(d)
    emb = torch.nn.Embedding(len(words), 8)
    conv = G2GConv(8, 4, heads=2, num_edge_labels=[len(vocab), num_chain_labels(3)])
    outs = []
    for b in DataLoader(data, batch_size=5):
        rel = edge_relative_positions(b.edge_index, node_positions(b.batch, b.num_nodes, b.ptr), 3)
        y = conv(emb(b.x), b.edge_index, torch.stack([b.edge_type, rel], 1))
        assert y.shape == (b.num_nodes, 8) and torch.isfinite(y).all()
        outs.append(y)
    assert sum(o.shape[0] for o in outs) == sum(len(g) for g in graphs)
