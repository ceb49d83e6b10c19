"""The enhanced-graph model: tree channels, padding invariance, a few training steps lower the loss, the
Trainer writes checkpoints that load strictly and enhance validly."""

from __future__ import annotations

import pytest
import torch

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.enhance import Enhancer, EnhancerConfig, EnhancerModel, EnhancerVocab, deps_problems, train_enhancer
from g2gt.ud.enhance.data import make_batch, make_example
from g2gt.ud.enhance.model import NUM_PATHS, PATH_NAMES, PathBilinear, tree_channel, tree_paths
from g2gt.ud.enhance.task import EnhancerTask, enhanced_scores
from g2gt.ud.io.conllu import read_conllu, to_conllu_string
from g2gt.core.train import TrainConfig

TINY = dict(d_model=32, num_heads=2, num_layers=1, ffn_dim=64, edge_dim=32, label_dim=16, char_filters=16,
            dropout=0.0, head_dropout=0.0)


@pytest.fixture(scope="module")
def data():
    train = read_conllu(EWT_SAMPLE_TRAIN)[:60]
    dev = read_conllu(EWT_SAMPLE_DEV)[:20]
    return train, dev, EnhancerVocab.build(train)


def _model(vocab, **kw):
    torch.manual_seed(0)
    cfg = EnhancerConfig(len(vocab.words), len(vocab.chars), len(vocab.upos), len(vocab.rels), len(vocab.labels),
                         **{**TINY, **kw})
    return EnhancerModel(cfg)


def test_tree_paths_match_their_definition():
    heads = [0, 3, 3, 0, 3, 4, 2]  # node 0 = ROOT; word 3 is the root
    n = len(heads)
    words = torch.ones(1, n, dtype=torch.bool)
    words[0, 0] = False
    got = tree_paths(torch.tensor([heads]), words)[0]

    def head(i):
        return heads[i] if i > 0 else None

    for i in range(n):
        for j in range(n):
            hi, hj = head(i), head(j)
            ghi = head(hi) if hi else None
            ghj = head(hj) if hj else None
            expect = "none"
            if i == j:
                expect = "none"
            elif hi == j:
                expect = "parent"
            elif hj == i:
                expect = "child"
            elif hi is not None and hi == hj:
                expect = "sibling"
            elif ghi is not None and ghi == j:
                expect = "grandparent"
            elif ghj is not None and ghj == i:
                expect = "grandchild"
            elif ghi is not None and hj == ghi:
                expect = "aunt"
            elif ghj is not None and hi == ghj:
                expect = "niece"
            assert PATH_NAMES[int(got[i, j])] == expect, (i, j)


def test_tree_channel_labels_both_directions():
    heads = torch.tensor([[0, 2, 0]])
    rels = torch.tensor([[0, 5, 7]])
    words = torch.tensor([[False, True, True]])
    t = tree_channel(heads, rels, words)[0]
    assert t[1, 2] == 11 and t[2, 1] == 12 and t[2, 0] == 15 and t[0, 2] == 16 and t[1, 0] == 0


def test_path_bilinear_equals_the_naive_sum():
    torch.manual_seed(0)
    m = PathBilinear(12, 5, NUM_PATHS).double()
    torch.nn.init.normal_(m.w)
    x = torch.randn(2, 7, 12, dtype=torch.float64)
    path = torch.randint(0, NUM_PATHS, (2, 7, 7))
    p, q = m.P(x), m.Q(x)
    naive = (p[:, :, None, :] * q[:, None, :, :] * m.w[path]).sum(-1)
    assert torch.allclose(m(x, path), naive, atol=1e-10)


def test_scores_do_not_depend_on_padding(data):
    train, _, vocab = data
    m = _model(vocab).eval()
    ex = [make_example(s, vocab) for s in train[:6]]
    alone = make_batch(ex[:1], [0], vocab)
    padded = make_batch(ex, list(range(6)), vocab)
    n = alone.words.shape[1]

    def scores(b):
        labels, tree, path = m.pair_labels(b.heads, b.rels, b.padding_mask)
        h = m.encode(b.words, b.char_ids, b.word_types, b.upos, b.rels, b.padding_mask, labels)
        return m.edge_scores(h, tree, path, b.padding_mask)

    with torch.no_grad():
        a, p = scores(alone)[0], scores(padded)[0, :n, :n]
    fin = torch.isfinite(a)
    assert torch.equal(fin, torch.isfinite(p))
    assert torch.allclose(a[fin], p[fin], atol=1e-4)


