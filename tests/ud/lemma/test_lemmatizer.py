"""The character lemmatizer: when the parser asks it, its stage file, its training run."""

from __future__ import annotations

import json

import pytest
import torch

from g2gt.data import EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu, sentence_from_words
from g2gt.ud.lemma import LEMMATIZER_FILE, CharLemmatizer, LemmaConfig, LemmaVocab, needs_fallback
from g2gt.ud.lemma.model import build_lemma_model, feats_symbols
from g2gt.ud.lemma.config import lemma_train_config
from g2gt.ud.lemma.train import LemmaTask, lemma_examples, train_lemmatizer
from g2gt.ud.parse import Parser, ParserModel, ParserVocab

TINY_PARSER = dict(d_model=16, num_heads=2, num_layers=1, ffn_dim=32, arc_dim=16, label_dim=8, char_dim=8,
                   char_filters=16, dropout=0.0, head_dropout=0.0)
TINY = dict(d_model=16, num_heads=2, num_layers=1, ffn_dim=32, dropout=0.0)


class Recorder:
    """A lemmatizer double: records the words it is asked about and answers ``form + "!"`` (None for
    ``"dogs"``, whose edit-script lemma must then stay); its training data had the forms ``known``."""

    def __init__(self, use_when: str, known=("dogs",)) -> None:
        self.use_when = use_when
        self.known = set(known)
        self.asked: list[tuple] = []

    def knows(self, form: str) -> bool:
        return form in self.known

    def lemmatize(self, words):
        self.asked += list(words)
        return [None if f == "dogs" else f + "!" for f, _, _ in words]


def _parser(bias: list[float]) -> Parser:
    vocab = ParserVocab(["<pad>", "<unk>", "<root>"], ["<pad>", "<unk>", "<root>"], ["X"], ["dep", "root"],
                        lemma_rules=["<unk>", "l|1|", "l|9|"], lemma_lexicon={"Cats\tX": "kitty"})
    model = ParserModel(vocab.config(**TINY_PARSER))
    with torch.no_grad():
        out = model.taggers["lemma"].out
        out.weight.zero_()
        out.bias.copy_(torch.tensor(bias))
    return Parser(model, vocab)


@pytest.mark.parametrize("use_when", ["rare", "unseen", "not-in-lexicon"])
@pytest.mark.parametrize("in_lexicon", [False, True])
@pytest.mark.parametrize("rare", [False, True])
@pytest.mark.parametrize("seen_form", [False, True])
def test_needs_fallback_truth_table(use_when, in_lexicon, rare, seen_form):
    asked = {"rare": rare, "unseen": rare or not seen_form, "not-in-lexicon": True}[use_when]
    assert needs_fallback(use_when, in_lexicon, rare, seen_form) is (asked and not in_lexicon)


def test_needs_fallback_rejects_an_unknown_condition():
    with pytest.raises(ValueError, match="use_when must be one of rare, unseen, not-in-lexicon"):
        needs_fallback("always", False, False)


@pytest.mark.parametrize("bias, use_when, asked", [
    # "l|1|" is the best rule: it applies to "dogs" but would leave "a" empty, and "l|9|" fits neither: "a" is rare
    ([1.0, 3.0, 2.0], "rare", ["a"]),
    ([1.0, 3.0, 2.0], "not-in-lexicon", ["dogs", "a"]),
    ([1.0, 3.0, 2.0], "unseen", ["a"]),  # "dogs" is a training form with a rule that applies
    # <unk> is the best class: every word outside the lexicon is rare
    ([9.0, 3.0, 2.0], "rare", ["dogs", "a"]),
    ([9.0, 3.0, 2.0], "not-in-lexicon", ["dogs", "a"]),
    ([9.0, 3.0, 2.0], "unseen", ["dogs", "a"]),
])
def test_parser_asks_the_lemmatizer_exactly_when_the_condition_holds(bias, use_when, asked):
    parser = _parser(bias)
    parser.lemmatizer = rec = Recorder(use_when)
    (res,) = parser.predict([sentence_from_words(["Cats", "dogs", "a"])])
    assert [w[0] for w in rec.asked] == asked
    assert all(w[1] == "X" for w in rec.asked)  # the predicted UPOS goes with the form
    # the lexicon answers "Cats"; "dogs" keeps its edit-script lemma (the lemmatizer said None); "a" is rewritten
    assert res.lemmas == ["kitty", "dog", "a!" if "a" in asked else "a"]


