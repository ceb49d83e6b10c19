"""One Trainer for every task.

A *task* tells the Trainer how to batch its data, compute a loss and evaluate;
the Trainer owns everything else: AdamW, warmup + inverse-sqrt / cosine /
constant schedule, gradient clipping, accumulation, autocast on CUDA (bf16, or
fp16 with a GradScaler), a wall-clock budget, tqdm progress, periodic
evaluation with best-checkpoint keeping, atomic checkpoints and exact resume
(model, optimizer, scheduler, RNG, data position), and multi-process training
with ``DistributedDataParallel`` under ``torchrun`` (gloo on CPU, nccl on GPU)
through the very same code path.

The task protocol (duck-typed)::

    class MyTask:
        def num_train_batches(self, epoch: int, rank: int, world_size: int) -> int: ...
        def train_batches(self, epoch, rank, world_size, skip=0) -> Iterable[batch]
            # deterministic in (epoch, rank, world_size); skip the first `skip` batches
        def num_tokens(self, batch) -> int            # what the loss is normalised by
        def loss(self, model, batch) -> Tensor         # SUM of the per-token losses
        def evaluate(self, model) -> dict[str, float]  # must contain config.metric
        def checkpoint_extra(self) -> dict             # vocabularies etc. (weights_only-safe)

Each optimizer step normalises by the tokens of all its micro-batches on all
ranks, so one process with ``accum_steps = k`` and ``k`` processes with
``accum_steps = 1`` take the same step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["TrainConfig", "Trainer", "save_atomic", "load_checkpoint", "make_schedule", "autocast_context"]


@dataclass
class TrainConfig:
    """Optimisation and bookkeeping settings (saved inside checkpoints)."""

    lr: float = 5e-4
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.01
    warmup_steps: int = 1000
    schedule: str = "inverse_sqrt"  # "inverse_sqrt" | "cosine" | "constant"
    max_steps: int = 0  # 0 = until epochs / max_minutes run out
    epochs: int = 1000
    max_minutes: float = 0.0  # 0 = no wall-clock budget
    grad_clip: float = 1.0
    accum_steps: int = 1
    amp: str = "auto"  # "auto" (bf16/fp16 on CUDA, off on CPU) | "bf16" | "fp16" | "none"
    eval_every: int = 1000  # steps; 0 = only at the end of each epoch
    save_every: int = 0  # steps between resumable checkpoints; 0 = at every evaluation
    log_every: int = 10
    metric: str = "loss"
    metric_mode: str = "min"  # "min" | "max"
    seed: int = 1
    device: str = "auto"
    progress: bool = True

    def to_dict(self) -> dict:
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        d = {k: v for k, v in d.items() if k in names}
        if "betas" in d:
            d["betas"] = tuple(d["betas"])
        return cls(**d)


def make_schedule(cfg: TrainConfig, total_steps: int | None = None) -> Callable[[int], float]:
    """Learning-rate multiplier per step: linear warmup, then inverse-sqrt / cosine / constant."""
    warm = max(1, cfg.warmup_steps)

    def inverse_sqrt(step: int) -> float:
        step = max(step, 1)
        return min(step / warm, math.sqrt(warm / step))

    def cosine(step: int) -> float:
        if step < warm:
            return max(step, 1) / warm
        total = max(total_steps or cfg.max_steps, warm + 1)
        t = min(1.0, (step - warm) / (total - warm))
        return 0.5 * (1 + math.cos(math.pi * t))

    def constant(step: int) -> float:
        return min(1.0, max(step, 1) / warm)

    try:
        return {"inverse_sqrt": inverse_sqrt, "cosine": cosine, "constant": constant}[cfg.schedule]
    except KeyError:
        raise ValueError(f"schedule must be inverse_sqrt, cosine or constant, got {cfg.schedule!r}") from None


def autocast_context(device: torch.device, amp: str):
    """Autocast for CUDA (bf16 when supported, else fp16); a no-op elsewhere or with ``amp='none'``."""
    if amp == "none" or device.type != "cuda":
        return contextlib.nullcontext(), None
    if amp == "auto":
        amp = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[amp]
    return torch.autocast("cuda", dtype=dtype), dtype


def save_atomic(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save`` to a temporary file in the same folder, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Load a checkpoint with ``weights_only=True`` (no pickled code), with a clear error."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # pragma: no cover - message only
        raise RuntimeError(f"{path}: not a readable g2gt checkpoint ({e})") from e


def _rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "python": list(random.getstate()[1]), "python_pos": random.getstate()[2]}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate((3, tuple(state["python"]), state["python_pos"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class Trainer:
    """Train ``model`` on ``task`` according to ``config``; checkpoints go to ``out_dir``.

    Files in ``out_dir``: ``last.pt`` (everything needed to resume), ``best.pt``
    (model weights + configs + task extras of the best evaluation) and
    ``log.jsonl`` (one JSON line per evaluation).
    """

    def __init__(self, model: nn.Module, task, config: TrainConfig, out_dir: str | os.PathLike,
                 model_config: dict | None = None) -> None:
        self.cfg = config
        self.task = task
        self.out_dir = Path(out_dir)
        self.model_config = model_config or (
            model.config.to_dict() if hasattr(getattr(model, "config", None), "to_dict") else {})
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if config.device == "auto":
            if torch.cuda.is_available():
                local = int(os.environ.get("LOCAL_RANK", "0"))
                self.device = torch.device("cuda", local)
                torch.cuda.set_device(self.device)
            else:
                self.device = torch.device("cpu")
        else:
            self.device = torch.device(config.device)
        if self.world_size > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        self.model = model.to(self.device)
        self.ddp = None
        if self.world_size > 1:
            self.ddp = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            if p.requires_grad:
                (no_decay if p.dim() < 2 or "label_" in name or "embed" in name else decay).append(p)
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=config.lr, betas=config.betas)
        self.lr_lambda = make_schedule(config)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.lr_lambda)
        self.autocast, self.amp_dtype = autocast_context(self.device, config.amp)
        self.scaler = torch.amp.GradScaler("cuda") if self.amp_dtype == torch.float16 else None
        self.step = 0
        self.epoch = 0
        self.batches_done = 0  # of this rank's batches in the current epoch
        self.best: float | None = None
        self.history: list[dict] = []

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # --------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler else {},
            "rng": _rng_state(),
            "step": self.step,
            "epoch": self.epoch,
            "batches_done": self.batches_done,
            "best": self.best,
            "train_config": self.cfg.to_dict(),
            "model_config": self.model_config,
            "task": self.task.checkpoint_extra() if hasattr(self.task, "checkpoint_extra") else {},
            "world_size": self.world_size,
        }

    def save(self, name: str = "last.pt") -> None:
        if self.is_main:
            save_atomic(self.state_dict(), self.out_dir / name)

    def save_best(self) -> None:
        if self.is_main:
            save_atomic({
                "model": self.model.state_dict(),
                "model_config": self.model_config,
                "train_config": self.cfg.to_dict(),
                "task": self.task.checkpoint_extra() if hasattr(self.task, "checkpoint_extra") else {},
                "step": self.step,
                "best": self.best,
            }, self.out_dir / "best.pt")

    def resume(self, path: str | os.PathLike | None = None) -> bool:
        """Restore from ``path`` (default ``out_dir/last.pt``); False when there is none."""
        path = Path(path) if path else self.out_dir / "last.pt"
        if not path.exists():
            return False
        state = load_checkpoint(path, self.device)
        if state.get("world_size", 1) != self.world_size:
            raise RuntimeError(
                f"{path} was written by {state.get('world_size')} process(es); resume with the same number "
                f"(got {self.world_size})")
        self.model.load_state_dict(state["model"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler and state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        rng = state["rng"]
        rng["torch"] = rng["torch"].cpu()
        _set_rng_state(rng)
        self.step, self.epoch, self.batches_done = state["step"], state["epoch"], state["batches_done"]
        self.best = state["best"]
        return True

    # --------------------------------------------------------------- training
    def _better(self, value: float) -> bool:
        if self.best is None:
            return True
        return value > self.best if self.cfg.metric_mode == "max" else value < self.best

    def evaluate(self) -> dict:
        model = self.model
        was = model.training
        model.eval()
        with torch.no_grad(), self.autocast:
            metrics = self.task.evaluate(model) if self.is_main else {}
        model.train(was)
        if self.is_main:
            metrics = {k: float(v) for k, v in metrics.items()}
            metrics["step"] = self.step
            self.history.append(metrics)
            value = metrics.get(self.cfg.metric)
            if value is None:
                raise KeyError(f"task.evaluate() returned {sorted(metrics)}; config.metric={self.cfg.metric!r} is not among them")
            if self._better(value):
                self.best = value
                self.save_best()
            import json

            self.out_dir.mkdir(parents=True, exist_ok=True)
            with open(self.out_dir / "log.jsonl", "a") as f:
                f.write(json.dumps(metrics) + "\n")
        if self.world_size > 1:
            box = [self.best]
            dist.broadcast_object_list(box, 0)
            self.best = box[0]
        return metrics

    def _micro_step(self, batches: list, run_model) -> float:
        """Forward/backward ``batches`` as one optimizer step; returns summed loss."""
        n_local = sum(int(self.task.num_tokens(b)) for b in batches)
        n_total = torch.tensor(float(n_local), device=self.device)
        if self.world_size > 1:
            dist.all_reduce(n_total)
        denom = max(float(n_total), 1.0) / self.world_size  # DDP averages gradients over ranks
        total = 0.0
        for i, b in enumerate(batches):
            sync = self.ddp is None or i == len(batches) - 1
            ctx = contextlib.nullcontext() if sync else self.ddp.no_sync()
            with ctx:
                with self.autocast:
                    loss_sum = self.task.loss(run_model, b)
                loss = loss_sum.float() / denom
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            total += float(loss_sum.detach())
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        if self.cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        self.step += 1
        return total

    def fit(self, resume: bool = False) -> list[dict]:
        """Train until ``max_steps`` / ``epochs`` / ``max_minutes`` run out; returns the evaluation history."""
        cfg = self.cfg
        if resume:
            self.resume()
        else:
            torch.manual_seed(cfg.seed)
            random.seed(cfg.seed)
        run_model = self.ddp if self.ddp is not None else self.model
        self.model.train()
        start = time.time()
        out_of_time = False
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.max_steps or None, initial=self.step, disable=not (cfg.progress and self.is_main),
                   desc="train", dynamic_ncols=True)
        tok_t0, tok_n = time.time(), 0
        while self.epoch < cfg.epochs and not out_of_time:
            it = iter(self.task.train_batches(self.epoch, self.rank, self.world_size, skip=self.batches_done))
            exhausted = False
            while not exhausted:
                group = []
                for _ in range(cfg.accum_steps):
                    try:
                        group.append(next(it))
                    except StopIteration:
                        exhausted = True
                        break
                if len(group) < cfg.accum_steps:
                    break  # drop an incomplete accumulation group (same on every rank)
                group = [b.to(self.device) if hasattr(b, "to") else b for b in group]
                loss_sum = self._micro_step(group, run_model)
                self.batches_done += len(group)
                ntok = sum(int(self.task.num_tokens(b)) for b in group)
                tok_n += ntok
                if self.step % cfg.log_every == 0:
                    dt = max(time.time() - tok_t0, 1e-9)
                    bar.set_postfix(loss=f"{loss_sum / max(ntok, 1):.3f}", tok_s=f"{tok_n * self.world_size / dt:.0f}",
                                    lr=f"{self.scheduler.get_last_lr()[0]:.2e}", ep=self.epoch)
                    tok_t0, tok_n = time.time(), 0
                bar.update(1)
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    self.evaluate()
                    if not cfg.save_every:
                        self.save()
                if cfg.save_every and self.step % cfg.save_every == 0:
                    self.save()
                if cfg.max_steps and self.step >= cfg.max_steps:
                    out_of_time = True
                    break
                if cfg.max_minutes and (time.time() - start) / 60 >= cfg.max_minutes:
                    out_of_time = True
                    break
            if not out_of_time:
                self.epoch += 1
                self.batches_done = 0
                if not cfg.eval_every:
                    self.evaluate()
                    self.save()
        bar.close()
        if not self.history or self.history[-1].get("step") != self.step:
            self.evaluate()
        self.save()
        return self.history
