"""`g2gt train coref --init-from MODEL`: a warm start from a trained coreference stage (a training folder, a
checkpoint, a model folder or a shipped model's name) starts as the source: same predictions at step 0 (one
update with lr 0 leaves the weights as they are), its threshold and vocabularies; recorded in the checkpoint
and the card; a resume keeps it; the architecture cannot change."""

import json

import pytest

from g2gt.cli.main import main
from g2gt.core.checkpoint import load_checkpoint
from g2gt.ud.coref.io import documents
from g2gt.ud.coref.data import make_doc
from g2gt.ud.coref.resolver import Coreferencer
from g2gt.ud.io import to_conllu_string
from g2gt.ud.io.conllu import read_conllu

TINY = ["--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim", "32", "--span-dim", "16",
        "--antecedent-dim", "16", "--char-filters", "16", "--threads", "1", "--no-progress"]
FROZEN = ["--lr", "0", "--max-steps", "1", "--eval-every", "1", "--threads", "1", "--no-progress"]


def _predictions(resolver, sentences):
    return resolver.predict_docs([make_doc(d, resolver.vocab) for d in documents(sentences)])


@pytest.fixture
def source(tmp_path, doc_text):
    """A tiny trained coreference run with a tuned threshold saved as coref.pt: ``(data file, coref.pt)``."""
    root = tmp_path / "source"
    root.mkdir()
    data = root / "doc.conllu"
    data.write_text(doc_text)
    run = root / "src"
    assert main(["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(run), "--max-steps", "3",
                 "--eval-every", "3", "--lr", "3e-3"] + TINY) == 0
    src = Coreferencer.load(run)
    src.threshold = -0.75  # a tuned threshold travels with the stage
    return data, src.save(root / "coref.pt")


def test_warm_start_reproduces_the_source_at_step_0(source, tmp_path):
    data, file = source
    out = tmp_path / "warm"
    assert main(["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(out),
                 "--init-from", str(file)] + FROZEN) == 0
    src, warm = Coreferencer.load(file), Coreferencer.load(out)
    sents = read_conllu(str(data))
    assert warm.threshold == src.threshold == -0.75
    assert warm.vocab.to_dict() == src.vocab.to_dict()
    assert warm.model.config == src.model.config
    assert _predictions(warm, sents) == _predictions(src, sents)
    assert any(_predictions(src, sents))  # mentions to compare
    assert to_conllu_string(warm(sents)) == to_conllu_string(src(sents))
    ck = load_checkpoint(out / "last.pt")
    assert ck["train_config"]["init_from"] == str(file)
    assert json.loads((out / "config.json").read_text())["train_config"]["init_from"] == str(file)


def test_init_from_a_shipped_model_name(source, tmp_path):
    from g2gt.core.registry import find_model

    data, _ = source
    out = tmp_path / "warm"
    assert main(["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(out),
                 "--init-from", "en_combined"] + FROZEN) == 0
    shipped = Coreferencer.load(find_model("en_combined") / "coref.pt")
    warm = Coreferencer.load(out)
    sents = read_conllu(str(data))
    assert warm.threshold == shipped.threshold
    assert _predictions(warm, sents) == _predictions(shipped, sents)


def test_card_lists_the_source_commands_and_resume_keeps_init_from(source, tmp_path):
    from g2gt.ud.recipe.export import stage_commands
    from g2gt.core.run_folder import run_commands

    data, file = source
    out = tmp_path / "warm"
    base = ["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(out), "--eval-every", "1",
            "--threads", "1", "--no-progress"]
    assert main(base + ["--init-from", str(file.parent / "src"), "--max-steps", "1"]) == 0
    assert main(base + ["--max-steps", "2", "--resume"]) == 0  # no --init-from: the run's own is kept
    assert load_checkpoint(out / "last.pt")["train_config"]["init_from"] == str(file.parent / "src")
    lines = stage_commands({"coref": out})["coref"].splitlines()
    made_source = run_commands(file.parent / "src")
    assert lines[0] == f"# warm start from {file.parent / 'src'}; it was made by:"
    assert lines[1:1 + len(made_source)] == made_source and lines[1 + len(made_source)] == "# then this run:"
    assert lines[-2:] == run_commands(out) and len(run_commands(out)) == 2


def test_warm_start_keeps_the_architecture(source, tmp_path, capsys):
    data, file = source
    args = ["train", "coref", "--train", str(data), "--dev", str(data), "--init-from", str(file)] + FROZEN
    assert main(args + ["--out", str(tmp_path / "a"), "--d-model", "64"]) == 2
    assert "keeps the source's architecture" in capsys.readouterr().err
    assert main(args + ["--out", str(tmp_path / "b"), "--dropout", "0.3"]) == 0  # shape-free: allowed
    assert load_checkpoint(tmp_path / "b" / "last.pt")["model_config"]["dropout"] == 0.3


def test_init_from_a_model_without_coref_or_not_coref(source, tmp_path, capsys):
    from g2gt.ud.coref.stage import coref_checkpoint
    from g2gt.core.registry import find_model

    data, file = source
    assert coref_checkpoint("en_combined") == find_model("en_combined") / "coref.pt"
    with pytest.raises(FileNotFoundError, match="no coref.pt"):
        coref_checkpoint(_bare_model(tmp_path))
    parser = find_model("en_combined") / "parser.pt"
    args = ["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(tmp_path / "x"),
            "--init-from", str(parser)] + FROZEN
    assert main(args) == 2
    assert "not a coreference checkpoint" in capsys.readouterr().err


def _bare_model(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "parser.pt").write_bytes(b"")
    (folder / "model.json").write_text("{}")
    return folder
