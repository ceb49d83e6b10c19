"""`g2gt train pipeline` on a treebank with CorefUD `Entity=` annotations: the coref stage is detected, trained
with the `g2gt train coref` recipe inside the pipeline's budget, written into the model folder (coref.pt, its
threshold, dev scores) and recorded in the card; `--no-coref` leaves it out, `--resume` reuses it (also one
trained on its own with `g2gt train coref --out OUT/coref`), and `--source coref=MODEL` takes it from a model.

A synthetic treebank of short documents (two people, pronouns, a book), every run capped at 2 updates."""

from __future__ import annotations

import json
import os
import shlex

import pytest

from g2gt.cli.main import main
from g2gt.core.run_folder import run_commands, run_state
from g2gt.ud.recipe.train import split_budget

LAYOUT = "GRP-etype-infstat-salience-centering-minspan-link-identity"
PEOPLE = [("Mary", "John"), ("Anna", "Peter"), ("Lucy", "Tom"), ("Emma", "Paul"), ("Sara", "Mark"),
          ("Kate", "Jack"), ("Rose", "Sam"), ("Jane", "Bob"), ("Ella", "Dan"), ("Nina", "Leo")]
COMMON = ["--threads", "1", "--no-progress"]
TINY_COREF = ["--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim", "32", "--span-dim", "16",
              "--antecedent-dim", "16", "--char-filters", "16"]


def _doc(k: int, a: str, b: str) -> str:
    """Three sentences: ``A met B. She gave him her old book. B liked the book.`` with their entities."""
    e = "{}-new-sssss-cf{}-1-coref"
    rows = [
        [("Mary", a, "PROPN", "NNP", 2, "nsubj", f"Entity=(1-person-{e.format('x', 1)[2:]})"),
         ("met", "meet", "VERB", "VBD", 0, "root", "_"),
         (b, b, "PROPN", "NNP", 2, "obj", f"Entity=(2-person-{e.format('x', 2)[2:]})|SpaceAfter=No"),
         (".", ".", "PUNCT", ".", 2, "punct", "_")],
        [("She", "she", "PRON", "PRP", 2, "nsubj", "Entity=(1-person-giv:act-sssss-cf1-1-coref)"),
         ("gave", "give", "VERB", "VBD", 0, "root", "_"),
         ("him", "he", "PRON", "PRP", 2, "iobj", "Entity=(2-person-giv:act-sssss-cf2-1-coref)"),
         ("her", "her", "PRON", "PRP$", 6, "nmod:poss", "Entity=(3-object-new-nnnnn-cf3-3-coref(1-person-giv:act-sssss-cf1-1-coref)"),
         ("old", "old", "ADJ", "JJ", 6, "amod", "_"),
         ("book", "book", "NOUN", "NN", 2, "obj", "Entity=3)|SpaceAfter=No"),
         (".", ".", "PUNCT", ".", 2, "punct", "_")],
        [(b, b, "PROPN", "NNP", 2, "nsubj", "Entity=(2-person-giv:act-sssss-cf2-1-coref)"),
         ("liked", "like", "VERB", "VBD", 0, "root", "_"),
         ("the", "the", "DET", "DT", 4, "det", "Entity=(3-object-giv:act-nnnnn-cf3-2-coref"),
         ("book", "book", "NOUN", "NN", 2, "obj", "Entity=3)|SpaceAfter=No"),
         (".", ".", "PUNCT", ".", 2, "punct", "_")],
    ]
    rows[0][0] = (a,) + rows[0][0][1:]
    out = [f"# newdoc id = d{k}", f"# global.Entity = {LAYOUT}"]
    for j, sent in enumerate(rows, 1):
        text = ""
        for form, *_rest, misc in sent:
            text += form + ("" if "SpaceAfter=No" in misc else " ")
        out += [f"# sent_id = d{k}-{j}", f"# text = {text.strip()}"]
        out += ["\t".join(map(str, (i, form, lemma, upos, xpos, "_", head, rel, "_", misc)))
                for i, (form, lemma, upos, xpos, head, rel, misc) in enumerate(sent, 1)]
        out.append("")
    return "\n".join(out) + "\n"


