"""Parser properties: trees, learning, the graph channel, checkpoints, column preservation."""

from __future__ import annotations


import pytest
import torch


from g2gt.core.graph import LabelVocab, edges_from_heads
from g2gt.ud.io.conllu import read_conllu, to_conllu_string
from g2gt.ud.io import check_tree
from g2gt.ud.parse import (
    Parser, ParserConfig, ParserModel, ParserVocab, ParsingTask, corrupt_graph, dependency_labels, make_batch,
    make_example,
)
from g2gt.data import EWT_SAMPLE_DEV as SAMPLE_DEV, EWT_SAMPLE_TRAIN as SAMPLE_TRAIN

TINY = dict(d_model=32, num_heads=2, num_layers=1, ffn_dim=64, arc_dim=32, label_dim=16, char_dim=16,
            char_filters=32, dropout=0.0, head_dropout=0.0)


@pytest.fixture(scope="module")
def train_sents():
    return read_conllu(SAMPLE_TRAIN)


@pytest.fixture(scope="module")
def dev_sents():
    return read_conllu(SAMPLE_DEV)


def _parser(sents, **kw) -> Parser:
    vocab = ParserVocab.build(sents, min_freq=1)
    cfg = vocab.config(**{**TINY, **kw})
    return Parser(ParserModel(cfg), vocab)


def _fit(sents, steps: int, refine_train: str = "self", lr: float = 3e-3, **kw) -> Parser:
    p = _parser(sents, **kw)
    task = ParsingTask(sents, [], p.vocab, batch_tokens=4000, refine_train=refine_train, word_dropout=0.0)
    opt = torch.optim.Adam(p.model.parameters(), lr=lr)
    p.model.train()
    batches = list(task.train_batches(0, 0, 1))
    for _ in range(steps):
        for b in batches:
            loss = task.loss(p.model, b) / task.num_tokens(b)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return p


def test_dependency_labels_agree_with_label_vocab():
    rels = ["nsubj", "obj", "root"]
    vocab = LabelVocab.for_dependencies(rels)
    heads = [2, 0, 2]  # words 1..3, word 2 is the root
    rel = ["nsubj", "root", "obj"]
    # with the ROOT node at index 0, node k's head is heads[k-1]
    h = torch.tensor([[0] + heads])
    r = torch.tensor([[0] + [rels.index(x) for x in rel]])
    valid = torch.tensor([[False, True, True, True]])
    dense = dependency_labels(h, r, valid)[0]
    ref = edges_from_heads([0] + [x + 1 for x in heads], ["_"] + rel, vocab).dense(4)
    assert torch.equal(dense, ref)
    assert dense[2, 0] == vocab["root↑"] and dense[0, 2] == vocab["root↓"]


def test_corrupt_graph_rate_zero_is_identity_and_no_self_loops():
    heads = torch.tensor([[0, 2, 0, 2, 3]])
    rels = torch.tensor([[0, 1, 2, 3, 1]])
    mask = torch.tensor([[False, True, True, True, True]])
    h, r = corrupt_graph(heads, rels, mask, 4, 0.0, torch.Generator().manual_seed(0))
    assert torch.equal(h, heads) and torch.equal(r, rels)
    h, r = corrupt_graph(heads.repeat(50, 1), rels.repeat(50, 1), mask.repeat(50, 1), 4, 1.0,
                         torch.Generator().manual_seed(0))
    ar = torch.arange(5)
    assert not (h[:, 1:] == ar[1:]).any()
    assert int(h.max()) <= 4 and not torch.equal(h, heads.repeat(50, 1))


def test_every_parse_is_single_rooted_tree_even_untrained_and_long(train_sents, dev_sents):
    p = _parser(train_sents)
    # a sentence longer than any training sentence
    longest = max(len(s) for s in train_sents)
    words = " ".join(f"w{i}" for i in range(longest + 20))
    from g2gt.ud.io import sentence_from_words

    sents = list(dev_sents[:40]) + [sentence_from_words(words.split())]
    for alg in ("mst", "eisner"):
        out = p.predict(sents, refine_steps=2, algorithm=alg)
        assert len(out) == len(sents)
        for s, o in zip(sents, out):
            h, r, u = o.heads, o.deprels, o.upos
            assert len(h) == len(s) == len(r) == len(u)
            assert check_tree(h) is None
            assert sum(x == 0 for x in h) == 1
            assert all((x == "root") == (hh == 0) for x, hh in zip(r, h))


def test_tiny_parser_overfits_small_set(train_sents):
    sents = [s for s in train_sents if 4 <= len(s) <= 9][:10]
    p = _fit(sents, steps=120)
    p.model.eval()
    out = p.predict(sents, refine_steps=1)
    assert _uas(sents, out) == 1.0
    # the same weights in bfloat16 (``Parser.load(..., dtype="bfloat16")``) still parse the set
    p.model.to(torch.bfloat16)
    out16 = p.predict(sents, refine_steps=1)
    same = sum(a == b for o1, o2 in zip(out, out16) for a, b in zip(o1.heads, o2.heads))
    assert same / sum(map(len, sents)) >= 0.95
    assert all(check_tree(o.heads) is None for o in out16)


def _uas(sents, out) -> float:
    return sum(h == g for s, o in zip(sents, out) for h, g in zip(o.heads, s.heads)) / sum(map(len, sents))


