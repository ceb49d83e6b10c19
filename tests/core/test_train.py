"""Trainer: exact resume, checkpoints, DDP == accumulation, budget-fitted schedules, folder safety, autocast."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from itertools import pairwise
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from g2gt.core.checkpoint import CheckpointError, TrainingFolderLocked
from g2gt.core.schedule import NO_BUDGET_WARMUP_STEPS, estimate_total_steps, lr_multiplier
from g2gt.core.train import (
    TrainConfig,
    Trainer,
    autocast_dtype,
    dataclass_from_dict,
    load_checkpoint,
    make_schedule,
    move_to_device,
    save_atomic,
    set_threads,
)
from helpers_ddp import ReverseTask, make_sequences, tiny_model
from fixture_paths import ROOT, TESTS



def _task(**kw) -> ReverseTask:
    return ReverseTask(make_sequences(40, seed=1), make_sequences(8, seed=2), max_tokens=48, **kw)


def _cfg(**kw) -> TrainConfig:
    base = dict(lr=2e-3, warmup_steps=3, eval_every=5, progress=False, device="cpu", amp="none", seed=3)
    base.update(kw)
    return TrainConfig(**base)


def _params(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _log(folder: Path, kind: str | None = None) -> list[dict]:
    lines = [json.loads(x) for x in (folder / "log.jsonl").read_text().splitlines()]
    return [e for e in lines if kind is None or e["kind"] == kind]


class Killed(Exception):
    """Stands in for SIGKILL: raised from inside a training step."""


class FakeClock:
    """Seconds that advance only when a training step asks (``tick``)."""

    def __init__(self, start: float = 0.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t


class TimedTask(ReverseTask):
    """Every training forward costs ``seconds(call)`` on ``clock``; the ``kill_at``-th one raises Killed."""

    def __init__(self, clock: FakeClock, seconds=lambda call: 0.5, kill_at: int | None = None) -> None:
        super().__init__(make_sequences(40, seed=1), make_sequences(8, seed=2), max_tokens=48)
        self.clock, self.seconds, self.kill_at, self.calls = clock, seconds, kill_at, 0

    def loss(self, model, batch):
        if model.training:
            self.calls += 1
            if self.calls == self.kill_at:
                raise Killed
            self.clock.t += self.seconds(self.calls)
        return super().loss(model, batch)


# ----------------------------------------------------------------------------- resume
def test_resume_after_kill_is_bit_identical(tmp_path):
    n_epoch = _task().num_train_batches(0, 0, 1)
    total, stop = n_epoch + 5, n_epoch + 2  # crosses an epoch boundary; killed mid-epoch, off the eval cadence
    assert 0 < stop - n_epoch < n_epoch - 1 and stop % 5 != 0
    cfg = _cfg(max_steps=total, save_every=1, warmup_steps=None, warmup=0.2, cooldown=0.3)  # budget-fitted schedule

    full = tiny_model(seed=7, dropout=0.2)
    Trainer(full, _task(), cfg, tmp_path / "full").fit()

    part = tiny_model(seed=7, dropout=0.2)
    killer = TimedTask(FakeClock(), kill_at=stop + 1)
    with pytest.raises(Killed):
        Trainer(part, killer, cfg, tmp_path / "part").fit()
    assert load_checkpoint(tmp_path / "part" / "last.pt")["step"] == stop
    torch.manual_seed(12345)  # a different RNG state and a fresh model must not matter
    resumed = tiny_model(seed=99, dropout=0.2)
    t2 = Trainer(resumed, _task(), cfg, tmp_path / "part")
    t2.fit(resume=True)
    assert t2.step == total
    a, b = _params(full), _params(resumed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert [e["lr"] for e in _log(tmp_path / "part", "eval")] == [e["lr"] for e in _log(tmp_path / "full", "eval")]

    # ... and dropout mattered: without restoring RNG the run differs
    other = tiny_model(seed=7, dropout=0.2)
    Trainer(other, _task(), _cfg(max_steps=total, seed=4), tmp_path / "other").fit()
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
    assert [e["step"] for e in _log(tmp_path, "eval")] == [2, 4]
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
    assert (last["step"], last["world_size"], last["last_eval_step"]) == (4, 1, 4)
    assert len(last["rng_per_rank"]) == 1 and last["schedule"]["total_steps"] == 4
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p or p == ".lock"]  # nothing left behind


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


@pytest.mark.parametrize("content", [b"", b"not a checkpoint", "truncated"])
def test_load_checkpoint_unreadable_is_one_clear_error(tmp_path, content):
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "nope.pt")
    bad = tmp_path / "bad.pt"
    if content == "truncated":
        torch.save({"model": torch.ones(1000)}, bad)
        bad.write_bytes(bad.read_bytes()[:500])
    else:
        bad.write_bytes(content)
    with pytest.raises(CheckpointError, match=r"bad.pt: not a readable g2gt checkpoint \(.+\); give a model") as err:
        load_checkpoint(bad)
    assert "weights_only" not in str(err.value)  # never torch's advice to load the file unsafely
    with pytest.raises(CheckpointError, match="is a folder"):
        load_checkpoint(tmp_path)


class _Payload:
    def __reduce__(self):
        import os

        return (os.getcwd, ())  # harmless, but not a tensor or a plain value


def test_a_checkpoint_holding_code_is_refused_without_unsafe_advice(tmp_path):
    bad = tmp_path / "code.pt"
    torch.save({"model": _Payload()}, bad)
    with pytest.raises(CheckpointError, match="holds objects other than tensors and plain values") as err:
        load_checkpoint(bad)
    assert "weights_only" not in str(err.value) and "arbitrary code" not in str(err.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_load_checkpoint_onto_missing_cuda_says_so(tmp_path):
    save_atomic({"a": torch.ones(1)}, tmp_path / "ok.pt")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        load_checkpoint(tmp_path / "ok.pt", "cuda")


def test_resume_refuses_other_world_size(tmp_path):
    tr = Trainer(tiny_model(), _task(), _cfg(max_steps=1), tmp_path)
    tr.fit()
    state = torch.load(tmp_path / "last.pt", weights_only=True)
    state["world_size"] = 2
    torch.save(state, tmp_path / "last.pt")
    with pytest.raises(RuntimeError, match="2 process"):
        Trainer(tiny_model(), _task(), _cfg(max_steps=2), tmp_path).fit(resume=True)


def test_resume_refuses_another_selection_metric(tmp_path):
    Trainer(tiny_model(), _task(), _cfg(max_steps=1), tmp_path).fit()
    with pytest.raises(ValueError, match="same selection metric"):
        Trainer(tiny_model(), _task(), _cfg(max_steps=2, metric_mode="max"), tmp_path).fit(resume=True)
    assert Trainer(tiny_model(), _task(), _cfg(max_steps=2), tmp_path).fit(resume=True)[-1]["step"] == 2


def test_missing_metric_is_a_clear_error(tmp_path):
    with pytest.raises(KeyError, match="bleu"):
        Trainer(tiny_model(), _task(), _cfg(max_steps=1, metric="bleu"), tmp_path).fit()


# ----------------------------------------------------------------------------- folder safety
def test_second_run_on_a_busy_folder_stops_naming_the_holder(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from g2gt.core.checkpoint import TrainingFolderLock as L; "
         f"l = L({str(out)!r}).acquire(); print('locked', flush=True); sys.stdin.read(); l.release()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.time()
        with pytest.raises(TrainingFolderLocked, match=rf"in use by another training run \(pid {holder.pid} on host"):
            Trainer(tiny_model(), _task(), _cfg(max_steps=50), out).fit()
        assert time.time() - t0 < 2  # at once, before any training
        assert not (out / "last.pt").exists() and not (out / "log.jsonl").exists()
    finally:
        holder.communicate("", timeout=30)
    Trainer(tiny_model(), _task(), _cfg(max_steps=1), out).fit()  # free again once the holder exits
    assert not (out / ".lock").exists()


def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path, g2gt_log):
    import socket

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / ".lock").write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "started": 0}))
    Trainer(tiny_model(), _task(), _cfg(max_steps=1), tmp_path).fit()
    err = " ".join(g2gt_log.messages())
    assert "stale lock" in err and f"pid {dead.pid}" in err
    assert (tmp_path / "last.pt").exists() and not (tmp_path / ".lock").exists()


def test_lock_is_released_when_training_fails(tmp_path):
    with pytest.raises(Killed):
        Trainer(tiny_model(), TimedTask(FakeClock(), kill_at=2), _cfg(max_steps=5), tmp_path).fit()
    assert not (tmp_path / ".lock").exists()
    Trainer(tiny_model(), _task(), _cfg(max_steps=1), tmp_path).fit()


def test_resume_after_kill_mid_write_cleans_temporaries_and_log(tmp_path):
    """A kill while writing the step-9 checkpoint leaves last.pt of step 6, a 0-byte temp file and log lines
    up to step 9; the resumed run removes both and logs every step once, as an uninterrupted run does."""
    cfg = _cfg(max_steps=12, eval_every=3, log_every=2)
    Trainer(tiny_model(seed=1), _task(), cfg, tmp_path / "full").fit()
    run = tmp_path / "run"
    with pytest.raises(Killed):  # killed during update 7: last.pt holds update 6
        Trainer(tiny_model(seed=1), TimedTask(FakeClock(), kill_at=7), cfg, run).fit()
    six = (run / "last.pt").read_bytes()
    with pytest.raises(Killed):  # resumed, killed during update 10, after logging up to 9
        Trainer(tiny_model(seed=1), TimedTask(FakeClock(), kill_at=4), cfg, run).fit(resume=True)
    (run / "last.pt").write_bytes(six)  # ... as if the kill came while writing update 9's checkpoint
    (run / ".last.pt.tmp4242").write_bytes(b"")
    assert max(e["step"] for e in _log(run)) == 9
    Trainer(tiny_model(seed=1), _task(), cfg, run).fit(resume=True)
    assert not [p for p in os.listdir(run) if ".tmp" in p]
    got, want = _log(run), _log(tmp_path / "full")
    keys = [(e["kind"], e["step"]) for e in got]
    assert len(keys) == len(set(keys)) and keys == [(e["kind"], e["step"]) for e in want]
    assert [e["lr"] for e in got] == [e["lr"] for e in want]


def test_fresh_run_in_a_used_folder_starts_a_new_log(tmp_path):
    Trainer(tiny_model(), _task(), _cfg(max_steps=4, eval_every=2), tmp_path).fit()
    Trainer(tiny_model(), _task(), _cfg(max_steps=2, eval_every=2), tmp_path).fit()
    assert [e["step"] for e in _log(tmp_path, "eval")] == [2]


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
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
           "--master_addr=127.0.0.1", f"--master_port={port}",
           str(TESTS / "helpers_ddp.py"), str(out), "--steps", str(steps)]
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


# ----------------------------------------------------------------------------- schedules
def test_schedule_shapes_with_explicit_warmup():
    inv = make_schedule(TrainConfig(warmup_steps=4, schedule="inverse_sqrt", cooldown=0))
    assert [inv(s) for s in (1, 2, 4)] == [0.25, 0.5, 1.0]
    assert inv(16) == pytest.approx(0.5) and inv(64) == pytest.approx(0.25)
    cos = make_schedule(TrainConfig(warmup_steps=4, schedule="cosine", max_steps=14, cooldown=0))
    assert cos(2) == 0.5 and cos(4) == 1.0
    assert cos(9) == pytest.approx(0.5) and cos(14) == pytest.approx(0.0, abs=1e-12) and cos(20) == 0.0
    vals = [cos(s) for s in range(4, 15)]
    assert all(a >= b for a, b in pairwise(vals))
    const = make_schedule(TrainConfig(warmup_steps=4, schedule="constant"))
    assert [const(s) for s in (1, 4, 100)] == [0.25, 1.0, 1.0]  # no budget: no cooldown
    with pytest.raises(ValueError, match="max_steps"):
        make_schedule(TrainConfig(schedule="cosine", max_steps=0))
    with pytest.raises(ValueError, match="schedule must be"):
        make_schedule(TrainConfig(schedule="linear"))
    with pytest.raises(ValueError, match="fraction"):
        make_schedule(TrainConfig(warmup=1.5, max_steps=10))


def _lrs(cfg: TrainConfig, out: Path, task=None, clock=None) -> list[float]:
    """Fit ``cfg`` (logging every update) and return the learning rate of each update, from log.jsonl."""
    cfg.log_every = 1
    tr = Trainer(tiny_model(), task or _task(), cfg, out, **({"clock": clock} if clock else {}))
    tr.fit()
    train = _log(out, "train")
    assert [e["step"] for e in train] == list(range(1, tr.step + 1))
    return [e["lr"] for e in train]


def test_step_budget_lr_peaks_at_the_warmup_fraction(tmp_path):
    cfg = _cfg(lr=1e-3, warmup_steps=None, warmup=0.1, max_steps=40, schedule="inverse_sqrt", cooldown=0.25,
               eval_every=0, epochs=100)
    lrs = _lrs(cfg, tmp_path)
    assert len(lrs) == 40 and max(lrs) == pytest.approx(1e-3) and lrs.index(max(lrs)) == 3  # update 4 = 10 %
    assert lrs[0] == pytest.approx(2.5e-4)
    assert lrs == pytest.approx([1e-3 * lr_multiplier(cfg, s) for s in range(1, 41)])
    assert lrs[-1] < 0.05 * max(lrs)  # annealed to ~0 at the end of the budget


def test_explicit_warmup_steps_win_over_the_fraction(tmp_path):
    cfg = _cfg(lr=1e-3, warmup_steps=10, warmup=0.1, max_steps=40, schedule="constant", cooldown=0, eval_every=0,
               epochs=100)
    lrs = _lrs(cfg, tmp_path)
    assert lrs.index(max(lrs)) == 9 and lrs[:10] == pytest.approx([1e-4 * s for s in range(1, 11)])
    no_budget = TrainConfig(warmup_steps=None)
    assert make_schedule(no_budget)(NO_BUDGET_WARMUP_STEPS // 2) == pytest.approx(0.5)


def test_cooldown_decays_lr_linearly_over_final_fraction(tmp_path):
    cfg = _cfg(lr=1e-3, warmup_steps=1, max_steps=10, schedule="constant", cooldown=0.5, eval_every=0)
    assert _lrs(cfg, tmp_path) == pytest.approx([1e-3] * 6 + [8e-4, 6e-4, 4e-4, 2e-4])


def test_wall_clock_budget_warms_up_and_anneals(tmp_path):
    """1 minute at 0.5 s per update holds 120 updates: warmup peaks at 5 % (update 6), the lr ends near 0."""
    clock = FakeClock()
    cfg = _cfg(lr=1e-3, warmup_steps=None, warmup=0.05, cooldown=0.2, max_minutes=1.0, eval_every=50, epochs=10**6)
    lrs = _lrs(cfg, tmp_path, TimedTask(clock), clock)
    assert len(lrs) == 120 and clock.t == 60.0
    assert lrs.index(max(lrs)) == 5 and max(lrs) == pytest.approx(1e-3)
    assert all(a < b for a, b in pairwise(lrs[:6]))
    assert lrs[-1] < 0.02 * max(lrs)
    assert _log(tmp_path, "train")[-1]["total_steps"] == 120


def test_wall_clock_estimate_follows_a_slowdown(tmp_path):
    """Updates take twice as long after the first 30 s: the estimate drops from 120 to 90 and the lr still
    reaches ~0 exactly when the budget ends."""
    clock = FakeClock()
    task = TimedTask(clock, seconds=lambda call: 0.5 if call <= 60 else 1.0)
    cfg = _cfg(lr=1e-3, warmup_steps=None, warmup=0.05, cooldown=0.2, max_minutes=1.0, eval_every=0, epochs=10**6)
    lrs = _lrs(cfg, tmp_path, task, clock)
    est = [e["total_steps"] for e in _log(tmp_path, "train")]
    assert len(lrs) == 90 and est[59] == 120 and est[-1] == 90
    assert lrs[-1] < 0.02 * max(lrs)


def test_resume_reproduces_the_wall_clock_schedule(tmp_path):
    cfg = _cfg(lr=1e-3, warmup_steps=None, max_minutes=1.0, eval_every=10, epochs=10**6, log_every=1)
    clock = FakeClock()
    full = tiny_model(seed=3, dropout=0.1)
    Trainer(full, TimedTask(clock), cfg, tmp_path / "full", clock=clock).fit()
    with pytest.raises(Killed):
        clock = FakeClock()
        Trainer(tiny_model(seed=3, dropout=0.1), TimedTask(clock, kill_at=47), cfg, tmp_path / "run",
                clock=clock).fit()
    clock = FakeClock(start=1000.0)  # a new process: its clock starts elsewhere
    resumed = tiny_model(seed=5, dropout=0.1)
    Trainer(resumed, TimedTask(clock), cfg, tmp_path / "run", clock=clock).fit(resume=True)
    want, got = _log(tmp_path / "full", "train"), _log(tmp_path / "run", "train")
    assert [e["step"] for e in got] == list(range(1, 121))
    assert [e["lr"] for e in got] == [e["lr"] for e in want]
    for k, v in _params(full).items():
        assert torch.equal(v, resumed.state_dict()[k]), k


def test_estimate_total_steps():
    assert estimate_total_steps(10, 5.0, 60.0) == 120.0
    assert estimate_total_steps(10, 100.0, 60.0) == 10.0  # never below what is done
    assert estimate_total_steps(0, 0.0, 60.0) == 1.0


def test_max_minutes_stops(tmp_path):
    cfg = _cfg(max_minutes=0.5 / 60, epochs=10**6, eval_every=0, max_steps=0)
    t0 = time.time()
    tr = Trainer(tiny_model(), _task(), cfg, tmp_path)
    tr.fit()
    assert time.time() - t0 < 20
    assert tr.step >= 1 and (tmp_path / "last.pt").exists()


# ----------------------------------------------------------------------------- helpers
def test_dataclass_from_dict_ignores_unknown_keys_and_restores_tuples():
    @dataclass
    class Cfg:
        a: int = 1
        pair: tuple[float, float] = (0.0, 1.0)

    assert dataclass_from_dict(Cfg, {"a": 3, "pair": [2.0, 3.0], "old_field": 7}) == Cfg(3, (2.0, 3.0))
    with pytest.raises(ValueError, match=r"unknown Cfg field\(s\) \['old_field'\]"):
        dataclass_from_dict(Cfg, {"old_field": 7}, strict=True)
    cfg = TrainConfig(betas=(0.8, 0.9), warmup_steps=7)
    assert TrainConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg


def test_set_threads(monkeypatch):
    monkeypatch.delenv("RAYON_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    try:
        set_threads(2)
        assert torch.get_num_threads() == 2 and os.environ["RAYON_NUM_THREADS"] == "2"
        set_threads(None)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        set_threads(-1)


# ----------------------------------------------------------------------------- device / amp
def test_amp_on_cpu_is_bf16_where_native():
    from g2gt.core import _compat

    cpu = torch.device("cpu")
    assert autocast_dtype(cpu, "none") is None and autocast_dtype(cpu, "fp16") is None
    assert autocast_dtype(cpu, "bf16") is torch.bfloat16  # asked for: on, even where emulated
    native = _compat.cpu_bf16_supported() and os.environ.get("G2GT_CPU_AUTO_BF16", "1") != "0"
    assert autocast_dtype(cpu, "auto") is (torch.bfloat16 if native else None)
    with pytest.raises(ValueError, match="amp must be"):
        autocast_dtype(cpu, "int8")
    tr = Trainer(tiny_model(), _task(), _cfg(amp="fp16"), "unused")
    assert tr.scaler is None and tr.amp_dtype is None
    with tr.autocast:
        assert not torch.is_autocast_enabled("cuda") and not torch.is_autocast_enabled("cpu")
    tr = Trainer(tiny_model(), _task(), _cfg(amp="bf16"), "unused")
    assert tr.scaler is None and tr.amp_dtype is torch.bfloat16
    with tr.autocast:
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") is torch.bfloat16


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
