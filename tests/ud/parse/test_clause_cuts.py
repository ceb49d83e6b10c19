"""Short clauses cut from training trees (``g2gt train parser --short-clauses``): which words a cut keeps,
its tree, capital and final punctuation, the seeded draws, and the training task and command using them."""

from __future__ import annotations

import json
import random

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io.conllu import parse_conllu_string, read_conllu
from g2gt.ud.io.sentence import check_tree
from g2gt.ud.parse import ParserVocab
from g2gt.ud.parse.clause_cuts import clause_cuts, cut_clause, final_punctuation, subject_predicates
from g2gt.ud.parse.task import ParsingTask

# "Il dit que le chat de ma voisine dort sur le canapé !" as UD French annotates it: (FORM, LEMMA, UPOS, HEAD, DEPREL)
ROWS = [("Il", "il", "PRON", 2, "nsubj"), ("dit", "dire", "VERB", 0, "root"), ("que", "que", "SCONJ", 9, "mark"),
        ("le", "le", "DET", 5, "det"), ("chat", "chat", "NOUN", 9, "nsubj"), ("de", "de", "ADP", 8, "case"),
        ("ma", "son", "DET", 8, "det"), ("voisine", "voisin", "NOUN", 5, "nmod"),
        ("dort", "dormir", "VERB", 2, "ccomp"), ("sur", "sur", "ADP", 12, "case"), ("le", "le", "DET", 12, "det"),
        ("canapé", "canapé", "NOUN", 9, "obl"), ("!", "!", "PUNCT", 2, "punct")]


def _conllu(rows, sent_id="s1") -> str:
    lines = [f"# sent_id = {sent_id}"]
    for k, (form, lemma, upos, head, rel) in enumerate(rows, start=1):
        feats = "Gender=Masc" if upos == "NOUN" else "_"
        lines.append(f"{k}\t{form}\t{lemma}\t{upos}\tX{upos}\t{feats}\t{head}\t{rel}\t_\t_")
    return "\n".join(lines) + "\n\n"


@pytest.fixture
def sent():
    assert check_tree([r[3] for r in ROWS]) is None
    return parse_conllu_string(_conllu(ROWS))[0]


@pytest.fixture
def period():
    """A treebank whose usual final punctuation is '.' (twice) rather than '!' (once)."""
    text = "".join(_conllu([("A", "a", "NOUN", 0, "root"), (p, p, "PUNCT", 1, "punct")], f"p{k}")
                   for k, p in enumerate(".!."))
    return final_punctuation(parse_conllu_string(text))


def test_subject_predicates_are_the_words_with_a_subject(sent):
    assert [sent.forms[i] for i in subject_predicates(sent)] == ["dit", "dort"]


def test_a_cut_keeps_the_predicate_its_subject_and_nothing_optional_at_p0(sent, period):
    cut = cut_clause(sent, sent.forms.index("dort"), 0.0, random.Random(0), period)
    assert cut.forms == ["Le", "chat", "dort", "."]  # 'que' (mark) gone, capital first letter, final period
    assert cut.heads == [2, 3, 0, 3] and cut.deprels == ["det", "nsubj", "root", "punct"]
    assert cut.lemmas == ["le", "chat", "dormir", "."] and cut.upos == ["DET", "NOUN", "VERB", "PUNCT"]
    assert cut.xpos == ["XDET", "XNOUN", "XVERB", "XPUNCT"] and cut.words[1]["feats"] == {"Gender": "Masc"}
    assert cut.words[2]["misc"] == {"SpaceAfter": "No"}
    assert sent.forms[3] == "le" and len(sent) == 13  # the source is unchanged


def test_a_cut_at_p1_keeps_every_optional_dependent_but_never_marks_or_punctuation(sent, period):
    cut = cut_clause(sent, sent.forms.index("dort"), 1.0, random.Random(0), period, max_words=20)
    assert cut.forms == ["Le", "chat", "de", "ma", "voisine", "dort", "sur", "le", "canapé", "."]
    assert check_tree(cut.heads) is None and cut.deprels.count("root") == 1
    top = cut_clause(sent, sent.forms.index("dit"), 1.0, random.Random(0), period, max_words=20)
    # the complement clause keeps its own 'que'; the closing '!' is replaced by the treebank's usual '.'
    assert top.forms == ["Il", "dit", "que", "le", "chat", "de", "ma", "voisine", "dort", "sur", "le", "canapé", "."]
    assert check_tree(top.heads) is None


