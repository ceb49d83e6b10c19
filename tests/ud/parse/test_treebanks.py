"""Training on several treebanks: file names, the treebank embedding, warm starts, and the CLI end to end on
tiny models (the shipped EWT sample split into two fake treebanks, xx_a and xx_b)."""

from __future__ import annotations

import json
import math

import pytest
import torch

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io.conllu import read_conllu, write_conllu
from g2gt.ud.parse import Parser, ParserModel, ParserVocab
from g2gt.ud.parse.treebanks import named_file, treebank_index, treebank_list, treebank_name
from g2gt.ud.parse.warm import copy_weights, load_source, warm_config

TINY = dict(d_model=32, num_heads=2, num_layers=1, ffn_dim=64, arc_dim=32, label_dim=16, char_dim=16,
            char_filters=32, dropout=0.0, head_dropout=0.0)
TINY_ARGS = ["--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim", "64", "--batch-tokens", "1500",
             "--no-progress", "--threads", "1"]
# a schedule that does not depend on the budget, so that a run cut at step 2 and resumed to 4 equals a 4-step run
FLAT = ["--schedule", "constant", "--warmup-steps", "1", "--cooldown", "0"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Two fake treebanks; xx_b has a relation and a FEATS value xx_a lacks (labels a warm start must add)."""
    d = tmp_path_factory.mktemp("treebanks")
    train, dev = read_conllu(EWT_SAMPLE_TRAIN), read_conllu(EWT_SAMPLE_DEV)
    b_train = train[60:120]
    for s in b_train[:5]:
        s.words[0]["deprel"] = "dep:xxb"
        s.words[0]["feats"] = {"Xxb": "Yes"}
    write_conllu(train[:60], d / "xx_a-ud-train.conllu")
    write_conllu(b_train, d / "xx_b-ud-train.conllu")
    write_conllu(dev[:10], d / "xx_a-ud-dev.conllu")
    write_conllu(dev[10:20], d / "xx_b-ud-dev.conllu")
    return d


@pytest.fixture(scope="module")
def combined(data):
    """A run on both treebanks with two dev files, checkpoint averaging over the last two evaluations."""
    out = data / "combined"
    rc = main(["train", "parser", "--train", str(data / "xx_a-ud-train.conllu"), str(data / "xx_b-ud-train.conllu"),
               "--dev", str(data / "xx_a-ud-dev.conllu"), "--dev", str(data / "xx_b-ud-dev.conllu"),
               "--out", str(out), "--max-steps", "4", "--eval-every", "2", "--average-last", "2", *TINY_ARGS])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def source(data):
    """A one-treebank run on xx_a: the warm-start source."""
    out = data / "source"
    rc = main(["train", "parser", "--train", str(data / "xx_a-ud-train.conllu"), "--dev",
               str(data / "xx_a-ud-dev.conllu"), "--out", str(out), "--max-steps", "2", "--eval-every", "0",
               *TINY_ARGS])
    assert rc == 0
    return out


def _tiny_parser(treebanks=(), seed=0) -> Parser:
    sents = read_conllu(EWT_SAMPLE_TRAIN)[:80]
    vocab = ParserVocab.build(sents, min_freq=1)
    torch.manual_seed(seed)
    return Parser(ParserModel(vocab.config(**TINY, treebanks=list(treebanks))), vocab)


# ----------------------------------------------------------------------------- names
def test_treebank_names_from_files_and_name_equals_file(tmp_path):
    assert treebank_name("/d/en_gum-ud-train.conllu.gz") == "en_gum"
    assert treebank_name("en_ewt-ud-dev.conllu") == "en_ewt"
    assert treebank_name("my-data.conllu") == "my_data"
    assert named_file("gum=/x/train.conllu") == ("gum", "/x/train.conllu")
    odd = tmp_path / "a=b.conllu"
    odd.write_text("")
    assert named_file(str(odd)) == ("a=b", str(odd))  # an existing file is a file, '=' or not
    with pytest.raises(ValueError, match="treebank name"):
        named_file("bad name=/x/train.conllu")
    with pytest.raises(ValueError, match="NAME=FILE"):
        named_file("gum=")


def test_treebank_list_needs_two_names_and_keeps_a_sources_first():
    assert treebank_list(["en_ewt"]) == []
    assert treebank_list(["en_ewt", "en_ewt"]) == []
    assert treebank_list(["en_ewt", "en_gum", "en_ewt"]) == ["en_ewt", "en_gum"]
    assert treebank_list(["en_ewt", "en_gum"], embedding=False) == []
    assert treebank_list(["en_gum", "en_x"], source=["en_ewt", "en_gum"]) == ["en_ewt", "en_gum", "en_x"]
    assert treebank_index(["a", "b"], "b") == 1 and treebank_index(["a", "b"], "c") == 0
    assert treebank_index([], "b") == 0


# ----------------------------------------------------------------------------- the treebank embedding
def test_treebank_vectors_change_outputs_only_through_the_chosen_treebank():
    dev = read_conllu(EWT_SAMPLE_DEV)[:12]
    p = _tiny_parser(["a", "b"])
    table = p.model.treebank_embed.weight
    with torch.no_grad():
        table.normal_()
    as_a = p.predict(dev)
    p.treebank = "b"
    as_b = p.predict(dev)
    assert as_a != as_b  # random vectors this large change some heads, relations or tags
    with torch.no_grad():
        table[1].normal_()  # another vector for b: a's parses must not move
    p.treebank = "a"
    assert p.predict(dev) == as_a
    p.treebank = None  # the default is the first treebank
    assert p.treebank == "a" and p.predict(dev) == as_a
    with pytest.raises(ValueError, match="trained on a, b; choose one of them") as e:
        p.treebank = "c"
    assert "the default is the first, a" in str(e.value) and "None" not in str(e.value)  # read by CLI users too


def test_zero_treebank_vectors_compute_exactly_the_model_without_them():
    dev = read_conllu(EWT_SAMPLE_DEV)[:12]
    plain = _tiny_parser()
    with_tb = _tiny_parser(["a", "b"])
    state = dict(plain.model.state_dict(), **{"treebank_embed.weight": torch.zeros(2, TINY["d_model"])})
    with_tb.model.load_state_dict(state, strict=True)  # the same weights, zero treebank vectors (their init)
    with_tb.treebank = "b"
    assert with_tb.predict(dev) == plain.predict(dev)


def test_old_checkpoints_load_strict_with_identical_outputs(tmp_path):
    dev = read_conllu(EWT_SAMPLE_DEV)[:12]
    p = _tiny_parser()
    cfg = p.model.config.to_dict()
    assert "treebanks" not in cfg  # a one-treebank model writes the old record, key for key
    torch.save({"model": p.model.state_dict(), "model_config": cfg,
                "task": {"kind": "parser", "vocab": p.vocab.to_dict()}}, tmp_path / "old.pt")
    loaded = Parser.load(tmp_path / "old.pt", dtype="float32")
    assert loaded.treebanks == [] and loaded.treebank is None and loaded.model.treebank_embed is None
    assert loaded.predict(dev) == p.predict(dev)
    with pytest.raises(ValueError, match="one treebank"):
        loaded.treebank = "en_gum"
    with pytest.raises(ValueError, match="no treebank vectors"):
        loaded.model.embed(torch.zeros(1, 2, dtype=torch.long), torch.ones(1, 1, dtype=torch.long),
                           torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, dtype=torch.long))


def test_shipped_model_has_treebank_vectors_and_follows_ewt_by_default():
    parser = Parser.load("en_combined", dtype="float32")
    ck = torch.load(parser.file, weights_only=True)
    assert ck["model_config"]["treebanks"] == ["en_ewt", "en_gum"]
    assert parser.treebank == "en_ewt"
    assert Parser.load("en_combined", dtype="float32", treebank="en_gum").treebank == "en_gum"


# ----------------------------------------------------------------------------- several training files (CLI)
def test_multi_file_training_logs_every_dev_file_and_selects_on_the_first(combined):
    ck = torch.load(combined / "best.pt", weights_only=True)
    assert ck["model_config"]["treebanks"] == ["xx_a", "xx_b"]
    info = json.loads((combined / "config.json").read_text())
    assert info["data"]["train_sets"]["xx_b"]["treebank"] == 1 and info["data"]["train_sets"]["xx_a"]["sentences"] == 60
    evals = [json.loads(line) for line in (combined / "log.jsonl").read_text().splitlines()]
    evals = [e for e in evals if e["kind"] == "eval"]
    assert [e["step"] for e in evals] == [2, 4]
    assert all("las" in e and "xx_b.las" in e and "xx_b.upos" in e for e in evals)
    assert ck["best"] == max(e["las"] for e in evals)  # best.pt by the first dev file


def test_parse_treebank_option(combined, data, tmp_path, capsys):
    dev = data / "xx_b-ud-dev.conllu"
    for name in ("xx_a", "xx_b"):
        assert main(["parse", "--model", str(combined), str(dev), "-o", str(tmp_path / f"{name}.conllu"),
                     "--treebank", name, "--dtype", "float32", "--threads", "1", "--no-progress"]) == 0
        assert len(read_conllu(tmp_path / f"{name}.conllu")) == 10
    assert main(["parse", "--model", str(combined), str(dev), "--treebank", "en_gum", "--threads", "1"]) == 2
    assert "--treebank" in capsys.readouterr().err
    parser = Parser.load(combined, dtype="float32", treebank="xx_b")
    assert parser.treebank == "xx_b" and parser.treebanks == ["xx_a", "xx_b"]


def test_average_last_writes_the_mean_of_the_kept_checkpoints(combined):
    steps = sorted(p.name for p in combined.glob("step-*.pt"))
    assert steps == ["step-0000002.pt", "step-0000004.pt"]
    a, b = (torch.load(combined / s, weights_only=True)["model"] for s in steps)
    avg = torch.load(combined / "averaged.pt", weights_only=True)
    assert avg["averaged"]["steps"] == [2, 4]
    for k, v in avg["model"].items():
        assert torch.allclose(v, (a[k] + b[k]) / 2, rtol=1e-6, atol=1e-7), k
    assert Parser.load(combined / "averaged.pt", dtype="float32").treebanks == ["xx_a", "xx_b"]
    info = json.loads((combined / "config.json").read_text())
    assert info["average"]["steps"] == [2, 4] and "las" in info["average"] and "xx_b.las" in info["average"]


# ----------------------------------------------------------------------------- warm start
def test_warm_start_copies_matching_weights_and_keeps_the_vocabulary(source, data):
    src = load_source(source)
    train = read_conllu(data / "xx_a-ud-train.conllu") + read_conllu(data / "xx_b-ud-train.conllu")
    vocab, added = src.vocab.extend(train)
    assert vocab.words == src.vocab.words and vocab.chars == src.vocab.chars
    assert vocab.lemma_rules == src.vocab.lemma_rules  # rules it lacks are its <unk> class
    assert "dep:xxb" in added["rels"] and "Xxb=Yes" in added["feats"]
    assert vocab.rels[: len(src.vocab.rels)] == src.vocab.rels  # old ids keep their meaning
    model = ParserModel(warm_config(src, vocab, {}, ["xx_a", "xx_b"]))
    report = copy_weights(model, src)
    state = model.state_dict()
    assert report.new == ["treebank_embed.weight"] and not report.unused
    assert torch.equal(state["treebank_embed.weight"], torch.zeros(2, 32))
    for k in report.copied:
        assert torch.equal(state[k], src.state[k].float()), k
    assert {"rel.U", "rel.W.weight", "taggers.feats.out.weight", "encoder.layers.0.self_attn.label_key"} <= set(
        report.grown)
    for k, (old, new) in report.grown.items():
        assert torch.equal(state[k][:old], src.state[k].float()), k
        assert state[k].shape[0] == new > old
    # new classes of output layers start neutral: zero weights, together as likely as the least likely old class
    for layer in ("rel.W", "taggers.feats.out"):
        old, new = report.grown[f"{layer}.bias"]
        assert not state[f"{layer}.weight"][old:].any()
        least = float(src.state[f"{layer}.bias"].float().min())
        assert torch.allclose(state[f"{layer}.bias"][old:], torch.full((new - old,), least - math.log(new - old)))
    assert len(report.copied) + len(report.grown) + len(report.new) == len(state)


def test_warm_start_run_records_its_source_and_resumes_exactly(source, data):
    def run(out, steps, *extra):
        return main(["train", "parser", "--init-from", str(source), "--train", str(data / "xx_a-ud-train.conllu"),
                     str(data / "xx_b-ud-train.conllu"), "--dev", str(data / "xx_a-ud-dev.conllu"), "--out",
                     str(out), "--max-steps", str(steps), "--eval-every", "2", "--average-last", "2", *FLAT, *extra,
                     *TINY_ARGS[8:]])

    assert run(data / "warm_full", 4) == 0
    assert run(data / "warm_cut", 2) == 0
    assert run(data / "warm_cut", 4, "--resume") == 0  # no --init-from needed to be exact: weights come from last.pt
    full = torch.load(data / "warm_full" / "last.pt", weights_only=True)
    cut = torch.load(data / "warm_cut" / "last.pt", weights_only=True)
    assert full["step"] == cut["step"] == 4
    assert full["train_config"]["init_from"] == cut["train_config"]["init_from"] == str(source)
    for k, v in full["model"].items():
        assert torch.equal(v, cut["model"][k]), k
    # the kept step snapshots (written before last.pt) and their average are those of the uninterrupted run
    assert sorted(p.name for p in (data / "warm_cut").glob("step-*.pt")) == ["step-0000002.pt", "step-0000004.pt"]
    avg_full, avg_cut = (torch.load(data / d / "averaged.pt", weights_only=True) for d in ("warm_full", "warm_cut"))
    assert all(torch.equal(v, avg_cut["model"][k]) for k, v in avg_full["model"].items())
    src = torch.load(source / "best.pt", weights_only=True)["model"]
    assert full["model"]["word_embed.weight"].shape == src["word_embed.weight"].shape
    assert not torch.equal(full["model"]["arc.U"], src["arc.U"])  # it trained


def test_warm_start_at_lr_zero_parses_like_its_source(source, data):
    out = data / "warm_lr0"
    assert main(["train", "parser", "--init-from", str(source), "--train", str(data / "xx_a-ud-train.conllu"),
                 str(data / "xx_b-ud-train.conllu"), "--dev", str(data / "xx_a-ud-dev.conllu"), "--out", str(out),
                 "--max-steps", "1", "--eval-every", "0", "--lr", "0", *TINY_ARGS[8:]]) == 0
    dev = read_conllu(data / "xx_a-ud-dev.conllu")
    warm = Parser.load(out, dtype="float32")
    assert warm.treebank == "xx_a" and warm.vocab.words == Parser.load(source, dtype="float32").vocab.words
    # zero treebank vectors and unchanged weights: the source's trees from the empty graph (later iterations
    # read relations, and the rows of the labels new to the source are fresh)
    before = Parser.load(source, dtype="float32").predict(dev, refine_steps=0)
    after = warm.predict(dev, refine_steps=0)
    assert [s.heads for s in after] == [s.heads for s in before]
