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

__all__ = [
    "TrainConfig", "Trainer", "save_atomic", "load_checkpoint", "make_schedule", "autocast_context",
    "autocast_dtype", "move_to_device",
]


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
    cooldown: float = 0.0  # final fraction of the budget over which the lr decays linearly to 0 (0 = off)
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
    find_unused_parameters: bool = False  # DDP: set when some parameters get no gradient in a step

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
    """Learning-rate multiplier ``f(s)`` of the ``s``-th optimizer update (``s >= 1``).

    With ``w = warmup_steps`` and ``T = total_steps or max_steps``:

    * warmup (all schedules): ``f(s) = s / w`` for ``s <= w``;
    * ``inverse_sqrt``: ``f(s) = sqrt(w / s)`` after warmup (Vaswani et al. 2017);
    * ``cosine``: ``f(s) = (1 + cos(pi * (s - w) / (T - w))) / 2`` after warmup, 0 at ``T``;
    * ``constant``: ``f(s) = 1`` after warmup.

    The :class:`Trainer` calls ``f(step + 1)`` where ``step`` counts finished updates.
    """
    warm = max(1, cfg.warmup_steps)
    if cfg.schedule == "cosine" and not (total_steps or cfg.max_steps):
        raise ValueError("schedule='cosine' needs max_steps > 0 (or total_steps) to know where it ends")

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


def autocast_dtype(device: torch.device, amp: str) -> torch.dtype | None:
    """The autocast dtype for ``amp`` on ``device``: ``None`` (off) on CPU / MPS or with ``'none'``;
    on CUDA ``'auto'`` is bf16 when the GPU supports it, else fp16."""
    if amp not in ("auto", "bf16", "fp16", "none"):
        raise ValueError(f"amp must be 'auto', 'bf16', 'fp16' or 'none', got {amp!r}")
    if amp == "none" or device.type != "cuda":
        return None
    if amp == "auto":
        amp = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[amp]


def autocast_context(device: torch.device, amp: str):
    """``(context, dtype)``: a fresh ``torch.autocast`` for CUDA (see :func:`autocast_dtype`),
    a no-op context (and ``None``) elsewhere. Make a new one for every ``with`` block."""
    dtype = autocast_dtype(device, amp)
    if dtype is None:
        return contextlib.nullcontext(), None
    return torch.autocast(device.type, dtype=dtype), dtype