def test_without_a_lemmatizer_the_lemmas_are_the_edit_scripts():
    (res,) = _parser([1.0, 3.0, 2.0]).predict([sentence_from_words(["Cats", "dogs", "a"])])
    assert res.lemmas == ["kitty", "dog", "a"]


def test_vocab_encodes_characters_then_tags():
    v = LemmaVocab(feats_symbols("NOUN", "Number=Plur|Case=Gen"), "abc")
    src = v.encode_source("cab", "NOUN", {"Case": "Gen", "Number": "Plur"})
    assert [v.itos[i] for i in src] == ["c", "a", "b", "<sep>", "<NOUN>", "<Case=Gen>", "<Number=Plur>"]
    assert v.encode_source("cab", "VERB", "_")[-1] == v.stoi["<sep>"]  # unknown tags are left out
    assert v.decode(v.encode_target("abc")) == "abc"
    assert v.decode([v.stoi["<NOUN>"]]) is None  # a tag symbol is not a character


def _tiny_lemmatizer(use_when: str = "rare") -> CharLemmatizer:
    ex = [("cats", "NOUN", "Number=Plur", "cat"), ("Dogs", "PROPN", "_", "Dogs")]
    vocab = LemmaVocab.build(ex)
    cfg = LemmaConfig(vocab_size=len(vocab), use_when=use_when, **TINY)
    torch.manual_seed(0)
    return CharLemmatizer(build_lemma_model(cfg), vocab, cfg, record={"step": 3}, forms=["cats", "Dogs"])


def test_stage_file_round_trips(tmp_path):
    lem = _tiny_lemmatizer("not-in-lexicon")
    path = lem.save(tmp_path / LEMMATIZER_FILE, torch.float32)
    ck = torch.load(path, weights_only=True)  # plain tensors and JSON-like values only
    assert ck["task"]["kind"] == "lemmatizer"
    back = CharLemmatizer.load(tmp_path)  # a folder: its lemmatizer.pt
    assert back.config == lem.config and back.use_when == "not-in-lexicon" and back.record == {"step": 3}
    assert back.vocab.itos == lem.vocab.itos
    assert back.knows("Dogs") and not back.knows("dogs")
    for k, v in lem.model.state_dict().items():
        assert torch.equal(back.model.state_dict()[k], v), k
    words = [("cats", "NOUN", "Number=Plur"), ("Dogs", "PROPN", None), ("tac", "NOUN", "_")]
    assert back.predict(words) == lem.predict(words)


def test_float16_stage_file_stores_half_weights(tmp_path):
    lem = _tiny_lemmatizer()
    lem.save(tmp_path / "l.pt")
    ck = torch.load(tmp_path / "l.pt", weights_only=True)
    assert all(v.dtype == torch.float16 for v in ck["model"].values() if v.is_floating_point())
    back = CharLemmatizer.load(tmp_path / "l.pt")
    for k, v in lem.model.state_dict().items():
        assert torch.equal(back.model.state_dict()[k], v.half().float()), k


def test_load_rejects_another_kind(tmp_path):
    torch.save({"model": {}, "model_config": {}, "task": {"kind": "parser"}}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="not a lemmatizer"):
        CharLemmatizer.load(tmp_path / "x.pt")