def _treebank(folder, entities: bool = True):
    folder.mkdir(parents=True, exist_ok=True)
    train = "".join(_doc(k, a, b) for k, (a, b) in enumerate(PEOPLE[:8]))
    dev = "".join(_doc(k, a, b) for k, (a, b) in enumerate(PEOPLE[8:], 8))
    if not entities:
        train, dev = (t.replace("Entity=", "Ent=") for t in (train, dev))
    (folder / "en_toy-ud-train.conllu").write_text(train)
    (folder / "en_toy-ud-dev.conllu").write_text(dev)
    return folder


def _pipeline(tb, out, *extra) -> list[str]:
    return [str(a) for a in ["train", "pipeline", "--treebank", tb, "--out", out, "--max-minutes", "2",
                             "--max-steps", "2", *extra, *COMMON]]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("coref_pipeline")
    tb, out = _treebank(root / "UD_English-Toy"), root / "run"
    assert main(_pipeline(tb, out)) == 0
    return tb, out, json.loads((out / "model" / "model.json").read_text())


def test_coref_stage_detected_trained_and_in_the_model_folder(run):
    import g2gt
    from g2gt.ud.coref.resolver import Coreferencer

    tb, out, card = run
    assert set(card["parts"]) == {"segmenter", "parser", "coref"}  # no DEPS: no enhancer
    assert (out / "model" / "coref.pt").is_file() and run_state(out / "coref").step == 2
    assert "coreference" in card["description"]
    assert card["stages"]["coref"]["step"] == 2 and card["stages"]["coref"]["parameters"] > 0
    expected = split_budget(2, ["segmenter", "parser", "coref"])
    assert card["budget_minutes"]["coref"] == pytest.approx(expected["coref"], abs=0.01)
    assert "chosen" in card["coref_threshold"]
    assert Coreferencer.load(out / "model").threshold == card["coref_threshold"]["chosen"]
    for kind in ("raw text", "gold tokenisation"):
        row = card["coref_dev_scores"][kind]
        assert set(row) >= {"MUC", "B3", "CEAF-e", "CoNLL", "mention F1 (head)", "entity type accuracy"}
        assert all(0 <= v <= 100 for v in row.values())
    nlp = g2gt.load(out / "model", device="cpu")
    text = "Mary met John. She gave him her book."
    doc = nlp(text, coref=True)
    assert nlp.stages["coref"].loaded  # the trained stage ran (it loads on first use)
    plain = nlp(text)
    assert [s.forms for s in doc] == [s.forms for s in plain]  # coreference only annotates
    entity = [m.split("=", 1)[1] for line in doc.conllu().splitlines() if line and not line.startswith("#")
              for m in line.split("\t")[9].split("|") if m.startswith("Entity=")]
    assert sum(v.count("(") for v in entity) == sum(v.count(")") for v in entity)  # every mention opened is closed
    assert "Entity=" not in plain.conllu()
    assert (out / "eval" / "dev_raw_coref.conllu").is_file()


def test_card_records_the_command_and_cli_options(run):
    tb, out, card = run
    command = shlex.join(["g2gt", "train", "pipeline", "--treebank", str(tb), "--out", str(out), "--max-minutes",
                          "2", "--max-steps", "2", "--threads", "1"])
    assert card["commands"]["coref"] == command == card["commands"]["pipeline"]
    assert run_commands(out / "coref") == [command]


