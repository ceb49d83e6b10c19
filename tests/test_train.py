"""Trainer: exact resume, checkpoints, DDP == accumulation, schedules, budget, autocast."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from g2gt.train import (
    TrainConfig,
    Trainer,
    autocast_context,
    autocast_dtype,
    load_checkpoint,
    make_schedule,
    move_to_device,
    save_atomic,
)
from helpers_ddp import ReverseTask, ddp_groups, make_sequences, tiny_model

HERE = Path(__file__).resolve().parent


def _task(**kw) -> ReverseTask:
    return ReverseTask(make_sequences(40, seed=1), make_sequences(8, seed=2), max_tokens=48, **kw)


def _cfg(**kw) -> TrainConfig:
    base = dict(lr=2e-3, warmup_steps=3, eval_every=5, progress=False, device="cpu", amp="none", seed=3)
    base.update(kw)
    return TrainConfig(**base)


def _params(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


# ----------------------------------------------------------------------------- resume
def test_resume_is_bit_identical(tmp_path):
    task = _task()
    n_epoch = task.num_train_batches(0, 0, 1)
    total, stop = n_epoch + 5, n_epoch + 2  # crosses an epoch boundary; stops mid-epoch, off the save cadence
    assert 0 < stop - n_epoch < n_epoch - 1 and stop % 5 != 0

    full = tiny_model(seed=7, dropout=0.2)
    Trainer(full, task, _cfg(max_steps=total), tmp_path / "full").fit()

    part = tiny_model(seed=7, dropout=0.2)
    t1 = Trainer(part, _task(), _cfg(max_steps=stop), tmp_path / "part")
    t1.fit()
    assert (t1.epoch, t1.batches_done) == (1, stop - n_epoch)
    torch.manual_seed(12345)  # a different RNG state and a fresh model must not matter
    resumed = tiny_model(seed=99, dropout=0.2)
    t2 = Trainer(resumed, _task(), _cfg(max_steps=total), tmp_path / "part")
    t2.fit(resume=True)
    assert t2.step == total
    a, b = _params(full), _params(resumed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k

    # ... and dropout mattered: without restoring RNG the run differs
    other = tiny_model(seed=7, dropout=0.2)
    t3 = Trainer(other, _task(), _cfg(max_steps=total, seed=4), tmp_path / "other")
    t3.fit()
    assert any(not torch.equal(a[k], v) for k, v in _params(other).items())


def test_resume_without_checkpoint_starts_fresh(tmp_path):
    m1, m2 = tiny_model(seed=1, dropout=0.1), tiny_model(seed=1, dropout=0.1)
    Trainer(m1, _task(), _cfg(max_steps=3), tmp_path / "a").fit()
    torch.manual_seed(555)
    Trainer(m2, _task(), _cfg(max_steps=3), tmp_path / "b").fit(resume=True)
    for k, v in _params(m1).items():
        assert torch.equal(v, m2.state_dict()[k]), k


def test_evaluation_does_not_touch_training_rng(tmp_path):
    class NoisyEval(ReverseTask):
        def evaluate(self, model):
            torch.rand(1000)  # an evaluation that draws random numbers
            import random

            random.random()
            return super().evaluate(model)

    def run(eval_every, task_cls):
        m = tiny_model(seed=2, dropout=0.3)
        task = task_cls(make_sequences(40, seed=1), make_sequences(8, seed=2))
        Trainer(m, task, _cfg(max_steps=6, eval_every=eval_every), tmp_path / f"e{eval_every}{task_cls.__name__}").fit()
        return _params(m)

    a, b = run(1, NoisyEval), run(100, ReverseTask)
    for k in a:
        assert torch.equal(a[k], b[k]), k


# ----------------------------------------------------------------------------- checkpoints
def test_checkpoints_weights_only_and_strict(tmp_path):
    model = tiny_model(seed=0, dropout=0.1)
    tr = Trainer(model, _task(), _cfg(max_steps=4, eval_every=2), tmp_path)
    hist = tr.fit()
    assert [h["step"] for h in hist] == [2, 4]
    assert all(math.isfinite(h["loss"]) and math.isfinite(h["train_loss"]) for h in hist)
    assert len((tmp_path / "log.jsonl").read_text().splitlines()) == 2
    for name in ("last.pt", "best.pt"):
        state = torch.load(tmp_path / name, weights_only=True)
        fresh = tiny_model(seed=5, dropout=0.1)
        fresh.load_state_dict(state["model"], strict=True)
        for k, v in model.state_dict().items():
            if name == "last.pt":
                assert torch.equal(v, fresh.state_dict()[k])
        assert state["model_config"]["d_model"] == 32
        assert state["task"] == {"max_distance": 4, "vocab": 12}
        assert TrainConfig.from_dict(state["train_config"]) == tr.cfg
    last = load_checkpoint(tmp_path / "last.pt")
    assert (last["step"], last["world_size"]) == (4, 1)
    assert len(last["rng_per_rank"]) == 1
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]  # no temp files left behind


def test_save_atomic_keeps_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    save_atomic({"a": torch.ones(3)}, path)

    def broken_save(obj, f, *a, **kw):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError):
        save_atomic({"a": torch.zeros(3)}, path)
    monkeypatch.undo()
    assert torch.equal(torch.load(path, weights_only=True)["a"], torch.ones(3))
    assert os.listdir(tmp_path) == ["ck.pt"]


def test_load_checkpoint_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "nope.pt")
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(RuntimeError, match="not a readable g2gt checkpoint"):
        load_checkpoint(tmp_path / "bad.pt")


def test_resume_refuses_other_world_size(tmp_path):
    tr = Trainer(tiny_model(), _task(), _cfg(max_steps=1), tmp_path)
    tr.fit()
    state = torch.load(tmp_path / "last.pt", weights_only=True)
    state["world_size"] = 2
    torch.save(state, tmp_path / "last.pt")
    with pytest.raises(RuntimeError, match="2 process"):
        Trainer(tiny_model(), _task(), _cfg(max_steps=2), tmp_path).fit(resume=True)


def test_missing_metric_is_a_clear_error(tmp_path):
    with pytest.raises(KeyError, match="bleu"):
        Trainer(tiny_model(), _task(), _cfg(max_steps=1, metric="bleu"), tmp_path).fit()


# ----------------------------------------------------------------------------- accumulation / DDP
def test_grad_accumulation_equals_bigger_batch(tmp_path):
    groups = [[0, 1, 2], [3, 4, 5, 6], [7, 8], [9, 10, 11], [12, 13], [14]]
    merged = [groups[0] + groups[1], groups[2] + groups[3], groups[4] + groups[5]]
    train, dev = make_sequences(16, seed=1), make_sequences(4, seed=2)
    m_acc, m_big = tiny_model(seed=4, dtype=torch.float64), tiny_model(seed=4, dtype=torch.float64)
    Trainer(m_acc, ReverseTask(train, dev, groups=groups), _cfg(max_steps=3, accum_steps=2), tmp_path / "a").fit()
    Trainer(m_big, ReverseTask(train, dev, groups=merged), _cfg(max_steps=3), tmp_path / "b").fit()
    moved = 0
    init = tiny_model(seed=4, dtype=torch.float64).state_dict()
    for k, v in m_acc.state_dict().items():
        torch.testing.assert_close(v, m_big.state_dict()[k], rtol=1e-9, atol=1e-10, msg=k)
        moved += int(not torch.equal(v, init[k]))
    assert moved > 10  # training really changed the parameters


def _run_ddp(tmp_path: Path, nproc: int, steps: int, timeout: float = 240) -> dict[str, torch.Tensor]:
    import socket

    out = tmp_path / f"ddp{nproc}.pt"
    with socket.socket() as s:  # a free port (torchrun's --master_port=0 hangs with the static rendezvous)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(HERE.parent))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
           "--master_addr=127.0.0.1", f"--master_port={port}",
           str(HERE / "helpers_ddp.py"), str(out), "--steps", str(steps)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return torch.load(out, weights_only=True)


def test_ddp_two_processes_equal_accumulation(tmp_path):
    t0 = time.time()
    ddp = _run_ddp(tmp_path, 2, steps=3)
    elapsed = time.time() - t0
    from helpers_ddp import main

    single = tmp_path / "single"
    single.mkdir()
    main([str(single / "one.pt"), "--steps", "3", "--accum", "2"])
    one = torch.load(single / "one.pt", weights_only=True)
    init = tiny_model(seed=0, dtype=torch.float64).state_dict()
    assert any(not torch.equal(one[k], init[k]) for k in one)
    for k in one:
        torch.testing.assert_close(ddp[k], one[k], rtol=1e-9, atol=1e-10, msg=k)
    print(f"torchrun 2 procs took {elapsed:.1f}s")


# ----------------------------------------------------------------------------- schedules / budget
def test_schedule_values():
    inv = make_schedule(TrainConfig(warmup_steps=4, schedule="inverse_sqrt"))
    assert [inv(s) for s in (1, 2, 4)] == [0.25, 0.5, 1.0]
    assert inv(16) == pytest.approx(0.5) and inv(64) == pytest.approx(0.25)
    cos = make_schedule(TrainConfig(warmup_steps=4, schedule="cosine", max_steps=14))
    assert cos(2) == 0.5 and cos(4) == 1.0
    assert cos(9) == pytest.approx(0.5) and cos(14) == pytest.approx(0.0, abs=1e-12) and cos(20) == 0.0
    vals = [cos(s) for s in range(4, 15)]
    assert all(a >= b for a, b in zip(vals, vals[1:]))
    const = make_schedule(TrainConfig(warmup_steps=4, schedule="constant"))
    assert [const(s) for s in (1, 4, 100)] == [0.25, 1.0, 1.0]
    with pytest.raises(ValueError, match="max_steps"):
        make_schedule(TrainConfig(schedule="cosine", max_steps=0))
    with pytest.raises(ValueError, match="schedule must be"):
        make_schedule(TrainConfig(schedule="linear"))


def _lrs_seen_by_training_steps(cfg: TrainConfig, out: Path) -> list[float]:
    """Fit ``cfg`` on the reverse task; the learning rate in force at each training forward."""
    lrs = []

    class Spy(ReverseTask):
        def loss(self, model, batch):
            if model.training:
                lrs.append(trainer.optimizer.param_groups[0]["lr"])
            return super().loss(model, batch)

    trainer = Trainer(tiny_model(), Spy(make_sequences(40, seed=1), make_sequences(4, seed=2)), cfg, out)
    trainer.fit()
    return lrs


def test_trainer_applies_schedule(tmp_path):
    cfg = _cfg(lr=1e-3, warmup_steps=2, max_steps=6, schedule="inverse_sqrt", eval_every=0)
    f = make_schedule(cfg)
    assert _lrs_seen_by_training_steps(cfg, tmp_path) == pytest.approx([1e-3 * f(s) for s in range(1, 7)])


def test_cooldown_decays_lr_linearly_over_final_fraction(tmp_path):
    cfg = _cfg(lr=1e-3, warmup_steps=1, max_steps=10, schedule="constant", cooldown=0.5, eval_every=0)
    lrs = _lrs_seen_by_training_steps(cfg, tmp_path)
    assert lrs == pytest.approx([1e-3] * 6 + [8e-4, 6e-4, 4e-4, 2e-4])


def test_cooldown_by_wall_clock(tmp_path):
    tr = Trainer(tiny_model(), _task(), _cfg(max_minutes=10.0, cooldown=0.2), tmp_path)
    assert tr.cooldown_factor() == 1.0  # not fitting yet
    tr._fit_start = time.time() - 9.0 * 60  # 1 of the final 2 minutes left
    assert tr.cooldown_factor() == pytest.approx(0.5, abs=0.01)
    tr._fit_start = time.time() - 11.0 * 60
    assert tr.cooldown_factor() == 0.0


def test_max_minutes_stops(tmp_path):
    cfg = _cfg(max_minutes=0.5 / 60, epochs=10**6, eval_every=0, max_steps=0)
    t0 = time.time()
    tr = Trainer(tiny_model(), _task(), cfg, tmp_path)
    tr.fit()
    assert time.time() - t0 < 20
    assert tr.step >= 1 and (tmp_path / "last.pt").exists()


# ----------------------------------------------------------------------------- device / amp
def test_amp_is_off_on_cpu():
    cpu = torch.device("cpu")
    for amp in ("auto", "bf16", "fp16", "none"):
        assert autocast_dtype(cpu, amp) is None
        ctx, dtype = autocast_context(cpu, amp)
        assert dtype is None
        with ctx:
            assert not torch.is_autocast_enabled("cuda")
    with pytest.raises(ValueError, match="amp must be"):
        autocast_dtype(cpu, "int8")
    tr = Trainer(tiny_model(), _task(), _cfg(amp="fp16"), "unused")
    assert tr.scaler is None and tr.amp_dtype is None


def test_move_to_device_nested():
    from helpers_ddp import make_batch

    b = make_batch([[3, 4, 5], [6, 7]])
    moved = move_to_device({"x": b, "y": [torch.ones(2)], "z": 3}, torch.device("cpu"))
    assert moved["z"] == 3 and torch.equal(moved["x"][1], b[1]) and torch.equal(moved["x"][0].tokens, b[0].tokens)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_cuda_autocast_trains(tmp_path, amp):
    if amp == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("no bf16 on this GPU")
    model = tiny_model(seed=0)
    tr = Trainer(model, _task(), _cfg(amp=amp, device="cuda", max_steps=30, eval_every=10, lr=3e-3), tmp_path)
    assert (tr.scaler is not None) == (amp == "fp16")
    hist = tr.fit()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert hist[-1]["loss"] < hist[0]["loss"] + 1e-6 and math.isfinite(hist[-1]["loss"])
    tr2 = Trainer(tiny_model(seed=0), _task(), _cfg(amp=amp, device="cuda", max_steps=35), tmp_path)
    tr2.fit(resume=True)
    assert tr2.step == 35
