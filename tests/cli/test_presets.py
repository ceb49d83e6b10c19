"""``--preset gpu`` of ``g2gt train parser`` / ``g2gt train seq2seq`` and the device-sized ``--batch-tokens``: the
preset resolves to the documented settings, options given on the command line win, the CPU keeps the recipe's
budget, and a run with the preset's architecture trains a few steps on the CPU."""

from __future__ import annotations

import functools
import json
import types
from pathlib import Path

import pytest
import torch

from fixture_paths import FIXTURES_MT, ROOT
from g2gt.cli.main import main
from g2gt.core.config import GPU_BUDGET_MAX
from g2gt.core.runtime import train_batch_tokens
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.seq2seq.config import SEQ2SEQ_GPU, SEQ2SEQ_TRAIN
from g2gt.ud.parse.config import PARSER_GPU, PARSER_TRAIN

DOCS = (ROOT / "docs" / "guide" / "training.md").read_text(encoding="utf-8")

#: what the docs' table says each preset sets
PARSER_DOCUMENTED = {"d_model": 512, "num_layers": 8, "ffn_dim": 2048, "arc_dim": 512, "label_dim": 128, "lr": 1e-3,
                     "max_steps": 2000, "max_minutes": 10.0, "amp": "bf16"}
SEQ2SEQ_DOCUMENTED = {"d_model": 512, "num_layers": 6, "num_heads": 8, "ffn_dim": 2048, "dropout": 0.2,
                      "max_steps": 3000, "max_minutes": 10.0, "amp": "bf16", "eval_every": 300}


def _small(tmp_path: Path, n_train: int = 100, n_dev: int = 5) -> tuple[Path, Path]:
    def head(src: Path, n: int, name: str) -> Path:
        blocks = src.read_text(encoding="utf-8").split("\n\n")[:n]
        out = tmp_path / name
        out.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
        return out

    return head(Path(EWT_SAMPLE_TRAIN), n_train, "train.conllu"), head(Path(EWT_SAMPLE_DEV), n_dev, "dev.conllu")


@pytest.fixture
def parser_call(monkeypatch):
    """Replace train_parser: record what the command passes."""
    import g2gt.ud.parse as parse

    seen = {}

    @functools.wraps(parse.train_parser)  # its signature: the command builds its task options from it
    def fake(train, dev, out, config, tc, batch_tokens, **kw):
        seen.update(config=config, tc=tc, batch_tokens=batch_tokens)
        return None, [{"las": 1.0}]

    monkeypatch.setattr(parse, "train_parser", fake)
    return seen


def _parser_argv(tmp_path: Path, *more: str) -> list[str]:
    train, dev = _small(tmp_path, 20, 3)
    return ["train", "parser", "--train", str(train), "--dev", str(dev), "--out", str(tmp_path / "run"),
            "--device", "cpu", "--no-progress", *more]


def test_the_presets_are_the_documented_settings():
    assert PARSER_GPU.values(PARSER_TRAIN) == PARSER_DOCUMENTED
    assert SEQ2SEQ_GPU.values(SEQ2SEQ_TRAIN) == SEQ2SEQ_DOCUMENTED
    for command in ("g2gt train parser --preset gpu", "g2gt train seq2seq --preset gpu"):
        assert command in DOCS
    assert "d_model 512, 8 layers, 8 heads, FFN 2048, arc 512, label 128" in DOCS and "2000 updates" in DOCS
    assert "d_model 512, 6+6 layers, 8 heads, FFN 2048, dropout 0.2" in DOCS and "3000 updates" in DOCS
    assert "still to be measured on a GPU" in DOCS


