"""`g2gt train pipeline`: any UD treebank folder -> a model folder with a scored card, end to end; resume reuses
finished stages and continues unfinished ones; the budget split and the treebank files."""

from __future__ import annotations

import json
import os

import pytest
import torch

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.evaluate import METRICS, validate_file
from g2gt.ud.io import read_conllu, write_conllu
from g2gt.ud.recipe.train import STAGE_SHARES, find_treebank, split_budget
from g2gt.core.run_folder import run_state
from g2gt.ud.tokenize import text_from_sentences
from g2gt.ud.recipe.score import raw_text


def _treebank(folder, n_train: int, n_dev: int, name: str = "en_tiny"):
    folder.mkdir(parents=True, exist_ok=True)
    write_conllu(read_conllu(EWT_SAMPLE_TRAIN)[:n_train], folder / f"{name}-ud-train.conllu")
    write_conllu(read_conllu(EWT_SAMPLE_DEV)[:n_dev], folder / f"{name}-ud-dev.conllu")
    return folder


def test_split_budget():
    three = split_budget(30, ["segmenter", "parser", "enhancer"])
    assert three == pytest.approx({s: 30 * STAGE_SHARES[s] for s in ("segmenter", "parser", "enhancer")})
    four = split_budget(30, ["segmenter", "parser", "enhancer", "coref"])  # shares renormalised over the stages
    assert four == pytest.approx({s: 30 * v / sum(STAGE_SHARES.values()) for s, v in STAGE_SHARES.items()})
    two = split_budget(10, ["segmenter", "parser"], {"segmenter": 4})
    assert two == pytest.approx({"segmenter": 4, "parser": 6})
    short = split_budget(3, ["segmenter", "parser", "enhancer"])  # the segmenter's floor: one minute
    assert short == pytest.approx({"segmenter": 1.0, "parser": 2 * 0.65 / 0.8, "enhancer": 2 * 0.15 / 0.8})
    assert split_budget(0.3, ["segmenter", "parser"])["segmenter"] == pytest.approx(0.1)  # at most a third
    with pytest.raises(ValueError, match="parser stage gets"):
        split_budget(3, ["segmenter", "parser"], {"segmenter": 3})


def test_find_treebank(tmp_path):
    tb = _treebank(tmp_path / "UD_X", 2, 2, "fr_sequoia")
    files = find_treebank(tb)
    assert (files.name, files.lang, files.train.name) == ("fr_sequoia", "fr", "fr_sequoia-ud-train.conllu")
    (tb / "other-ud-dev.conllu.gz").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="2 \\*-ud-dev"):
        find_treebank(tb)
    assert find_treebank(None, tb / "fr_sequoia-ud-train.conllu", tb / "x.conllu").lang == "fr"


def test_train_pipeline_end_to_end_and_resume(tmp_path, capsys):
    """A 20-sentence treebank and a few seconds of budget: every stage trains (the EWT sample has DEPS, so the
    enhancer too), the model folder loads, the card holds every official metric for raw text and gold
    tokenisation, the raw-text output is valid CoNLL-U that gives the text back; --resume reuses finished
    stages and continues an unfinished one with its stored budget."""
    tb = _treebank(tmp_path / "UD_English-Tiny", 20, 10)
    out = tmp_path / "run"
    args = ["train", "pipeline", "--treebank", str(tb), "--out", str(out), "--max-minutes", "0.1", "--threads", "1",
            "--no-progress"]
    assert main(args) == 0
    card = json.loads((out / "model" / "model.json").read_text())
    said = capsys.readouterr().err  # the run ends with its dev scores, as the card holds them
    raw = card["dev_scores_official_scorer"]["raw text"]
    assert f"dev scores (raw text, official scorer): Tokens {raw['Tokens']:.2f}, Words {raw['Words']:.2f}" in said
    assert f"LAS {raw['LAS']:.2f}, ELAS {raw['ELAS']:.2f}" in said
    assert set(card["parts"]) == {"segmenter", "parser", "enhancer"}
    for row in ("raw text", "gold tokenisation"):
        assert set(card["dev_scores_official_scorer"][row]) == set(METRICS)
        assert all(0 <= v <= 100 for v in card["dev_scores_official_scorer"][row].values())
    assert card["dev_scores_official_scorer"]["gold tokenisation"]["Words"] == 100.0
    assert card["evaluation"]["text_round_trip"] and card["evaluation"]["validator_level2_errors"] == 0
    assert card["commands"]["pipeline"] == f"g2gt train pipeline --treebank {tb} --out {out} --max-minutes 0.1 --threads 1"
    assert card["training"]["cpu"] and card["training"]["wall_minutes"] > 0
    assert card["stages"]["segmenter"]["mwt_rules"] == "en"  # an English treebank keeps the clitic rules
    pred = read_conllu(out / "eval" / "dev_raw.conllu")
    assert text_from_sentences(pred) == raw_text(read_conllu(tb / "en_tiny-ud-dev.conllu"))
    assert validate_file(out / "eval" / "dev_raw.conllu", lang="en", level=2) == []

    # a second run without --resume refuses to touch the folders
    assert main(args) == 2
    assert "pass --resume" in capsys.readouterr().err
    # the parser's run is finished and reused; make the segmenter's look interrupted (3 more updates to go)
    parser_mtime = os.stat(out / "parser" / "last.pt").st_mtime_ns
    last = torch.load(out / "segmenter" / "last.pt", weights_only=True)
    step = last["step"]
    last["train_config"] = {**last["train_config"], "max_minutes": 0.0, "max_steps": step + 3}
    torch.save(last, out / "segmenter" / "last.pt")
    assert not run_state(out / "segmenter").finished and run_state(out / "parser").finished
    assert main(args + ["--resume", "--no-eval"]) == 0
    assert run_state(out / "segmenter").step == step + 3
    assert os.stat(out / "parser" / "last.pt").st_mtime_ns == parser_mtime
    card = json.loads((out / "model" / "model.json").read_text())
    assert card["stages"]["parser"]["reused"] and not card["stages"]["segmenter"]["reused"]


def test_train_pipeline_usage_errors(tmp_path, capsys):
    assert main(["train", "pipeline", "--out", str(tmp_path / "o")]) == 2
    assert "--treebank" in capsys.readouterr().err
    assert main(["train", "pipeline", "--treebank", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "no such folder" in capsys.readouterr().err


@pytest.mark.slow
def test_any_treebank_three_minutes(tmp_path):
    """The issue's target row: `train pipeline --max-minutes 3` runs end to end and writes valid CoNLL-U (a
    treebank from the shipped EWT sample: 1,200 training and 300 dev sentences)."""
    tb = _treebank(tmp_path / "UD_English-Sample", 1200, 300, "en_sample")
    out = tmp_path / "run"
    assert main(["train", "pipeline", "--treebank", str(tb), "--out", str(out), "--max-minutes", "3",
                 "--threads", "1", "--no-progress"]) == 0
    card = json.loads((out / "model" / "model.json").read_text())
    raw = card["dev_scores_official_scorer"]["raw text"]
    assert raw["Tokens"] > 90 and raw["UPOS"] > 40
    assert card["evaluation"]["text_round_trip"] and card["evaluation"]["validator_level2_errors"] == 0