def test_a_cut_longer_than_max_words_or_of_one_word_is_none(sent, period):
    dort = sent.forms.index("dort")
    assert cut_clause(sent, dort, 1.0, random.Random(0), period, max_words=8) is None  # 9 words
    one = parse_conllu_string(_conllu([("Dort", "dormir", "VERB", 0, "root"), ("Il", "il", "PRON", 1, "nsubj")]))[0]
    assert cut_clause(one, 0, 0.0, random.Random(0), period, max_words=1) is None


def test_no_final_punctuation_when_the_source_has_none(period):
    rows = [("Je", "il", "PRON", 2, "nsubj"), ("pense", "penser", "VERB", 0, "root")]
    s = parse_conllu_string(_conllu(rows))[0]
    assert cut_clause(s, 1, 0.0, random.Random(0), period).forms == ["Je", "pense"]


def test_final_punctuation_is_the_most_frequent_closing_punct(period):
    assert period["form"] == "." and period["upos"] == "PUNCT" and period["xpos"] == "XPUNCT"
    assert final_punctuation(parse_conllu_string(_conllu([("A", "a", "NOUN", 0, "root")]))) is None


def test_clause_cuts_are_seeded_counted_and_valid_trees():
    train = read_conllu(EWT_SAMPLE_TRAIN)
    a, b = clause_cuts(train, 0.25, seed=3), clause_cuts(train, 0.25, seed=3)
    assert len(a) == round(0.25 * len(train))
    assert [(i, c.forms, c.heads) for i, c in a] == [(i, c.forms, c.heads) for i, c in b]
    assert [c.forms for _, c in clause_cuts(train, 0.25, seed=4)] != [c.forms for _, c in a]
    for i, c in a:
        assert check_tree(c.heads) is None and 2 <= len(c) <= 9
        assert set(c.forms) - {"."} <= set(train[i].forms) | {f[:1].upper() + f[1:] for f in train[i].forms}
    assert clause_cuts(train, 0.0, seed=3) == []
    with pytest.raises(ValueError, match=">= 0"):
        clause_cuts(train, -1.0, seed=3)


def test_the_task_adds_new_cuts_each_epoch_and_none_without_the_option():
    train, dev = read_conllu(EWT_SAMPLE_TRAIN)[:200], read_conllu(EWT_SAMPLE_DEV)[:5]
    vocab = ParserVocab.build(train)
    plain = ParsingTask(train, dev, vocab)
    assert plain.epoch_examples(0) is plain.train and len(plain.train) == 200
    task = ParsingTask(train, dev, vocab, short_clauses=0.5)
    e0, e1 = task.epoch_examples(0), task.epoch_examples(1)
    assert len(e0) == len(e1) == 300 and e0[:200] == task.train
    assert [x.forms for x in e0[200:]] != [x.forms for x in e1[200:]]
    assert [x.forms for x in task.epoch_examples(0)[200:]] == [x.forms for x in e0[200:]]
    batches = list(task.train_batches(0, 0, 1))
    assert sum(len(b.index) for b in batches) == 300
    with pytest.raises(ValueError, match="short_clauses"):
        ParsingTask(train, dev, vocab, short_clauses=-0.1)


def test_train_parser_command_records_the_option(tmp_path):
    out = tmp_path / "run"
    assert main(["train", "parser", "--train", str(EWT_SAMPLE_TRAIN), "--dev", str(EWT_SAMPLE_DEV), "--out", str(out),
                 "--short-clauses", "0.3", "--max-steps", "2", "--eval-every", "0", "--d-model", "32",
                 "--layers", "1", "--heads", "2", "--ffn-dim", "64", "--no-progress", "--threads", "1"]) == 0
    assert json.loads((out / "config.json").read_text())["task"]["short_clauses"] == 0.3
