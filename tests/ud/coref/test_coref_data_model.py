"""Document windows as graphs, the model's loss and predictions, decoding."""

import torch

from g2gt.core.graph import Graph
from g2gt.ud.coref.data import CorefVocab, make_batch, make_doc, mention_head, window_graph, windows
from g2gt.ud.coref.decode import clusters_from_links, decode_window
from g2gt.ud.coref.io import documents
from g2gt.ud.coref.model import CorefConfig, CorefModel, distance_bucket


def small_model(vocab):
    cfg = CorefConfig(len(vocab.words), len(vocab.chars), len(vocab.upos), len(vocab.rels), len(vocab.morph),
                      len(vocab.tree_labels), 1 + len(vocab.etypes), d_model=32, num_heads=2, num_layers=1,
                      ffn_dim=32, span_dim=16, antecedent_dim=16, char_filters=16, char_dim=8, dropout=0.0,
                      head_dropout=0.0)
    torch.manual_seed(0)
    return CorefModel(cfg)


def test_window_graph_channels_and_targets(doc_sentences):
    docs = documents(doc_sentences)
    vocab = CorefVocab.build(docs, min_freq=1)
    ex = make_doc(docs[0], vocab)
    assert ex.bounds == [0, 4, 11]
    assert (ex.left[9], ex.right[9]) == (7, 9)  # "her old book"
    g = window_graph(ex, vocab, 0, 11, 8)
    assert isinstance(g, Graph) and g.num_nodes == 11
    assert set(g.channels) == {"position", "tree"}
    tree = g.label_matrix("tree")
    assert tree[0, 1] > 0 and tree[1, 0] > 0 and tree[0, 2] == 0  # Mary <-> met only
    f = g.node_features
    assert f["sentence"] == [0] * 4 + [1] * 7
    assert f["tag"][9] == 1 + vocab.etype_index["object"] and (f["start"][9], f["end"][9]) == (8, 10)
    assert f["cluster"][0] == f["cluster"][4] == f["cluster"][7] != f["cluster"][2]
    assert f["lemma"][0] != f["lemma"][2]


def test_windows_cut_at_sentence_boundaries(doc_sentences):
    docs = documents(doc_sentences)
    ex = make_doc(docs[0], CorefVocab.build(docs, min_freq=1))
    assert windows(ex, 100) == [(0, 11)]
    assert windows(ex, 5) == [(0, 4), (4, 11)]  # a sentence longer than the window stays whole


def test_mention_head_is_the_word_attached_outside():
    heads = [2, 2, -1, 2]  # 0 -> 2, 1 -> 2, 2 root, 3 -> 2
    depth = [1, 1, 0, 1]
    assert mention_head([0, 1, 2], heads, depth) == 2
    assert mention_head([0, 1], heads, depth) == 0


def test_loss_learns_the_document(doc_sentences):
    docs = documents(doc_sentences)
    vocab = CorefVocab.build(docs, min_freq=1)
    ex = make_doc(docs[0], vocab)
    model = small_model(vocab)
    batch = make_batch([window_graph(ex, vocab, 0, len(ex), model.config.max_distance)], vocab)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    first = None
    for _ in range(60):
        loss = model(batch)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.2 * first
    pred = model.predict(batch)
    got = decode_window(pred, 0, len(ex), 0, vocab.etypes)
    by_words = {tuple(m.words): m for m in got}
    assert set(by_words) == {tuple(m.words) for m in ex.mentions}
    assert by_words[(4,)].eid == by_words[(0,)].eid == by_words[(7,)].eid != by_words[(2,)].eid
    assert by_words[(7, 8, 9)].etype == "object"


def test_padding_does_not_change_predictions(doc_sentences):
    docs = documents(doc_sentences)
    vocab = CorefVocab.build(docs, min_freq=1)
    ex = make_doc(docs[0], vocab)
    model = small_model(vocab).eval()
    g1 = window_graph(ex, vocab, 0, 4, 8)
    g2 = window_graph(ex, vocab, 0, 11, 8)
    alone = model.predict(make_batch([g1], vocab))
    both = model.predict(make_batch([g1, g2], vocab))
    assert torch.allclose(alone["tag_probs"][0], both["tag_probs"][0, :4], atol=1e-5)
    assert torch.allclose(alone["antecedent"][0], both["antecedent"][0, :4, :4], atol=1e-5)


def test_clusters_and_buckets():
    assert clusters_from_links(5, [(1, 0), (3, 1), (4, 2)]) == [[0, 1, 3], [2, 4]]
    assert distance_bucket(torch.tensor([0, 1, 4, 5, 8, 16, 5000])).tolist() == [0, 1, 4, 5, 6, 7, 13]