def test_a_few_steps_lower_the_loss(data):
    train, _, vocab = data
    m = _model(vocab)
    task = EnhancerTask(train, [], vocab, batch_tokens=800, word_dropout=0.0, corrupt_prob=0.0)
    batches = list(task.train_batches(0, 0, 1))[:4]
    opt = torch.optim.AdamW(m.parameters(), lr=3e-3)

    def mean_loss():
        with torch.no_grad():
            return sum(float(task.loss(m, b)) for b in batches) / sum(b.num_words for b in batches)

    before = mean_loss()
    for _ in range(6):
        for b in batches:
            loss = task.loss(m, b) / b.num_words
            opt.zero_grad()
            loss.backward()
            opt.step()
    after = mean_loss()
    assert after < 0.6 * before, (before, after)


def test_trainer_checkpoint_loads_strictly_and_enhances_validly(data, tmp_path):
    train, dev, _ = data
    tc = TrainConfig(lr=2e-3, max_steps=3, eval_every=0, metric="elas", metric_mode="max", progress=False,
                     device="cpu")
    enhancer, history = train_enhancer(train, dev, tmp_path / "m", EnhancerConfig(**TINY), tc, batch_tokens=800)
    assert history and "elas" in history[-1] and "eulas" in history[-1]
    ck = torch.load(tmp_path / "m" / "best.pt", weights_only=True)
    assert ck["task"]["kind"] == "enhancer"
    loaded = Enhancer.load(tmp_path / "m")
    out = loaded.enhance(dev)
    assert all(deps_problems(s) == [] for s in out)
    gold_lines = to_conllu_string(dev).splitlines()
    out_lines = to_conllu_string(out).splitlines()
    assert len(gold_lines) == len(out_lines)
    for g, o in zip(gold_lines, out_lines):
        gc, oc = g.split("\t"), o.split("\t")
        assert gc[:8] + gc[9:] == oc[:8] + oc[9:]
    # the returned enhancer and the reloaded one agree
    assert enhancer.predict(dev) == loaded.predict(dev)


def test_enhanced_scores_are_100_on_gold_and_lower_on_copies(data):
    _, dev, _ = data
    from g2gt.ud.enhance.data import sentence_edges
    from g2gt.ud.enhance.enhancer import basic_edges

    gold = [sentence_edges(s) for s in dev]
    assert enhanced_scores(dev, gold) == {"elas": 100.0, "eulas": 100.0, "uelas": 100.0}
    copy = enhanced_scores(dev, [basic_edges(s) for s in dev])
    assert 50.0 < copy["elas"] < 100.0 and copy["elas"] <= copy["eulas"] <= copy["uelas"]


def test_parser_trees_become_training_inputs(data, tmp_path):
    from g2gt.ud.enhance.task import parser_trees
    from g2gt.ud.parse import ParserConfig, train_parser

    train, dev, vocab = data
    tc = TrainConfig(lr=2e-3, max_steps=2, eval_every=0, metric="las", metric_mode="max", progress=False,
                     device="cpu")
    train_parser(train[:20], dev[:5], tmp_path / "p", ParserConfig(d_model=32, num_heads=2, num_layers=1, ffn_dim=64,
                                                                  arc_dim=32, label_dim=16, char_filters=16), tc,
                 batch_tokens=800)
    trees = parser_trees(tmp_path / "p", train)
    assert [len(h) for h, _ in trees] == [len(s) for s in train]
    task = EnhancerTask(train, [], vocab, batch_tokens=800, corrupt_prob=0.0, parser_trees=trees, parser_prob=1.0)
    idx = list(range(len(train)))
    inputs = task.input_trees(idx, seed=3)
    assert all(h == [0] + t[0] for (h, _), t in zip(inputs, trees))
    gold = EnhancerTask(train, [], vocab, batch_tokens=800, corrupt_prob=0.0).input_trees(idx, seed=3)
    assert all(h == [0] + [int(x) for x in s.heads] for (h, _), s in zip(gold, train))
