"""The user-facing ``Parser.parse``: input forms, the segmenter hook, predicted / kept / cleared columns."""

from __future__ import annotations

import pytest
import torch

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import Sentence, check_tree, parse_conllu_string, read_conllu, sentence_from_words, to_conllu_string
from g2gt.ud.parse import Parser, ParserModel, ParserVocab, rule_segmenter

TINY = dict(d_model=16, num_heads=2, num_layers=1, ffn_dim=32, arc_dim=16, label_dim=8, char_dim=8,
            char_filters=16, dropout=0.0, head_dropout=0.0)
COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


@pytest.fixture(scope="module")
def dev():
    return read_conllu(EWT_SAMPLE_DEV)


@pytest.fixture(scope="module")
def parser() -> Parser:
    """An untrained parser with every head (UPOS, XPOS, UFeats, lemma rules)."""
    vocab = ParserVocab.build(read_conllu(EWT_SAMPLE_TRAIN)[:300], min_freq=1)
    torch.manual_seed(0)
    return Parser(ParserModel(vocab.config(**TINY)), vocab)


def _token_lines(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


def _is_empty_node(cols: list[str]) -> bool:
    return "." in cols[0]


# ---------------------------------------------------------------------------- input forms
def test_raw_text_is_segmented_by_the_rule_tokenizer(parser):
    text = "The cat sat on the mat. It purred loudly!"
    out = parser(text)
    assert [s.forms for s in out] == [s.forms for s in rule_segmenter(text)]
    assert len(out) == 2 and all(check_tree(s.heads) is None for s in out)
    assert [s.text for s in out] == ["The cat sat on the mat.", "It purred loudly!"]


def test_empty_text_gives_no_sentences(parser):
    assert parser("") == [] and parser("  \n ") == [] and parser([]) == []


def test_token_list_is_one_sentence_and_list_of_lists_several(parser):
    one = parser.parse(["Dogs", "bark", "."])
    assert len(one) == 1 and one[0].forms == ["Dogs", "bark", "."] and check_tree(one[0].heads) is None
    two = parser.parse([["Dogs", "bark", "."], ("Cats", "sleep")])
    assert [s.forms for s in two] == [["Dogs", "bark", "."], ["Cats", "sleep"]]
    assert [s.sent_id for s in two] == ["1", "2"]


def test_sentence_objects_pass_in_and_come_back_as_copies(parser, dev):
    sents = dev[:3]
    before = to_conllu_string(sents)
    out = parser.parse(sents)
    assert [s.sent_id for s in out] == [s.sent_id for s in sents]
    assert to_conllu_string(sents) == before  # the input is not modified
    single = parser.parse(dev[0])
    assert len(single) == 1 and single[0].forms == dev[0].forms


def test_copy_false_writes_into_the_given_sentences_and_gives_the_same_parse(parser, dev):
    mine = [s.copy() for s in dev[:4]]
    copies = parser.parse(mine)
    same = parser.parse(mine, copy=False)
    assert all(a is b for a, b in zip(same, mine))  # the objects given, written into
    assert to_conllu_string(same) == to_conllu_string(copies)


def test_pipeline_leaves_sentence_objects_it_was_given_unchanged(parser, dev):
    from g2gt.ud.pipeline import Pipeline

    nlp = Pipeline(parse=parser)
    sents = [s.copy() for s in dev[:3]]
    before = to_conllu_string(sents)
    doc = nlp(sents)
    assert to_conllu_string(sents) == before
    assert all(a is not b for a, b in zip(doc.sentences, sents))
    assert list(nlp.pipe([sents]))[0].conllu() == doc.conllu()
    assert to_conllu_string(sents) == before


@pytest.mark.parametrize("bad", [[1, 2, 3], [["a", 1]], ["a", ["b"]]])
def test_other_inputs_are_a_clear_type_error(parser, bad):
    with pytest.raises(TypeError, match="expects raw text"):
        parser.parse(bad)


def test_an_empty_word_is_a_clear_error(parser):
    with pytest.raises(ValueError, match="word 2"):
        parser.parse(["a", "", "b"])


def test_a_tokenize_stage_can_be_swapped_in(parser):
    from g2gt.ud.pipeline import Pipeline

    seen = []

    def whitespace_lines(text: str) -> list[Sentence]:
        seen.append(text)
        return [sentence_from_words(line.split(), sent_id=f"L{k}") for k, line in enumerate(text.splitlines())]

    custom = Pipeline(tokenize=whitespace_lines, parse=parser)
    out = custom("He sat. Then he left.\nOK .")
    assert seen == ["He sat. Then he left.\nOK ."]
    assert [s.forms for s in out] == [["He", "sat.", "Then", "he", "left."], ["OK", "."]]
    assert [s.sent_id for s in out] == ["L0", "L1"] and all(s.heads for s in out)
    bad = Pipeline(tokenize=lambda text: [text.split()], parse=parser)
    with pytest.raises(TypeError, match="tokenize stage"):
        bad("a b")


# ---------------------------------------------------------------------------- output columns
def test_predicted_columns_are_the_models(parser, dev):
    sents = dev[:20]
    pred = parser.predict(sents)
    out = parser.parse(sents)
    assert parser.columns == ("head", "deprel", "upos", "xpos", "feats", "lemma")
    for s, p in zip(out, pred):
        assert (s.heads, s.deprels, s.upos, s.lemmas) == (p.heads, p.deprels, p.upos, p.lemmas)
        assert [x or "_" for x in s.xpos] == p.xpos
        assert [("|".join(f"{k}={v}" for k, v in t["feats"].items()) if t["feats"] else "_") for t in s.words] \
            == p.feats


def test_other_columns_pass_through_byte_identical_and_deps_are_cleared(parser, dev):
    text_in = to_conllu_string(dev)
    text_out = to_conllu_string(parser.parse(dev))
    comments = [line for line in text_in.splitlines() if line.startswith("#")]
    assert comments == [line for line in text_out.splitlines() if line.startswith("#")]
    rows_in = [c for c in _token_lines(text_in) if not _is_empty_node(c)]
    rows_out = _token_lines(text_out)
    assert len(rows_in) == len(rows_out)
    assert any(_is_empty_node(c) for c in _token_lines(text_in))  # the sample has an empty node to drop
    for a, b in zip(rows_in, rows_out):
        if "-" in a[0]:
            assert a == b  # multiword-token lines untouched
            continue
        for name in ("id", "form", "misc"):
            k = COLUMNS.index(name)
            assert a[k] == b[k], (name, a, b)
        assert b[COLUMNS.index("deps")] == "_"


def test_keep_lemma_keeps_the_input_lemmas(parser, dev):
    out = parser.parse(dev[:40], keep=("lemma",))
    rows_in = [c for c in _token_lines(to_conllu_string(dev[:40])) if not _is_empty_node(c)]
    rows_out = _token_lines(to_conllu_string(out))
    k = COLUMNS.index("lemma")
    assert [a[k] for a in rows_in] == [b[k] for b in rows_out]
    pred = parser.predict(dev[:40])
    assert [s.upos for s in out] == [p.upos for p in pred]  # the rest is still predicted


def test_keep_deps_keeps_the_enhanced_graph_and_empty_nodes(parser, dev):
    sents = [s for s in dev if any(isinstance(t["id"], tuple) and t["id"][1] == "." for t in s.rows)]
    assert sents, "the dev sample has a sentence with an empty node"
    for keep in ("deps", ["DEPS"]):
        out = parser.parse(sents, keep=keep)
        rows_in, rows_out = _token_lines(to_conllu_string(sents)), _token_lines(to_conllu_string(out))
        assert [r for r in rows_in if _is_empty_node(r)] == [r for r in rows_out if _is_empty_node(r)]
        k = COLUMNS.index("deps")
        assert [r[k] for r in rows_in] == [r[k] for r in rows_out]
    cleared = parser.parse(sents)
    assert not any(_is_empty_node(r) for r in _token_lines(to_conllu_string(cleared)))
    assert all(check_tree(s.heads) is None for s in cleared)
    # the written output reads back as the same sentences
    again = parse_conllu_string(to_conllu_string(cleared))
    assert [s.forms for s in again] == [s.forms for s in sents]


def test_keep_all_tags_changes_only_the_tree(parser, dev):
    out = parser.parse(dev[:30], keep=("upos", "xpos", "feats", "lemma", "deps"))
    for a, b in zip(_token_lines(to_conllu_string(dev[:30])), _token_lines(to_conllu_string(out))):
        assert [x for k, x in enumerate(a) if k not in (6, 7)] == [x for k, x in enumerate(b) if k not in (6, 7)]


@pytest.mark.parametrize("bad, match", [(("head",), "use_input_graph"), (("lemmas",), "not a CoNLL-U column")])
def test_keep_names_are_checked(parser, dev, bad, match):
    with pytest.raises(ValueError, match=match):
        parser.parse(dev[:2], keep=bad)


def test_a_model_without_tag_heads_passes_those_columns_through(dev):
    vocab = ParserVocab.build(read_conllu(EWT_SAMPLE_TRAIN)[:100], min_freq=1, tags=False)
    p = Parser(ParserModel(vocab.config(**TINY)), vocab)
    assert p.columns == ("head", "deprel", "upos")
    out = p.parse(dev[:10])
    for a, b in zip(dev[:10], out):
        assert (a.lemmas, a.xpos) == (b.lemmas, b.xpos)
        assert [t["feats"] for t in a.words] == [t["feats"] for t in b.words]