def test_parser_folder_carries_its_lemmatizer(tmp_path):
    parser = _parser([1.0, 3.0, 2.0])
    parser.lemmatizer = _tiny_lemmatizer("rare")
    parser.save(tmp_path / "parser.pt")
    assert (tmp_path / LEMMATIZER_FILE).is_file()
    back = Parser.load(tmp_path, dtype="float32")
    assert isinstance(back.lemmatizer, CharLemmatizer) and back.lemmatizer.use_when == "rare"
    (tmp_path / LEMMATIZER_FILE).unlink()
    assert Parser.load(tmp_path, dtype="float32").lemmatizer is None


def test_examples_are_word_types_with_lemmas():
    s = sentence_from_words(["Cats", "cats", "Cats", "x"])
    for w, lemma in zip(s.words, ["cat", "cat", "cat", "_"]):
        w["upos"], w["lemma"], w["feats"] = "NOUN", lemma, {"Number": "Plur"}
    assert lemma_examples([s]) == [("Cats", "NOUN", "Number=Plur", "cat"), ("cats", "NOUN", "Number=Plur", "cat")]


def test_dev_accuracy_is_measured_on_forms_training_lacks():
    train = [("cats", "NOUN", "_", "cat")]
    dev = [("cats", "NOUN", "_", "cat"), ("dogs", "NOUN", "_", "dog")]
    vocab = LemmaVocab.build(train + dev)
    task = LemmaTask(train, dev, vocab, LemmaConfig(vocab_size=len(vocab), **TINY))
    assert task.dev == [("dogs", "NOUN", "_", "dog")]


def test_tiny_training_run_and_resume(tmp_path):
    train = lemma_examples(read_conllu(EWT_SAMPLE_TRAIN)[:40])
    cfg = LemmaConfig(batch_tokens=320, **TINY)
    tc = lemma_train_config(max_steps=4, eval_every=2, log_every=1)
    lem = train_lemmatizer(train, train[:20], tmp_path / "run", cfg, tc)
    assert isinstance(lem, CharLemmatizer) and lem.config.vocab_size == len(lem.vocab)
    assert (tmp_path / "run" / "best.pt").is_file() and (tmp_path / "run" / "last.pt").is_file()
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert max(steps) == 4
    again = train_lemmatizer(train, train[:20], tmp_path / "run", cfg, lemma_train_config(max_steps=6, eval_every=2),
                             resume=True)
    assert torch.load(tmp_path / "run" / "last.pt", weights_only=True)["step"] == 6
    assert again.vocab.itos == lem.vocab.itos
    assert again.forms == {f for f, *_ in train} and again.use_when == "unseen"
    words = [(f, u, x) for f, u, x, _ in train[:5]]
    assert len(again.lemmatize(words)) == 5


def test_cli_trains_and_exports(tmp_path):
    from g2gt.cli.main import main

    out, stage = tmp_path / "run", tmp_path / "model" / LEMMATIZER_FILE
    stage.parent.mkdir()
    assert main(["train", "lemmatizer", "--train", str(EWT_SAMPLE_TRAIN), "--out", str(out), "--max-steps", "2",
                 "--d-model", "16", "--layers", "1", "--heads", "2", "--ffn-dim", "32", "--threads", "1",
                 "--no-progress", "--export", str(stage)]) == 0
    assert CharLemmatizer.load(stage).use_when == "unseen"
    assert main(["train", "lemmatizer", "--train", str(EWT_SAMPLE_TRAIN), "--out", str(out), "--max-steps", "2",
                 "--use-when", "sometimes"]) == 2


def test_unseen_condition_asks_about_forms_the_lemmatizer_never_saw():
    parser = _parser([1.0, 3.0, 2.0])  # "l|1|" applies to "dogs" and "hens": neither is rare
    parser.lemmatizer = rec = Recorder("unseen", known=("dogs",))
    (res,) = parser.predict([sentence_from_words(["dogs", "hens"])])
    assert [w[0] for w in rec.asked] == ["hens"]
    assert res.lemmas == ["dog", "hens!"]
