"""`g2gt train pipeline --source STAGE=MODEL`: a stage taken as it is from a trained model (its weights, its
facts and the commands that made it in the new card), the budget left to the stages that train; a warm-started
parser's card lists the commands that made its source before its own."""

from __future__ import annotations

import json

import pytest
import torch

from g2gt.cli.main import main
from g2gt.ud.evaluate import evaluate
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu, write_conllu
from g2gt.ud.recipe.export import source_commands
from g2gt.ud.parse.vocab import unambiguous_lemmas


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """A tiny treebank and a pipeline trained on it for a few updates per stage (no enhancer, no scoring)."""
    root = tmp_path_factory.mktemp("sources")
    tb = root / "UD_English-Tiny"
    tb.mkdir()
    write_conllu(read_conllu(EWT_SAMPLE_TRAIN)[:16], tb / "en_tiny-ud-train.conllu")
    write_conllu(read_conllu(EWT_SAMPLE_DEV)[:6], tb / "en_tiny-ud-dev.conllu")
    out = root / "run1"
    assert main(["train", "pipeline", "--treebank", str(tb), "--out", str(out), "--max-minutes", "0.2",
                 "--max-steps", "3", "--threads", "1", "--no-enhancer", "--no-eval", "--no-progress"]) == 0
    return tb, out


def _weights(path):
    return torch.load(path, weights_only=True)["model"]


def test_source_stage_is_taken_as_it_is(first_run, capsys):
    tb, run1 = first_run
    run2 = run1.parent / "run2"
    # a longer parser warm-started from the first model, then the pipeline around it with run1's segmenter
    assert main(["train", "parser", "--init-from", str(run1 / "model"), "--train", str(tb / "en_tiny-ud-train.conllu"),
                 "--dev", str(tb / "en_tiny-ud-dev.conllu"), "--out", str(run2 / "parser"), "--max-steps", "2",
                 "--average-last", "2", "--save-every", "1", "--threads", "1", "--no-progress"]) == 0
    assert main(["train", "pipeline", "--treebank", str(tb), "--out", str(run2), "--resume", "--no-enhancer",
                 "--source", f"segmenter={run1 / 'model'}", "--threads", "1", "--no-progress"]) == 0
    assert not (run2 / "segmenter").exists()  # nothing trained for it
    old, new = _weights(run1 / "model" / "segmenter.pt"), _weights(run2 / "model" / "segmenter.pt")
    assert old.keys() == new.keys() and all(torch.equal(old[k], new[k]) for k in old)
    # a warm start keeps the lemma lexicon of its own training data (here the same file: the same lexicon)
    lexicon = torch.load(run2 / "parser" / "best.pt", weights_only=True)["task"]["vocab"]["lemma_lexicon"]
    assert lexicon == unambiguous_lemmas(read_conllu(tb / "en_tiny-ud-train.conllu")) and len(lexicon) > 50
    # the parser that runs is the average the run asked for (stored as float16), not best.pt
    avg, shipped = _weights(run2 / "parser" / "averaged.pt"), _weights(run2 / "model" / "parser.pt")
    assert all(torch.equal(v.half() if v.is_floating_point() else v, shipped[k]) for k, v in avg.items())
    card = json.loads((run2 / "model" / "model.json").read_text())
    assert card["stages"]["parser"]["file"] == "averaged.pt" and len(card["stages"]["parser"]["averaged_steps"]) == 2
    first = json.loads((run1 / "model" / "model.json").read_text())
    seg = card["stages"]["segmenter"]
    assert seg["source"] == str(run1 / "model") and seg["reused"]
    assert seg["step"] == first["steps"]["segmenter"] and card["steps"]["segmenter"] == seg["step"]
    assert card["training_minutes"]["segmenter"] == first["training_minutes"]["segmenter"]
    # the card's raw-text Tokens is the official scorer's on the predictions the run wrote
    ev = evaluate(read_conllu(tb / "en_tiny-ud-dev.conllu"), read_conllu(run2 / "eval" / "dev_raw.conllu"))
    assert card["dev_scores_official_scorer"]["raw text"]["Tokens"] == round(ev.scores["Tokens"].f1 * 100, 2)
    # the commands: the segmenter's are run1's pipeline command; the parser's chain starts with them too
    run1_pipeline = first["commands"]["pipeline"]
    seg_lines = card["commands"]["segmenter"].splitlines()
    assert seg_lines[0].startswith("# taken from") and run1_pipeline in seg_lines
    parser_lines = card["commands"]["parser"].splitlines()
    assert parser_lines[0].startswith(f"# warm start from {run1 / 'model'}")
    then = parser_lines.index("# then this run:")
    assert run1_pipeline in parser_lines[:then] and "--init-from" in parser_lines[then + 1]
    assert "--source segmenter=" in card["commands"]["pipeline"]


def test_source_commands_of_a_card(tmp_path):
    (tmp_path / "parser.pt").write_bytes(b"")
    commands = {"parser": "g2gt train parser A", "parser (continued)": "g2gt train parser B",
                "pipeline (segmenter + expander)": "g2gt train pipeline C"}
    (tmp_path / "model.json").write_text(json.dumps({"commands": commands}))
    assert source_commands(tmp_path, "parser") == ["g2gt train parser A", "g2gt train parser B"]
    assert source_commands(tmp_path, "segmenter") == ["g2gt train pipeline C"]  # trained by the pipeline
    assert source_commands(tmp_path / "missing", "parser") == []


def test_source_errors(first_run, capsys):
    tb, run1 = first_run
    out = run1.parent / "bad"
    with pytest.raises(SystemExit) as exit_:
        main(["train", "pipeline", "--treebank", str(tb), "--out", str(out), "--source", "tagger=x"])
    assert exit_.value.code == 2
    assert "STAGE=MODEL" in capsys.readouterr().err
    assert main(["train", "pipeline", "--treebank", str(tb), "--out", str(out), "--no-enhancer",
                 "--source", f"enhancer={run1 / 'model'}"]) != 0
    assert "not a stage of this run" in capsys.readouterr().err
    assert main(["train", "pipeline", "--treebank", str(tb), "--out", str(out),
                 "--source", f"segmenter={out / 'nothing'}"]) != 0
    assert "no such file or folder" in capsys.readouterr().err
