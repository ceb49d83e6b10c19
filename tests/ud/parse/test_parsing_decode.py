"""The parser's checkpoint format (frozen: trained models must keep loading) and its one decode path."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import check_tree, read_conllu, sentence_from_words
from g2gt.ud.parse import Parser, ParserConfig, ParserModel, ParserVocab, ParsingTask, attachment_scores
from g2gt.ud.parse.vocab import unambiguous_lemmas

TINY = dict(d_model=16, num_heads=2, num_layers=1, ffn_dim=32, arc_dim=16, label_dim=8, char_dim=8,
            char_filters=16, dropout=0.0, head_dropout=0.0)

# The checkpoint format written by `g2gt train parser` (runs trained before the parsing package split load
# with strict=True only while these stay the same).
STATE_DICT_KEYS = [
    "word_embed.weight", "char_encoder.embed.weight", "char_encoder.conv.weight", "char_encoder.conv.bias",
    "char_encoder.proj.weight", "char_encoder.proj.bias", "embed_norm.weight", "embed_norm.bias",
    "encoder.layers.0.self_attn.label_key", "encoder.layers.0.self_attn.label_value",
    "encoder.layers.0.self_attn.q_proj.weight", "encoder.layers.0.self_attn.q_proj.bias",
    "encoder.layers.0.self_attn.k_proj.weight", "encoder.layers.0.self_attn.k_proj.bias",
    "encoder.layers.0.self_attn.v_proj.weight", "encoder.layers.0.self_attn.v_proj.bias",
    "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias",
    "encoder.layers.0.ffn.lin1.weight", "encoder.layers.0.ffn.lin1.bias", "encoder.layers.0.ffn.lin2.weight",
    "encoder.layers.0.ffn.lin2.bias", "encoder.layers.0.res_attn.norm.weight", "encoder.layers.0.res_attn.norm.bias",
    "encoder.layers.0.res_ffn.norm.weight", "encoder.layers.0.res_ffn.norm.bias", "encoder.norm.weight",
    "encoder.norm.bias", "arc.U", "arc.u", "arc.dep.linear.weight", "arc.dep.linear.bias", "arc.head.linear.weight",
    "arc.head.linear.bias", "rel.U", "rel.dep.linear.weight", "rel.dep.linear.bias", "rel.head.linear.weight",
    "rel.head.linear.bias", "rel.W.weight", "rel.W.bias", "tagger.mlp.linear.weight", "tagger.mlp.linear.bias",
    "tagger.out.weight", "tagger.out.bias", "taggers.xpos.mlp.linear.weight", "taggers.xpos.mlp.linear.bias",
    "taggers.xpos.out.weight", "taggers.xpos.out.bias", "taggers.feats.mlp.linear.weight",
    "taggers.feats.mlp.linear.bias", "taggers.feats.out.weight", "taggers.feats.out.bias",
    "taggers.lemma.mlp.linear.weight", "taggers.lemma.mlp.linear.bias", "taggers.lemma.out.weight",
    "taggers.lemma.out.bias",
]
MODEL_CONFIG_KEYS = [
    "num_words", "num_chars", "num_upos", "num_rels", "num_xpos", "num_feats", "num_lemma_rules", "d_model",
    "num_heads", "num_layers", "ffn_dim", "dropout", "attention_dropout", "max_distance", "value_labels",
    "graph_channel", "arc_dim", "label_dim", "char_dim", "char_filters", "head_dropout", "activation",
]
VOCAB_KEYS = ["words", "chars", "upos", "rels", "lowercase", "max_word_chars", "xpos", "feats", "lemma_rules"]
TASK_KEYS = ["kind", "vocab", "max_distance", "refine_steps", "refine_train"]  # "kind": what the file holds


@pytest.fixture(scope="module")
def sents():
    return read_conllu(EWT_SAMPLE_TRAIN)[:200], read_conllu(EWT_SAMPLE_DEV)[:60]


@pytest.fixture(scope="module")
def parts(sents):
    train, dev = sents
    vocab = ParserVocab.build(train, min_freq=1)
    torch.manual_seed(0)
    model = ParserModel(vocab.config(**TINY))
    task = ParsingTask(train, dev, vocab, model.config.max_distance, refine_steps=2)
    return model, vocab, task


def _save_like_the_trainer(model, task, path) -> None:
    torch.save({"model": model.state_dict(), "model_config": model.config.to_dict(), "task": task.checkpoint_extra(),
                "step": 1, "best": 0.0}, path)


def test_checkpoint_format_is_frozen(parts, tmp_path):
    model, vocab, task = parts
    assert list(model.state_dict()) == STATE_DICT_KEYS
    assert list(model.config.to_dict()) == MODEL_CONFIG_KEYS
    assert list(task.checkpoint_extra()) == TASK_KEYS and list(vocab.to_dict()) == VOCAB_KEYS
    with_lexicon = dataclasses.replace(vocab, lemma_lexicon={"cats\tNOUN": "cat"})  # optional key, at the end
    assert list(with_lexicon.to_dict()) == VOCAB_KEYS + ["lemma_lexicon"]
    assert ParserVocab.from_dict(with_lexicon.to_dict()).lemma_lexicon == {"cats\tNOUN": "cat"}


def test_checkpoint_reloads_strict_with_the_same_parses(parts, sents, tmp_path):
    model, vocab, task = parts
    _save_like_the_trainer(model, task, tmp_path / "best.pt")
    loaded = Parser.load(tmp_path, dtype="float32")  # a folder: its best.pt, the weights as trained
    ck = torch.load(tmp_path / "best.pt", weights_only=True)
    ParserModel(ParserConfig.from_dict(ck["model_config"])).load_state_dict(ck["model"], strict=True)
    assert loaded.vocab == vocab and loaded.refine_steps == 2 and loaded.max_distance == model.config.max_distance
    dev = sents[1]
    assert loaded.predict(dev) == Parser(model, vocab).predict(dev)


def test_load_errors_are_clear(parts, tmp_path):
    with pytest.raises(FileNotFoundError, match="best.pt or last.pt"):
        Parser.load(tmp_path)
    torch.save({"model": {}, "model_config": {}, "task": {"kind": "enhanced"}}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a parser checkpoint"):
        Parser.load(tmp_path / "other.pt")


def test_evaluation_during_training_uses_the_parser_decode(parts, sents):
    model, vocab, task = parts
    dev = sents[1]
    scores = task.evaluate(model)
    pred = Parser(model, vocab, refine_steps=task.refine_steps).predict(dev, record_iterations=True)
    assert scores["uas"] == attachment_scores(dev, pred)["uas"] and scores["las"] == attachment_scores(dev, pred)["las"]
    assert scores["las0"] == attachment_scores(dev, pred.iteration(0))["las"]
    assert {"xpos", "feats", "lemma"} <= set(scores)


def test_results_are_returned_not_left_on_the_parser(parts, sents):
    model, vocab, _ = parts
    p = Parser(model, vocab)
    res = p.predict(sents[1][:5])
    assert not any(hasattr(p, a) for a in ("last_iterations", "last_passes", "last_tags"))
    assert res.passes == sum(s.passes for s in res) and all(s.iterations is None for s in res)
    with pytest.raises(ValueError, match="record_iterations"):
        res.iteration(0)


@pytest.mark.parametrize("T", [0, 1, 4])
def test_converged_sentences_are_not_encoded_again(parts, sents, T):
    model, vocab, _ = parts
    dev = sents[1]
    rows = []
    hook = model.encoder.register_forward_hook(lambda mod, args, out: rows.append(args[0].shape[0]))
    try:
        res = Parser(model, vocab).predict(dev, refine_steps=T, record_iterations=True)
    finally:
        hook.remove()
    assert sum(rows) == res.passes  # one encoder row per sentence and pass, nothing else
    assert all(1 <= s.passes <= T + 1 for s in res)
    for s in res:
        assert len(s.iterations) == T + 1
        last = s.iterations[s.passes - 1]
        assert all(t == last for t in s.iterations[s.passes - 1:])  # after its fixed point a tree repeats
        assert (last.heads, last.deprels, last.upos) == (s.heads, s.deprels, s.upos)
    if T == 4:
        assert res.passes < (T + 1) * len(dev)  # some sentences reached a fixed point early


def test_root_relation_exactly_for_the_root_word(parts, sents):
    model, vocab, _ = parts
    for alg in ("mst", "eisner"):
        for s in Parser(model, vocab).predict(sents[1], algorithm=alg):
            assert check_tree(s.heads) is None
            assert [r == "root" for r in s.deprels] == [h == 0 for h in s.heads]


def test_lemma_is_the_best_rule_that_applies_to_the_form():
    vocab = ParserVocab(["<pad>", "<unk>", "<root>"], ["<pad>", "<unk>", "<root>"], ["X"], ["dep", "root"],
                        lemma_rules=["<unk>", "l|9|", "l|1|", "=be"])
    model = ParserModel(vocab.config(**TINY))
    out = model.taggers["lemma"].out
    with torch.no_grad():
        out.weight.zero_()
        out.bias.copy_(torch.tensor([9.0, 3.0, 2.0, 1.0]))  # <unk> > strip 9 > strip 1 > "be"
    (res,) = Parser(model, vocab).predict([sentence_from_words(["Cats", "a"])])
    # <unk> is never an answer; "strip 9" applies to neither form; "strip 1" to "Cats" but it would leave
    # "a" an empty lemma, so "a" gets the next rule
    assert res.lemmas == ["cat", "be"]
    vocab.lemma_rules[1:] = ["l|9|", "l|7|", "l|8|"]  # no rule applies: the lowercased form
    (res,) = Parser(model, vocab).predict([sentence_from_words(["Cats"])])
    assert res.lemmas == ["cats"]


def test_lexicon_lemma_comes_before_the_rules():
    """A (form, predicted UPOS) pair of the lexicon takes its lemma; the same form with another UPOS, or
    another casing, is lemmatised by the rules."""
    vocab = ParserVocab(["<pad>", "<unk>", "<root>"], ["<pad>", "<unk>", "<root>"], ["X"], ["dep", "root"],
                        lemma_rules=["<unk>", "l|1|"], lemma_lexicon={"Cats\tX": "kitty", "dogs\tNOUN": "hound"})
    model = ParserModel(vocab.config(**TINY))
    (res,) = Parser(model, vocab).predict([sentence_from_words(["Cats", "dogs", "cats"])])
    assert res.upos == ["X", "X", "X"]
    assert res.lemmas == ["kitty", "dog", "cat"]


def test_unambiguous_lemmas():
    a = sentence_from_words(["Cats", "saw", "saw", "it"])
    for w, upos, lemma in zip(a.words, ["NOUN", "VERB", "NOUN", "PRON"], ["cat", "see", "saw", "_"]):
        w["upos"], w["lemma"] = upos, lemma
    b = sentence_from_words(["saw", "Cats"])
    for w, upos, lemma in zip(b.words, ["VERB", "NOUN"], ["saw", "cat"]):
        w["upos"], w["lemma"] = upos, lemma
    # "saw"/VERB has two lemmas (context decides), "it" none: left out; "saw"/NOUN and "Cats"/NOUN stay
    assert unambiguous_lemmas([a, b]) == {"Cats\tNOUN": "cat", "saw\tNOUN": "saw"}


def test_bfloat16_weights_decode_to_trees(parts, sents, tmp_path):
    model, vocab, task = parts
    _save_like_the_trainer(model, task, tmp_path / "m.pt")
    p = Parser.load(tmp_path / "m.pt", dtype="bfloat16")
    assert next(p.model.parameters()).dtype == torch.bfloat16
    assert all(check_tree(s.heads) is None for s in p.predict(sents[1][:20]))


def test_top_classes_are_topk_best_first():
    from g2gt.ud.parse.model import top_classes

    torch.manual_seed(3)
    logits = torch.randn(50, 30)  # distinct values: topk's order is defined
    assert torch.equal(top_classes(logits.clone(), 5), logits.topk(5, -1).indices)
    assert top_classes(logits[:, :3].clone(), 5).shape == (50, 3)  # never more than the classes


def test_examples_without_targets_read_only_the_forms():
    from g2gt.ud.parse.batching import make_batch, make_example

    vocab = ParserVocab.build(read_conllu(EWT_SAMPLE_TRAIN)[:50], min_freq=1)
    s = sentence_from_words(["Dogs", "bark", "."])
    full, bare = make_example(s, vocab), make_example(s, vocab, targets=False)
    assert bare.forms == full.forms and bare.words == full.words
    assert bare.heads is None and bare.tags == {}
    a, b = make_batch([full], [0], vocab, 8), make_batch([bare], [0], vocab, 8)
    assert torch.equal(a.graph.tokens, b.graph.tokens) and torch.equal(a.graph.labels, b.graph.labels)
    assert torch.equal(a.char_ids, b.char_ids) and b.graph.node_features == {}