def test_resume_reuses_the_coref_stage_and_no_coref_leaves_it_out(run, tmp_path, capsys):
    import shutil

    tb, out, _ = run
    other = tmp_path / "run"
    shutil.copytree(out, other)
    stamp = os.stat(other / "coref" / "last.pt").st_mtime_ns
    assert main(_pipeline(tb, other, "--no-eval")) == 2  # never overwritten without --resume
    assert main(_pipeline(tb, other, "--resume", "--no-eval")) == 0
    assert "coref: reusing the finished run" in capsys.readouterr().err
    assert os.stat(other / "coref" / "last.pt").st_mtime_ns == stamp
    card = json.loads((other / "model" / "model.json").read_text())
    assert card["stages"]["coref"]["reused"] and "coref" in card["parts"]
    assert main(_pipeline(tb, other, "--resume", "--no-eval", "--no-coref")) == 0
    card = json.loads((other / "model" / "model.json").read_text())
    assert "coref" not in card["parts"] and "coref" not in card["stages"]
    assert not (other / "model" / "coref.pt").exists()  # the earlier export's stage is not shipped


def test_a_coref_run_trained_on_its_own_is_picked_up(tmp_path, capsys):
    tb, out = _treebank(tmp_path / "UD_English-Toy"), tmp_path / "run"
    data = ["--train", str(tb / "en_toy-ud-train.conllu"), "--dev", str(tb / "en_toy-ud-dev.conllu")]
    own = ["train", "coref", *data, "--out", str(out / "coref"), "--max-steps", "3", *TINY_COREF, *COMMON]
    assert main(own) == 0
    assert main(_pipeline(tb, out, "--resume", "--no-eval")) == 0
    card = json.loads((out / "model" / "model.json").read_text())
    assert card["stages"]["coref"]["reused"] and card["steps"]["coref"] == 3
    assert card["commands"]["coref"] == shlex.join(["g2gt", *own])
    assert card["commands"]["pipeline"].endswith("--resume")


def test_source_coref_from_a_model(run, tmp_path):
    tb, out, _ = run
    other = tmp_path / "run"
    assert main(_pipeline(tb, other, "--no-eval", "--source", f"coref={out / 'model'}")) == 0
    card = json.loads((other / "model" / "model.json").read_text())
    assert "coref" in card["parts"] and card["stages"]["coref"]["source"] == str(out / "model")
    assert not (other / "coref").exists()
    assert card["commands"]["coref"].startswith(f"# taken from {out / 'model'}")


def test_without_entities_no_coref_stage(tmp_path):
    tb, out = _treebank(tmp_path / "UD_English-Toy", entities=False), tmp_path / "run"
    assert main(_pipeline(tb, out, "--no-eval")) == 0
    card = json.loads((out / "model" / "model.json").read_text())
    assert set(card["parts"]) == {"segmenter", "parser"} and not (out / "coref").exists()


def test_an_interrupted_coref_stage_is_continued(tmp_path, capsys):
    """A coref run stopped at update 2 of 4 (its stored budget) is continued by --resume up to update 4."""
    from g2gt.core.checkpoint import load_checkpoint, save_atomic

    tb, out = _treebank(tmp_path / "UD_English-Toy"), tmp_path / "run"
    data = ["--train", str(tb / "en_toy-ud-train.conllu"), "--dev", str(tb / "en_toy-ud-dev.conllu")]
    assert main(["train", "coref", *data, "--out", str(out / "coref"), "--max-steps", "2", *TINY_COREF,
                 *COMMON]) == 0
    last = load_checkpoint(out / "coref" / "last.pt")
    last["train_config"]["max_steps"] = 4  # as if the run had been stopped half-way
    save_atomic(last, out / "coref" / "last.pt")
    assert not run_state(out / "coref").finished
    capsys.readouterr()
    assert main(_pipeline(tb, out, "--resume", "--no-eval")) == 0
    assert "coref: resuming" in capsys.readouterr().err
    assert run_state(out / "coref").step == 4 and run_state(out / "coref").finished
    card = json.loads((out / "model" / "model.json").read_text())
    assert card["steps"]["coref"] == 4 and not card["stages"]["coref"]["reused"]
    assert len(run_commands(out / "coref")) == 2  # its own command, then the pipeline's
