"""DEPS -> targets: FILE:LINE errors for bad DEPS and bad trees, noisy trees stay trees, batches, vocabulary."""

from __future__ import annotations

import random

import pytest
import torch

from g2gt.data import EWT_SAMPLE_TRAIN
from g2gt.ud.enhance.data import (
    EnhancerVocab, check_input_tree, corrupt_tree, make_batch, make_example, sentence_edges,
)
from g2gt.ud.io.conllu import CoNLLUError, parse_conllu_string, read_conllu
from g2gt.ud.io import check_tree

GOOD = [("The", "2:det"), ("dog", "3:nsubj"), ("barks", "0:root")]


def _text(rows, heads=(2, 3, 0), rels=("det", "nsubj", "root")) -> str:
    lines = ["# sent_id = s1"]
    for i, ((form, deps), h, r) in enumerate(zip(rows, heads, rels), 1):
        lines.append(f"{i}\t{form}\t{form.lower()}\tX\t_\t_\t{h}\t{r}\t{deps}\t_")
    return "\n".join(lines) + "\n\n"


def test_good_deps_give_edges():
    s = parse_conllu_string(_text(GOOD), "t.conllu")[0]
    assert sentence_edges(s) == [(1, 2, "det"), (2, 3, "nsubj"), (3, 0, "root")]


@pytest.mark.parametrize("deps,why", [
    ("2:", "malformed"), ("x:det", "malformed"), ("9:det", "outside"), ("1:det", "self loop"),
    ("2:det|2:amod", "twice"), ("2:Det", "lowercase"), ("_", "'_'"),
])
def test_bad_deps_is_an_error_naming_file_and_line(deps, why):
    rows = [(GOOD[0][0], deps), *GOOD[1:]]
    s = parse_conllu_string(_text(rows), "bad.conllu")[0]
    with pytest.raises(CoNLLUError) as e:
        sentence_edges(s)
    assert str(e.value).startswith("bad.conllu:2:") and why in str(e.value)


def test_bad_deps_fails_the_vocabulary_build():
    s = parse_conllu_string(_text([(GOOD[0][0], "2:"), *GOOD[1:]]), "bad.conllu")[0]
    with pytest.raises(CoNLLUError, match=r"bad\.conllu:2:"):
        EnhancerVocab.build([s])


@pytest.mark.parametrize("heads,rels,why", [((2, 3, 1), ("det", "nsubj", "dep"), "cycle"),
                                            ((0, 3, 0), ("root", "nsubj", "root"), "several roots")])
def test_input_tree_must_be_a_tree(heads, rels, why):
    s = parse_conllu_string(_text(GOOD, heads, rels), "in.conllu")[0]
    with pytest.raises(CoNLLUError, match=rf"in\.conllu:1: .*{why}"):
        check_input_tree(s)


def test_input_tree_needs_heads_and_relations():
    text = _text(GOOD).replace("\t3\tnsubj\t", "\t_\tnsubj\t")
    with pytest.raises(CoNLLUError, match=r"in\.conllu:3: HEAD of word 2"):
        check_input_tree(parse_conllu_string(text, "in.conllu")[0])


@pytest.mark.parametrize("seed", range(20))
def test_corrupted_trees_are_trees(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 30)
    heads = [0] + [0] * n
    for i in range(2, n + 1):  # a random tree rooted at word 1
        heads[i] = rng.randint(1, i - 1)
    rels = [0] + [rng.randrange(2, 10) for _ in range(n)]
    h, r = corrupt_tree(heads, rels, rng.random(), 10, rng)
    assert check_tree(h[1:]) is None
    assert all(0 <= x < 10 for x in r) and h[0] == 0


def test_corruption_changes_something_at_rate_one():
    rng = random.Random(0)
    heads, rels = [0, 2, 0, 2, 3], [0, 3, 4, 5, 6]
    h, r = corrupt_tree(heads, rels, 1.0, 10, rng)
    assert (h, r) != (heads, rels)


def test_batch_holds_every_word_to_word_edge_of_the_sample():
    sents = read_conllu(EWT_SAMPLE_TRAIN)[:40]
    vocab = EnhancerVocab.build(sents)
    exs = [make_example(s, vocab) for s in sents]
    b = make_batch(exs, list(range(len(exs))), vocab)
    n_edges = sum(1 for s in sents for _, h, _ in sentence_edges(s) if isinstance(h, int))
    assert int(b.gold_edges.sum()) == n_edges
    assert b.words.shape == b.heads.shape == b.padding_mask.shape
    assert b.gold_edges.shape == (len(sents), b.words.shape[1], b.words.shape[1])
    assert int((b.gold_labels >= 0).sum()) <= n_edges and bool((b.gold_labels[~b.gold_edges] == -100).all())
    assert b.num_words == sum(len(s) for s in sents)
    assert not b.gold_edges[:, 0].any()  # ROOT is never a dependent


def test_vocab_round_trip():
    sents = read_conllu(EWT_SAMPLE_TRAIN)[:100]
    v = EnhancerVocab.build(sents)
    w = EnhancerVocab.from_dict(v.to_dict())
    assert w.to_dict() == v.to_dict() and "root" in w.labels
    assert torch.equal(make_batch([make_example(sents[0], w)], [0], w).words,
                       make_batch([make_example(sents[0], v)], [0], v).words)
