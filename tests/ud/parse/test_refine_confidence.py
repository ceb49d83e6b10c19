"""Refinement only for unsure first trees (``refine_confidence``): the threshold's two ends and its rule."""

from __future__ import annotations

import pytest
import torch

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu
from g2gt.ud.parse import Parser, ParserModel, ParserVocab
from g2gt.ud.parse.decode import REFINE_CONFIDENCE

TINY = dict(d_model=32, num_heads=2, num_layers=1, ffn_dim=64, arc_dim=32, label_dim=16, char_dim=16,
            char_filters=32)


@pytest.fixture(scope="module")
def parser():
    train = read_conllu(EWT_SAMPLE_TRAIN)[:100]
    vocab = ParserVocab.build(train, min_freq=1)
    torch.manual_seed(0)
    model = ParserModel(vocab.config(**TINY)).eval()
    with torch.no_grad():  # sharpen the arc scores so that some first trees are confident and some are not
        for p in model.arc.parameters():
            p.normal_(0.0, 1.0)
    return Parser(model, vocab, refine_steps=3)


@pytest.fixture(scope="module")
def dev():
    return read_conllu(EWT_SAMPLE_DEV)[:60]


def _trees(res):
    return [(s.heads, s.deprels, s.upos) for s in res]


def test_a_new_parser_uses_the_default_threshold(parser):
    fresh = Parser(parser.model, parser.vocab)
    assert fresh.refine_confidence == REFINE_CONFIDENCE and 0.5 < REFINE_CONFIDENCE < 1.0


def test_threshold_zero_is_one_pass_and_none_refines_all(parser, dev):
    parser.refine_confidence = 0.0  # every first tree counts as confident
    one = parser.predict(dev)
    assert all(s.passes == 1 for s in one)
    assert _trees(one) == _trees(parser.predict(dev, refine_steps=0))
    parser.refine_confidence = None
    full = parser.predict(dev, record_iterations=True)
    assert all(s.passes >= 2 for s in full)  # every sentence is refined at least once


def test_only_unsure_first_trees_are_refined(parser, dev):
    parser.refine_confidence = None
    full = parser.predict(dev, record_iterations=True)
    first = [s.iterations[0] for s in full]
    confs = _first_pass_confidence(parser, dev)
    c = float(sorted(confs)[len(confs) // 2])  # about half the sentences above
    parser.refine_confidence = c
    try:
        gated = parser.predict(dev)
    finally:
        parser.refine_confidence = REFINE_CONFIDENCE
    assert 0 < sum(x >= c for x in confs) < len(dev)
    for s_full, s_gated, t0, conf in zip(full, gated, first, confs):
        if abs(conf - c) < 1e-4:
            continue  # float32 batches and this float64 reference may disagree at the border
        if conf >= c:
            assert s_gated.passes == 1 and (s_gated.heads, s_gated.deprels) == (t0.heads, t0.deprels)
        else:  # refined exactly as without the threshold
            assert s_gated.passes == s_full.passes and _trees([s_gated]) == _trees([s_full])


def _first_pass_confidence(parser, dev):
    """min over words of max_j P(j | i) of the first pass, one sentence at a time, in float64."""
    from g2gt.ud.parse.batching import make_batch, make_example

    model = parser.model
    out = []
    with torch.no_grad():
        for i, s in enumerate(dev):
            b = make_batch([make_example(s, parser.vocab, 0)], [i], parser.vocab, parser.max_distance)
            g = b.graph
            h = model.encoder(model.embed(g.tokens, b.char_ids, b.word_types), model.labels(g.labels[:, 0], None),
                              g.padding_mask)
            arc = model.arc(h, g.padding_mask).double()[0]
            n = arc.shape[-1]
            arc = arc.masked_fill(torch.eye(n, dtype=torch.bool), float("-inf")).softmax(-1)
            out.append(float(arc[1:len(s) + 1].max(-1).values.min()))
    return out