def test_tiny_parser_overfits_20_sentences(train_sents):
    sents = [s for s in train_sents if len(s) <= 20][:20]
    p = _fit(sents, steps=250, d_model=64, num_layers=2, ffn_dim=128)
    out = p.predict(sents, refine_steps=2)
    assert _uas(sents, out) == 1.0


def test_graph_channel_changes_outputs(train_sents):
    p = _parser(train_sents)
    with torch.no_grad():
        for prm in p.model.encoder.parameters():  # make label embeddings matter for sure
            if prm.dim() == 2:
                prm.normal_(0, 0.5)
    sents = train_sents[:6]
    b = make_batch([make_example(s, p.vocab) for s in sents], list(range(6)), p.vocab, 8)
    g = b.graph
    pos = g.labels[:, 0].long()
    p.model.eval()
    with torch.no_grad():
        empty = p.model.encode(g.tokens, b.char_ids, b.word_types, g.padding_mask, p.model.labels(pos, None))
        gold = dependency_labels(g.node_features["head"], g.node_features["rel"], b.words_mask)
        full = p.model.encode(g.tokens, b.char_ids, b.word_types, g.padding_mask, p.model.labels(pos, gold))
    assert (empty - full).abs().max() > 1e-3
    # and --refine with different input trees gives different parses
    out_a = p.predict(sents, refine_steps=0, use_input_graph=True)
    chain = [s.with_parse([i for i in range(len(s))], ["root"] + ["dep"] * (len(s) - 1)) for s in sents]
    out_b = p.predict(chain, refine_steps=0, use_input_graph=True)
    assert [(o.heads, o.deprels, o.upos) for o in out_a] != [(o.heads, o.deprels, o.upos) for o in out_b]


def test_no_graph_channel_model_has_one_channel(train_sents):
    p = _parser(train_sents, graph_channel=False)
    assert p.model.encoder.layers[0].self_attn.label_sizes == [18]
    out = p.predict(train_sents[:3], refine_steps=3)
    assert all(check_tree(o.heads) is None for o in out)
    assert all(o.passes == 1 for o in out)  # no graph channel: one pass, whatever refine_steps says


@pytest.mark.parametrize("bad", [-1, 1.5, "2"])
def test_negative_or_fractional_refine_steps_are_refused_as_on_the_command_line(train_sents, dev_sents, bad):
    p = _parser(train_sents)
    with pytest.raises(ValueError, match=f"refine_steps must be a whole number >= 0 .*got {bad!r}"):
        p.parse(dev_sents[:2], refine_steps=bad)
    assert len(p.parse(dev_sents[:2], refine_steps=0)) == 2


def test_refine_cyclic_input_names_file_and_line(train_sents, tmp_path):
    p = _parser(train_sents)
    text = ("# sent_id = a\n1\tA\ta\tX\t_\t_\t0\troot\t_\t_\n\n"
            "# sent_id = b\n1\tB\tb\tX\t_\t_\t2\tdep\t_\t_\n2\tC\tc\tX\t_\t_\t1\tdep\t_\t_\n\n")
    f = tmp_path / "cyc.conllu"
    f.write_text(text)
    sents = read_conllu(f)
    with pytest.raises(ValueError, match=r"cyc\.conllu:\d+.*not a single-rooted tree"):
        p.predict(sents, use_input_graph=True)


def test_parse_preserves_order_count_and_columns(train_sents, dev_sents):
    p = _parser(train_sents)
    sents = dev_sents[:30]
    out = p.parse(sents, refine_steps=1, keep=("upos", "xpos", "feats", "lemma", "deps"))
    assert len(out) == len(sents)
    before = to_conllu_string(sents).splitlines()
    after = to_conllu_string(out).splitlines()
    assert len(before) == len(after)
    for a, b in zip(before, after):
        if a.startswith("#") or not a or "-" in a.split("\t")[0] or "." in a.split("\t")[0]:
            assert a == b  # comments, multiword tokens, empty nodes untouched
        else:
            ca, cb = a.split("\t"), b.split("\t")
            keep = [0, 1, 2, 3, 4, 5, 8, 9]  # all but HEAD, DEPREL
            assert [ca[k] for k in keep] == [cb[k] for k in keep]


def test_checkpoint_roundtrip_weights_only_strict(train_sents, dev_sents, tmp_path):
    from g2gt.ud.parse import train_parser
    from g2gt.core.train import TrainConfig

    tc = TrainConfig(lr=1e-3, warmup_steps=1, max_steps=2, eval_every=0, metric="las", metric_mode="max",
                     progress=False)
    parser, hist = train_parser(train_sents[:20], dev_sents[:5], tmp_path / "m", ParserConfig(**TINY), tc,
                                batch_tokens=2000)
    ck = torch.load(tmp_path / "m" / "best.pt", weights_only=True)
    cfg = ParserConfig.from_dict(ck["model_config"])
    model = ParserModel(cfg)
    model.load_state_dict(ck["model"], strict=True)
    assert (tmp_path / "m" / "config.json").exists() and (tmp_path / "m" / "log.jsonl").exists()
    loaded = Parser.load(tmp_path / "m", dtype="float32")
    a = loaded.predict(dev_sents[:5])
    b = parser.predict(dev_sents[:5])
    assert a == b
    assert {"uas", "las", "upos"} <= set(hist[-1])
