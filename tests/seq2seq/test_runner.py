"""Translation trains through the one training runner (g2gt.core.run): config.json, --average-last, resume,
and checkpoints written before the renames (encoder_labels, max_tokens) still load."""

from __future__ import annotations

import json

import pytest
import torch

from fixture_paths import FIXTURES_MT
from g2gt.cli.main import main as cli_main
from g2gt.core.checkpoint import read_log
from g2gt.seq2seq import Seq2SeqConfig, seq2seq_train_config, read_parallel, train_seq2seq, training_card

SRC, TGT = FIXTURES_MT / "train.en", FIXTURES_MT / "train.de"
SMALL = dict(bpe_vocab=300, d_model=32, num_layers=1, num_heads=2, ffn_dim=64, eval_sentences=4, progress=False,
             device="cpu", amp="none")


def _configs(**fields):
    """``(Seq2SeqConfig, TrainConfig)`` of keyword fields, each given to the dataclass that has it."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(Seq2SeqConfig)}
    return (Seq2SeqConfig(**{k: v for k, v in fields.items() if k in names}),
            seq2seq_train_config(**{k: v for k, v in fields.items() if k not in names}))


@pytest.fixture(scope="module")
def pairs():
    return read_parallel(SRC, TGT)


def test_config_json_is_the_runners(tmp_path, pairs):
    src, tgt = pairs
    train_seq2seq(src, tgt, src[:6], tgt[:6], tmp_path, *_configs(max_steps=4, eval_every=2, final_beam=0,
                                                                           **SMALL))
    info = json.loads((tmp_path / "config.json").read_text())
    assert {"model_config", "train_config", "task", "data", "parameters", "steps", "train_seconds",
            "best_dev"} <= set(info)
    assert info["task"]["kind"] == "seq2seq" and info["task"]["recipe"]["num_layers"] == 1
    assert info["task"]["settings"]["batch_tokens"] == 2048
    assert info["model_config"]["num_labels"] == [34] and info["train_config"]["metric"] == "dev_loss"
    evals = [e for e in read_log(tmp_path / "log.jsonl") if e["kind"] == "eval"]
    assert info["steps"] == 4 and info["best_dev"] == min(e["dev_loss"] for e in evals)
    card = training_card(tmp_path)
    assert card["training"]["best_dev"] == {"dev_loss": info["best_dev"]} and card["recipe"]["num_heads"] == 2
    assert card["training"]["train_seconds"] == info["train_seconds"]


def test_average_last_writes_and_scores_the_average(tmp_path, pairs):
    src, tgt = pairs
    train_seq2seq(src, tgt, src[:6], tgt[:6], tmp_path,
                  *_configs(max_steps=4, eval_every=1, final_beam=2, average_last=2, **SMALL))
    info = json.loads((tmp_path / "config.json").read_text())
    assert info["average"]["steps"] == [3, 4] and "dev_loss" in info["average"]
    assert info["train_config"]["keep_last"] == 2  # the snapshots the average needs were kept
    snaps = [torch.load(tmp_path / f"step-{s:07d}.pt", weights_only=True)["model"] for s in (3, 4)]
    avg = torch.load(tmp_path / "averaged.pt", weights_only=True)["model"]
    name = "src_embed.weight"
    torch.testing.assert_close(avg[name], (snaps[0][name] + snaps[1][name]) / 2)
    assert len((tmp_path / "dev.averaged.hyp").read_text(encoding="utf-8").splitlines()) == 6
    assert json.loads((tmp_path / "final.averaged.json").read_text())["beam"] == 2
    assert (tmp_path / "final.json").exists()  # best.pt's own, as before


def test_cli_average_last_and_resume(tmp_path, capsys):
    out = tmp_path / "run"
    common = ["train", "seq2seq", "--src-train", str(SRC), "--tgt-train", str(TGT), "--src-dev", str(SRC),
              "--tgt-dev", str(TGT), "--out", str(out), "--bpe-vocab", "300", "--d-model", "32", "--layers", "1",
              "--ffn-dim", "64", "--heads", "2", "--eval-every", "2", "--eval-sentences", "4", "--final-beam", "0",
              "--no-progress", "--device", "cpu", "--average-last", "2"]
    assert cli_main(common + ["--max-steps", "2"]) == 0
    assert cli_main(common + ["--max-steps", "4", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "trained 4 updates" in err and "averaged the weights of steps 2, 4" in err
    info = json.loads((out / "config.json").read_text())
    assert info["steps"] == 4 and info["average"]["steps"] == [2, 4]
    assert [e["step"] for e in read_log(out / "log.jsonl") if e["kind"] == "eval"] == [2, 4]
