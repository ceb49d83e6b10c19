"""Checkpoint averaging (g2gt.core.average, `g2gt average`) and the Trainer's step snapshots (keep_last)."""

from __future__ import annotations

import pytest
import torch

from g2gt.cli.main import main
from g2gt.core.average import average_checkpoints
from g2gt.core.checkpoint import prune_snapshots, snapshot_path, snapshots


def _checkpoint(path, seed: int, step: int, shape=(3, 4), config=None) -> dict:
    g = torch.Generator().manual_seed(seed)
    ck = {"model": {"w": torch.randn(*shape, generator=g), "b": torch.randn(shape[0], generator=g),
                    "count": torch.tensor([7, 1])},
          "model_config": config or {"d": shape[1]}, "task": {"vocab": ["x"]}, "train_config": {"lr": 1.0},
          "step": step}
    torch.save(ck, path)
    return ck


def test_average_of_two_checkpoints_is_the_mean_of_their_tensors(tmp_path):
    a = _checkpoint(tmp_path / "a.pt", 1, 10)
    b = _checkpoint(tmp_path / "b.pt", 2, 20)
    avg = average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])
    for k in ("w", "b"):
        assert avg["model"][k].dtype == torch.float32
        assert torch.allclose(avg["model"][k], (a["model"][k] + b["model"][k]) / 2, rtol=1e-6, atol=1e-7)
        assert not torch.allclose(avg["model"][k], a["model"][k])
    assert torch.equal(avg["model"]["count"], a["model"]["count"])  # integer tensors are kept (equal in both)
    assert avg["step"] == 20 and avg["averaged"]["steps"] == [10, 20] and avg["model_config"] == {"d": 4}


def test_average_refuses_checkpoints_of_different_models(tmp_path):
    _checkpoint(tmp_path / "a.pt", 1, 10)
    _checkpoint(tmp_path / "b.pt", 2, 20, shape=(3, 5), config={"d": 4})
    with pytest.raises(ValueError, match="shape"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"])
    _checkpoint(tmp_path / "c.pt", 3, 30, config={"d": 99})
    with pytest.raises(ValueError, match="model_config"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "c.pt"])


def test_average_command(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    cks = [_checkpoint(snapshot_path(run, s), s, s) for s in (2, 4, 6)]
    assert main(["average", "--last", "2", str(run), "-o", str(tmp_path / "avg.pt")]) == 0
    avg = torch.load(tmp_path / "avg.pt", weights_only=True)
    assert avg["averaged"]["steps"] == [4, 6]
    assert torch.allclose(avg["model"]["w"], (cks[1]["model"]["w"] + cks[2]["model"]["w"]) / 2, rtol=1e-6, atol=1e-7)
    assert main(["average", str(snapshot_path(run, 2)), str(snapshot_path(run, 6)), "-o", str(tmp_path / "b.pt")]) == 0
    assert torch.load(tmp_path / "b.pt", weights_only=True)["averaged"]["steps"] == [2, 6]
    assert main(["average", "--last", "2", str(tmp_path / "nothing"), "-o", str(tmp_path / "c.pt")]) == 2
    assert "training folder" in capsys.readouterr().err


def test_prune_snapshots_keeps_the_newest_and_drops_those_after_a_resumed_step(tmp_path):
    for s in (1, 2, 3, 4, 5):
        snapshot_path(tmp_path, s).write_bytes(b"x")
    (tmp_path / "best.pt").write_bytes(b"x")
    prune_snapshots(tmp_path, keep=3, after=4)  # a run resumed from step 4 writes step 5 again
    assert [s for s, _ in snapshots(tmp_path)] == [2, 3, 4]
    prune_snapshots(tmp_path, keep=0)
    assert snapshots(tmp_path) == [] and (tmp_path / "best.pt").exists()