def test_parser_preset_resolves_and_the_command_line_wins(tmp_path, parser_call):
    assert main(_parser_argv(tmp_path, "--preset", "gpu")) == 0
    cfg, tc = parser_call["config"], parser_call["tc"]
    got = {k: getattr(cfg, k) for k in ("d_model", "num_layers", "ffn_dim", "arc_dim", "label_dim")}
    got |= {k: getattr(tc, k) for k in ("lr", "max_steps", "max_minutes", "amp")}
    assert got == PARSER_DOCUMENTED
    assert parser_call["batch_tokens"] == 1500  # the CPU keeps the recipe's budget
    # given options win, before or after --preset
    assert main(_parser_argv(tmp_path, "--layers", "3", "--preset", "gpu", "--amp", "none", "--batch-tokens", "900",
                             "--overwrite")) == 0
    assert parser_call["config"].num_layers == 3 and parser_call["config"].d_model == 512
    assert parser_call["tc"].amp == "none" and parser_call["batch_tokens"] == 900
    # a given value equal to the recipe's default still wins over the preset's
    assert main(_parser_argv(tmp_path, "--preset", "gpu", "--d-model", "256", "--overwrite")) == 0
    assert parser_call["config"].d_model == 256


def test_seq2seq_preset_resolves(tmp_path, monkeypatch):
    import g2gt.seq2seq as seq2seq

    seen = {}

    def fake(src_train, tgt_train, src_dev, tgt_dev, out, config, tc, **kw):
        seen.update(config=config, tc=tc)
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "config.json").write_text(json.dumps({"best_dev": 1.0}))
        return types.SimpleNamespace(steps=0)

    monkeypatch.setattr(seq2seq, "train_seq2seq", fake)
    files = ["--src-train", str(FIXTURES_MT / "train.en"), "--tgt-train", str(FIXTURES_MT / "train.de"),
             "--src-dev", str(FIXTURES_MT / "train.en"), "--tgt-dev", str(FIXTURES_MT / "train.de")]
    assert main(["train", "seq2seq", *files, "--out", str(tmp_path / "mt"), "--device", "cpu", "--preset", "gpu",
                 "--no-progress"]) == 0
    cfg, tc = seen["config"], seen["tc"]
    got = {k: getattr(cfg, k) for k in ("d_model", "num_layers", "num_heads", "ffn_dim", "dropout")}
    got |= {k: getattr(tc, k) for k in ("max_steps", "max_minutes", "amp", "eval_every")}
    assert got == SEQ2SEQ_DOCUMENTED
    assert cfg.batch_tokens == 2048  # the CPU keeps the recipe's budget


@pytest.mark.parametrize("gib,factor", [(141, GPU_BUDGET_MAX), (79.6, 4), (24, 1), (8, 1), (1000, GPU_BUDGET_MAX)])
def test_training_budgets_are_sized_to_the_gpu(monkeypatch, gib, factor):
    assert train_batch_tokens(1500, "cpu") == 1500
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda index: types.SimpleNamespace(total_memory=int(gib * 2**30)))
    assert train_batch_tokens(1500, "cuda") == 1500 * factor
    assert train_batch_tokens(2048, "cuda:0") == 2048 * factor


def test_the_help_says_how_the_budget_is_sized(capsys):
    with pytest.raises(SystemExit):
        main(["train", "parser", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default: 1500 on the CPU; on a CUDA device 1500 x (GPU memory in GiB // 16)" in text
    assert "--preset {gpu}" in text and "--d-model 512, --layers 8" in text


def test_parser_preset_architecture_trains_on_a_cpu(tmp_path):
    """Two updates of the preset's model (bf16 autocast, emulated on this CPU) on a small sample."""
    train, dev = _small(tmp_path, 40, 4)
    out = tmp_path / "run"
    assert main(["train", "parser", "--preset", "gpu", "--train", str(train), "--dev", str(dev), "--out", str(out),
                 "--device", "cpu", "--max-steps", "2", "--batch-tokens", "300", "--no-progress"]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["model_config"]["d_model"] == 512 and config["model_config"]["num_layers"] == 8
    assert config["train_config"]["amp"] == "bf16" and config["train_config"]["max_steps"] == 2
    assert (out / "best.pt").is_file()