def move_to_device(batch: Any, device: torch.device) -> Any:
    """Move a batch to ``device``: anything with ``.to()``, and tensors inside tuples / lists / dicts."""
    if hasattr(batch, "to") and not isinstance(batch, type):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: move_to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        moved = [move_to_device(v, device) for v in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else type(batch)(moved)
    return batch


def save_atomic(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save`` to a temporary file in the same folder, then rename over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


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
    """This process's RNG states (torch CPU, CUDA when present, Python ``random``)."""
    py = random.getstate()
    state = {"torch": torch.get_rng_state(), "python": list(py[1]), "python_pos": py[2]}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"].cpu())
    random.setstate((3, tuple(state["python"]), state["python_pos"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


class Trainer:
    """Train ``model`` on ``task`` according to ``config``; checkpoints go to ``out_dir``.

    Files in ``out_dir``: ``last.pt`` (everything needed to resume), ``best.pt``
    (model weights + configs + task extras of the best evaluation) and
    ``log.jsonl`` (one JSON line per evaluation, with the mean training loss per
    token since the previous evaluation as ``train_loss``).

    Exact resume: ``Trainer(...).fit(resume=True)`` after an interrupted run gives
    bit-identical parameters to an uninterrupted one (same config apart from
    ``max_steps`` / ``max_minutes``, same number of processes): the checkpoint
    holds model, optimizer, scheduler, grad scaler, every rank's RNG states and
    the data position ``(epoch, batches_done)``. Evaluation runs under a forked
    RNG so it never changes the training random stream.

    Under ``torchrun`` (``WORLD_SIZE > 1``) the model is wrapped in
    ``DistributedDataParallel`` (gloo on CPU, nccl on CUDA); only rank 0
    evaluates and writes files. Rank ``r`` seeds its RNG with ``seed + r``.
    """

    def __init__(self, model: nn.Module, task, config: TrainConfig, out_dir: str | os.PathLike,
                 model_config: dict | None = None) -> None:
        if config.accum_steps < 1:
            raise ValueError(f"accum_steps must be >= 1, got {config.accum_steps}")
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
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None,
                find_unused_parameters=getattr(config, "find_unused_parameters", False))
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            if p.requires_grad:
                (no_decay if p.dim() < 2 or "label_" in name or "embed" in name else decay).append(p)
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=config.lr, betas=config.betas)
        self.lr_lambda = make_schedule(config)
        # LambdaLR passes the number of finished updates; the schedule wants the 1-based update index.
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: self.lr_lambda(s + 1))
        self.amp_dtype = autocast_dtype(self.device, config.amp)
        self.scaler = torch.amp.GradScaler(self.device.type) if self.amp_dtype == torch.float16 else None
        self.step = 0
        self.epoch = 0
        self._fit_start: float | None = None
        self.batches_done = 0  # of this rank's batches in the current epoch
        self.best: float | None = None
        self.history: list[dict] = []
        self._last_eval_step: int | None = None
        self._train_loss, self._train_tokens = 0.0, 0

    @property
    def autocast(self):
        """A fresh autocast context (a no-op on CPU or with ``amp='none'``)."""
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # --------------------------------------------------------------- checkpoints
    def _all_rng_states(self) -> list[dict]:
        """RNG states of every rank, in rank order (a collective under DDP)."""
        mine = _rng_state()
        if self.world_size == 1:
            return [mine]
        box: list[Any] = [None] * self.world_size
        dist.all_gather_object(box, mine)
        return box

    def state_dict(self, rng: list[dict] | None = None) -> dict:
        """Everything :meth:`resume` needs (loadable with ``weights_only=True``)."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler else {},
            "rng": rng[0] if rng else _rng_state(),
            "rng_per_rank": rng if rng else [_rng_state()],
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
        """Write a resumable checkpoint (atomically, rank 0 only). Call it on every rank under DDP."""
        rng = self._all_rng_states()
        if self.is_main:
            save_atomic(self.state_dict(rng), self.out_dir / name)

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
        per_rank = state.get("rng_per_rank") or [state["rng"]]
        _set_rng_state(per_rank[self.rank] if self.rank < len(per_rank) else per_rank[0])
        self.step, self.epoch, self.batches_done = state["step"], state["epoch"], state["batches_done"]
        self.best = state["best"]
        self._last_eval_step = None
        return True

    # --------------------------------------------------------------- training
    def _better(self, value: float) -> bool:
        if self.best is None:
            return True
        return value > self.best if self.cfg.metric_mode == "max" else value < self.best

    def evaluate(self) -> dict:
        """Run ``task.evaluate`` on rank 0 (eval mode, no grad, autocast, forked RNG);
        log it, keep ``best.pt``. Call it on every rank under DDP."""
        model = self.model
        was = model.training
        metrics: dict = {}
        if self.is_main:
            model.eval()
            py_state = random.getstate()
            devices = [self.device] if self.device.type == "cuda" else []
            try:
                with torch.random.fork_rng(devices=devices), torch.no_grad(), self.autocast:
                    metrics = dict(self.task.evaluate(model))
            finally:
                random.setstate(py_state)
                model.train(was)
            metrics = {k: float(v) for k, v in metrics.items()}
            value = metrics.get(self.cfg.metric)
            if value is None:
                raise KeyError(
                    f"task.evaluate() returned {sorted(metrics)}; TrainConfig.metric={self.cfg.metric!r} "
                    "is not among them")
            metrics["step"] = self.step
            metrics["epoch"] = self.epoch
            if self._train_tokens:
                metrics["train_loss"] = self._train_loss / self._train_tokens
            self.history.append(metrics)
            if self._better(value):
                self.best = value
                self.save_best()
            import json

            self.out_dir.mkdir(parents=True, exist_ok=True)
            with open(self.out_dir / "log.jsonl", "a") as f:
                f.write(json.dumps(metrics) + "\n")
        self._train_loss, self._train_tokens = 0.0, 0
        self._last_eval_step = self.step
        if self.world_size > 1:
            box = [self.best]
            dist.broadcast_object_list(box, 0)
            self.best = box[0]
        return metrics

    def _micro_step(self, batches: list, run_model) -> tuple[float, int]:
        """Forward/backward ``batches`` as one optimizer step; returns (summed loss, local tokens).

        The loss is normalised by the tokens of all micro-batches on all ranks, so
        ``k`` ranks x ``accum_steps=1`` == 1 rank x ``accum_steps=k`` on the same batches.
        """
        factor = self.cooldown_factor()
        if factor < 1.0:  # LambdaLR sets the scheduled lr at every step; scale it for this update
            for group, lr in zip(self.optimizer.param_groups, self.scheduler.get_last_lr()):
                group["lr"] = lr * factor
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
            self.scaler.step(self.optimizer)  # skipped (and the scale lowered) on inf / NaN gradients
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        self.step += 1
        return total, n_local

    def cooldown_factor(self) -> float:
        """Multiplier of the scheduled lr for the next update: 1 until the final ``cooldown`` fraction of the
        budget, then linear down to 0 at its end (the "decay" phase of warmup-stable-decay schedules,
        Hägele et al. 2024).

        The budget is ``max_steps`` when set (counted from step 0), otherwise ``max_minutes`` of this
        :meth:`fit` call, so a resumed run with a time budget cools down at the end of the new segment.
        The wall-clock variant is agreed across ranks.
        """
        cfg = self.cfg
        if cfg.cooldown <= 0:
            return 1.0
        if cfg.max_steps:
            left = (cfg.max_steps - self.step) / (cfg.cooldown * cfg.max_steps)
        elif cfg.max_minutes and self._fit_start is not None:
            elapsed = (time.time() - self._fit_start) / 60
            left = (cfg.max_minutes - elapsed) / (cfg.cooldown * cfg.max_minutes)
            if self.world_size > 1:
                t = torch.tensor(float(left), device=self.device)
                dist.all_reduce(t, op=dist.ReduceOp.MIN)
                left = float(t)
        else:
            return 1.0
        return min(1.0, max(0.0, left))

    def _should_stop(self, start: float) -> bool:
        cfg = self.cfg
        stop = bool(cfg.max_steps and self.step >= cfg.max_steps)
        if cfg.max_minutes:
            out = (time.time() - start) / 60 >= cfg.max_minutes
            if self.world_size > 1:  # every rank must stop at the same step
                flag = torch.tensor(float(out), device=self.device)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                out = bool(flag.item())
            stop = stop or out
        return stop

    def fit(self, resume: bool = False) -> list[dict]:
        """Train until ``max_steps`` / ``epochs`` / ``max_minutes`` run out; returns the evaluation history.

        With ``resume=True`` training continues from ``out_dir/last.pt`` when it exists
        (a fresh start otherwise). A final evaluation and ``last.pt`` are always written.
        """
        cfg = self.cfg
        if not (resume and self.resume()):
            torch.manual_seed(cfg.seed + self.rank)
            random.seed(cfg.seed + self.rank)
        run_model = self.ddp if self.ddp is not None else self.model
        self.model.train()
        start = time.time()
        self._fit_start = start
        stop = bool(cfg.max_steps and self.step >= cfg.max_steps)
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.max_steps or None, initial=self.step, disable=not (cfg.progress and self.is_main),
                   desc="train", dynamic_ncols=True)
        tok_t0, tok_n = time.time(), 0
        while self.epoch < cfg.epochs and not stop:
            it = iter(self.task.train_batches(self.epoch, self.rank, self.world_size, skip=self.batches_done))
            while True:
                group = []
                for _ in range(cfg.accum_steps):
                    try:
                        group.append(next(it))
                    except StopIteration:
                        break
                if len(group) < cfg.accum_steps:
                    break  # drop an incomplete accumulation group (same on every rank)
                group = [move_to_device(b, self.device) for b in group]
                loss_sum, ntok = self._micro_step(group, run_model)
                self.batches_done += len(group)
                self._train_loss += loss_sum
                self._train_tokens += ntok
                tok_n += ntok
                if self.step % max(1, cfg.log_every) == 0:
                    dt = max(time.time() - tok_t0, 1e-9)
                    bar.set_postfix(loss=f"{loss_sum / max(ntok, 1):.3f}", tok_s=f"{tok_n * self.world_size / dt:.0f}",
                                    lr=f"{self.optimizer.param_groups[0]['lr']:.2e}", ep=self.epoch)
                    tok_t0, tok_n = time.time(), 0
                bar.update(1)
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    self.evaluate()
                    if not cfg.save_every:
                        self.save()
                if cfg.save_every and self.step % cfg.save_every == 0:
                    self.save()
                stop = self._should_stop(start)
                if stop:
                    break
            if not stop:
                self.epoch += 1
                self.batches_done = 0
                if not cfg.eval_every:
                    self.evaluate()
                    self.save()
        bar.close()
        if self._last_eval_step != self.step:
            self.evaluate()
        self.save()
        return self.history
