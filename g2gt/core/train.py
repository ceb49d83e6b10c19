"""One Trainer for every task.

A *task* tells the Trainer how to batch its data, compute a loss and evaluate;
the Trainer owns everything else: AdamW, a learning-rate schedule that fits the
budget (:mod:`g2gt.core.schedule`), gradient clipping, accumulation, autocast on CUDA
(bf16, or fp16 with a GradScaler) and on CPUs with native bf16, a step and / or wall-clock budget, tqdm
progress, periodic evaluation with best-checkpoint keeping, a locked training
folder with atomic checkpoints and exact resume (:mod:`g2gt.core.checkpoint`), and
multi-process training with ``DistributedDataParallel`` under ``torchrun`` (gloo
on CPU, nccl on GPU) through the very same code path.

The task protocol is :class:`g2gt.core.task.Task` (a :class:`typing.Protocol`)::

    class MyTask:
        def train_batches(self, epoch, rank, world_size, skip=0) -> Iterable[batch]
            # deterministic in (epoch, rank, world_size); skip the first `skip` batches
        def num_tokens(self, batch) -> int            # what the loss is normalised by
        def loss(self, model, batch) -> Tensor         # SUM of the per-token losses
        def evaluate(self, model) -> dict[str, float]  # must contain config.metric
        def checkpoint_extra(self) -> dict             # optional: vocabularies, "kind" (weights_only-safe)

Each optimizer step normalises by the tokens of all its micro-batches on all
ranks, so one process with ``accum_steps = k`` and ``k`` processes with
``accum_steps = 1`` take the same step.

Nothing is read back from the device per update (with one process): ``num_tokens`` is called on the host batch
before it moves, the summed losses stay on the device and are read once per ``log.jsonl`` line and evaluation
(where a non-finite loss is warned about), so a GPU never waits for the host between two log lines. A task's
``loss`` should keep it so: no ``.item()``, boolean-mask selection or ``nonzero()`` on device tensors.

Threads, autocast, batch moving, RNG states and the ranks' collectives live in :mod:`g2gt.core.runtime`
(:func:`set_threads`, :func:`autocast_dtype`, :func:`autocast_context` and :func:`move_to_device` are
importable from here too); a whole recipe run (``config.json``, averaging) in :mod:`g2gt.core.run`.
"""

from __future__ import annotations

import logging
import contextlib
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from .checkpoint import (
    TrainingFolderLock, TrainingFolderLocked, load_checkpoint, prune_snapshots, remove_stale_temporaries, save_atomic,
    snapshot_path, truncate_log,
)
from .config import TrainConfig, dataclass_from_dict
from .runtime import (
    all_rng_states, autocast_context, autocast_dtype, from_main, max_over_ranks, move_to_device, rng_state,
    set_rng_state, set_threads,
)
from .schedule import estimate_total_steps, lr_multiplier, make_schedule, warmup_length
from .task import Task

_log = logging.getLogger("g2gt")

__all__ = [
    "Task", "TrainConfig", "Trainer", "save_atomic", "load_checkpoint", "make_schedule", "autocast_dtype", "autocast_context",
    "move_to_device",
    "dataclass_from_dict", "set_threads",
]


class Trainer:
    """Train ``model`` on ``task`` according to ``config``; checkpoints go to ``out_dir``.

    Files in ``out_dir``: ``last.pt`` (everything needed to resume), ``best.pt`` (model weights + configs +
    task extras of the best evaluation), ``log.jsonl`` and, while :meth:`fit` runs, ``.lock``. ``log.jsonl``
    holds one JSON line every ``log_every`` updates (``"kind": "train"``: ``step``, ``lr`` used by that
    update, mean ``loss`` per token since the previous line, ``tokens_per_s``, ``elapsed_s`` of training,
    ``total_steps`` = the budget in updates, estimated for a wall-clock budget) and one per evaluation
    (``"kind": "eval"``: the metrics, ``train_loss`` since the previous evaluation, ``lr``, ``step``).

    Exact resume: ``Trainer(...).fit(resume=True)`` after an interrupted run gives bit-identical parameters
    to an uninterrupted one (same config, same number of processes; a step budget): the checkpoint holds
    model, optimizer, grad scaler, every rank's RNG states, the data position ``(epoch, batches_done)`` and
    the schedule's state (training time used, budget estimate). Evaluation runs under a forked RNG so it
    never changes the training random stream. On resume, ``log.jsonl`` lines after the checkpoint's step and
    temporary files of a killed checkpoint write are removed.

    One run per folder: :meth:`fit` holds ``out_dir``'s :class:`g2gt.core.checkpoint.TrainingFolderLock`; a second
    run on the same folder fails at once with :class:`g2gt.core.checkpoint.TrainingFolderLocked` naming the holder.

    Under ``torchrun`` (``WORLD_SIZE > 1``) the model is wrapped in ``DistributedDataParallel`` (gloo on
    CPU, nccl on CUDA); only rank 0 evaluates and writes files. Rank ``r`` seeds its RNG with ``seed + r``.

    Args:
        model: the model to train.
        task: batches, loss and evaluation (a :class:`g2gt.core.task.Task`).
        config: the optimisation and bookkeeping settings.
        out_dir: the run's folder.
        model_config: the model's hyper-parameters, saved in the checkpoints (``None``: ``model.config.to_dict()`` when
            the model has one, else ``{}``).
        clock: seconds for the wall-clock budget (tests pass a fake one).
    """

    def __init__(self, model: nn.Module, task: Task, config: TrainConfig, out_dir: str | os.PathLike,
                 model_config: dict | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if config.accum_steps < 1:
            raise ValueError(f"accum_steps must be >= 1, got {config.accum_steps}")
        if config.max_minutes < 0 or config.max_steps < 0:
            raise ValueError("max_minutes and max_steps must be >= 0 (0 = no such budget)")
        if config.schedule == "cosine" and config.max_minutes:
            warmup_length(config, 1)  # validated; the total is estimated while training
        else:
            make_schedule(config)  # raises at once on a bad schedule / warmup
        self.cfg = config
        self.task = task
        self.out_dir = Path(out_dir)
        self.clock = clock
        self.model_config = model_config or (
            model.config.to_dict() if hasattr(getattr(model, "config", None), "to_dict") else {})
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if config.device == "auto":
            if torch.cuda.is_available():
                self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
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
                find_unused_parameters=config.find_unused_parameters)
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            if p.requires_grad:
                (no_decay if p.dim() < 2 or "label_" in name or "embed" in name else decay).append(p)
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=config.lr, betas=config.betas)
        self.amp_dtype = autocast_dtype(self.device, config.amp)
        self.scaler = torch.amp.GradScaler(self.device.type) if self.amp_dtype == torch.float16 else None
        self.step = 0
        self.epoch = 0
        self.batches_done = 0  # of this rank's batches in the current epoch
        self.best: float | None = None
        self.history: list[dict] = []
        self.lr = 0.0  # the learning rate of the latest update
        self.total_steps: float | None = float(config.max_steps) if config.max_steps else None
        self._elapsed_before = 0.0  # training seconds of earlier fit() calls (restored on resume)
        self._fit_start: float | None = None
        self._last_eval_step: int | None = None
        self._train_loss, self._train_tokens = 0.0, 0  # since the last evaluation
        self._log_loss, self._log_tokens, self._log_t0 = 0.0, 0, 0.0  # since the last log line
        self._pending: torch.Tensor | None = None  # summed loss on the device, not yet added to the two above

    @property
    def autocast(self):
        """A fresh autocast context (a no-op when :func:`autocast_dtype` is None)."""
        return autocast_context(self.device.type, self.amp_dtype)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    # --------------------------------------------------------------- time and schedule
    def elapsed(self) -> float:
        """Training seconds of the whole run so far (earlier segments included), agreed across ranks.

        Returns:
            Seconds.
        """
        t = self._elapsed_before
        if self._fit_start is not None:
            t += self.clock() - self._fit_start
        return max_over_ranks(t, self.world_size, self.device)

    def _set_lr(self) -> None:
        """Set the lr of update ``step + 1``: ``lr * lr_multiplier(step + 1, T)`` with ``T`` = ``max_steps`` and /
        or the estimate ``(step + 1) * budget / elapsed`` of a wall-clock budget (this update nearly done)."""
        cfg = self.cfg
        total = float(cfg.max_steps) if cfg.max_steps else None
        if cfg.max_minutes:
            est = estimate_total_steps(self.step + 1, self.elapsed(), cfg.max_minutes * 60)
            total = est if total is None else min(total, est)
        self.total_steps = total
        self.lr = cfg.lr * lr_multiplier(cfg, self.step + 1, total)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr

    def _should_stop(self) -> bool:
        cfg = self.cfg
        stop = bool(cfg.max_steps and self.step >= cfg.max_steps)
        if cfg.max_minutes:  # agreed across ranks: every rank stops at the same step
            stop = stop or self.elapsed() >= cfg.max_minutes * 60
        return stop

    # --------------------------------------------------------------- checkpoints
    def _extra(self) -> dict:
        return self.task.checkpoint_extra() if hasattr(self.task, "checkpoint_extra") else {}

    def state_dict(self, rng: list[dict] | None = None, elapsed: float | None = None) -> dict:
        """Everything :meth:`resume` needs (loadable with ``weights_only=True``).

        Args:
            rng: every rank's RNG states (``None``: this process's).
            elapsed: training seconds so far (``None``: :meth:`elapsed`).

        Returns:
            Model, optimizer, schedule, grad scaler, RNG states and data position, as a dict.
        """
        rng = rng or [rng_state()]
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": {"elapsed_s": self.elapsed() if elapsed is None else elapsed,
                         "total_steps": self.total_steps, "lr": self.lr},
            "scaler": self.scaler.state_dict() if self.scaler else {},
            "rng": rng[0],
            "rng_per_rank": rng,
            "step": self.step,
            "epoch": self.epoch,
            "batches_done": self.batches_done,
            "best": self.best,
            "last_eval_step": self._last_eval_step,
            "train_config": self.cfg.to_dict(),
            "model_config": self.model_config,
            "task": self._extra(),
            "world_size": self.world_size,
        }

    def save(self, name: str = "last.pt") -> None:
        """Write a resumable checkpoint (atomically, rank 0 only).

        Call it on every rank under DDP. With ``keep_last`` the weights of ``last.pt`` are also kept as
        ``step-NNNNNNN.pt`` (the newest ``keep_last`` of them), written first so that every snapshot up to the resumable
        step exists.

        Args:
            name: the file name in ``out_dir``.
        """
        rng = all_rng_states(self.world_size)
        elapsed = self.elapsed()
        if self.is_main:
            if self.cfg.keep_last and name == "last.pt":
                save_atomic(self._weights(), snapshot_path(self.out_dir, self.step))
                prune_snapshots(self.out_dir, self.cfg.keep_last)
            save_atomic(self.state_dict(rng, elapsed), self.out_dir / name)

    def _weights(self) -> dict:
        """What ``best.pt`` and the step snapshots hold: weights, configs, task extras, step, best."""
        return {"model": self.model.state_dict(), "model_config": self.model_config,
                "train_config": self.cfg.to_dict(), "task": self._extra(), "step": self.step, "best": self.best}

    def save_best(self) -> None:
        if self.is_main:
            save_atomic(self._weights(), self.out_dir / "best.pt")

    def resume(self, path: str | os.PathLike | None = None) -> bool:
        """Restore from ``path`` (default ``out_dir/last.pt``); False when there is none.

        Args:
            path: the checkpoint (``None``: ``out_dir/last.pt``).

        Returns:
            True when a checkpoint was restored.
        """
        path = Path(path) if path else self.out_dir / "last.pt"
        if not path.exists():
            return False
        state = load_checkpoint(path, self.device)
        if state.get("world_size", 1) != self.world_size:
            raise RuntimeError(
                f"{path} was written by {state.get('world_size')} process(es); resume with the same number "
                f"(got {self.world_size})")
        saved = state.get("train_config") or {}
        selection = (self.cfg.metric, self.cfg.metric_mode)
        if "metric" in saved and (saved["metric"], saved.get("metric_mode")) != selection:
            raise ValueError(
                f"{path} keeps best.pt by {saved.get('metric')} ({saved.get('metric_mode')}); resume with the same "
                f"selection metric (got {self.cfg.metric} ({self.cfg.metric_mode}))")
        self.model.load_state_dict(state["model"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scaler and state["scaler"]:
            self.scaler.load_state_dict(state["scaler"])
        per_rank = state.get("rng_per_rank") or [state["rng"]]
        set_rng_state(per_rank[self.rank] if self.rank < len(per_rank) else per_rank[0])
        self.step, self.epoch, self.batches_done = state["step"], state["epoch"], state["batches_done"]
        self.best = state["best"]
        self._last_eval_step = state.get("last_eval_step")
        sched = state.get("schedule") or {}
        self._elapsed_before = float(sched.get("elapsed_s", 0.0))
        self.total_steps = sched.get("total_steps", self.total_steps)
        self.lr = float(sched.get("lr", 0.0))
        return True

    # --------------------------------------------------------------- logging
    def _log(self, entry: dict) -> None:
        if self.is_main:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            with open(self.out_dir / "log.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")

    def _accumulate(self, loss_sum: torch.Tensor) -> None:
        """Add a summed loss to the device-side accumulator: no host sync (it is read by :meth:`_flush_loss`)."""
        # float64 where the device has it: the flushed sums equal adding each step's float32 loss in Python
        value = loss_sum.detach().to(torch.float32 if self.device.type == "mps" else torch.float64)
        self._pending = value if self._pending is None else self._pending + value

    def _flush_loss(self) -> None:
        """Read the device-side loss sum (ONE host sync) into the log line's and the evaluation's sums.

        Called at the log and evaluation intervals only; a NaN / inf loss since the previous flush is reported
        here (a warning naming the steps), not checked every step.
        """
        if self._pending is None:
            return
        value = self._pending.item()
        self._pending = None
        if value != value or value in (float("inf"), float("-inf")):
            _log.warning(f"non-finite training loss ({value}) in the updates up to step {self.step}")
        self._log_loss += value
        self._train_loss += value

    def _log_train(self) -> dict:
        self._flush_loss()
        now = self.clock()
        entry = {"kind": "train", "step": self.step, "epoch": self.epoch, "lr": self.lr,
                 "loss": self._log_loss / max(self._log_tokens, 1),
                 "tokens_per_s": self._log_tokens * self.world_size / max(now - self._log_t0, 1e-9),
                 "elapsed_s": round(self._elapsed_before + now - (self._fit_start or now), 3),
                 "total_steps": None if self.total_steps is None else round(self.total_steps)}
        self._log(entry)
        self._log_loss, self._log_tokens, self._log_t0 = 0.0, 0, now
        return entry

    # --------------------------------------------------------------- training
    def _better(self, value: float) -> bool:
        if self.best is None:
            return True
        return value > self.best if self.cfg.metric_mode == "max" else value < self.best

    def evaluate(self) -> dict:
        """Run ``task.evaluate`` on rank 0; log it, keep ``best.pt``.

        It runs in eval mode, without gradients, under autocast and a forked RNG. Call it on every rank under DDP.

        Returns:
            The metrics of ``task.evaluate`` with ``kind``, ``step``, ``epoch``, ``lr`` (and ``train_loss``) added, on
                rank 0; ``{}`` on the other ranks.
        """
        self._flush_loss()
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
            metrics.update(kind="eval", step=self.step, epoch=self.epoch, lr=self.lr)
            if self._train_tokens:
                metrics["train_loss"] = self._train_loss / self._train_tokens
            self.history.append(metrics)
            if self._better(value):
                self.best = value
                self.save_best()
            self._log(metrics)
        self._train_loss, self._train_tokens = 0.0, 0
        self._last_eval_step = self.step
        self.best = from_main(self.best, self.world_size)
        return metrics

    def _micro_step(self, batches: list, run_model, n_local: int) -> None:
        """Forward/backward ``batches`` (on the device) as one optimizer step; their summed losses go to the
        device-side accumulator (:meth:`_accumulate`): nothing here reads a tensor on the host with one process.

        The loss is normalised by the tokens of all micro-batches on all ranks (``n_local``: this rank's, counted
        on the host batches), so ``k`` ranks x ``accum_steps=1`` == 1 rank x ``accum_steps=k`` on the same batches.
        """
        n_total = float(n_local)
        if self.world_size > 1:  # one small collective (and read) per update under DDP
            box = torch.tensor(n_total, device=self.device)
            dist.all_reduce(box)
            n_total = float(box)
        denom = max(n_total, 1.0) / self.world_size  # DDP averages gradients over ranks
        for i, b in enumerate(batches):
            sync = self.ddp is None or i == len(batches) - 1
            with contextlib.nullcontext() if sync else self.ddp.no_sync():
                with self.autocast:
                    loss_sum = self.task.loss(run_model, b)
                loss = loss_sum.float() / denom
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            self._accumulate(loss_sum)
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        if self.cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self._set_lr()
        if self.scaler:
            self.scaler.step(self.optimizer)  # skipped (and the scale lowered) on inf / NaN gradients
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1

    def _prepare_folder(self, resumed: bool) -> None:
        """Rank 0, holding the lock: remove temporaries of a killed write; make ``log.jsonl`` and the step
        snapshots end at the resumed step (or start them afresh)."""
        for p in remove_stale_temporaries(self.out_dir):
            _log.info(f"removed {p.name}, left by a checkpoint write that was interrupted")
        log = self.out_dir / "log.jsonl"
        prune_snapshots(self.out_dir, self.cfg.keep_last if resumed else 0, self.step if resumed else None)
        if resumed:
            truncate_log(log, self.step)
        elif log.exists():
            log.unlink()  # a new run in this folder: its checkpoints are being replaced too

    def _lock(self) -> TrainingFolderLock | None:
        """Rank 0 takes the folder lock; every rank fails together when it is held elsewhere."""
        lock, error = None, None
        if self.is_main:
            try:
                lock = TrainingFolderLock(self.out_dir).acquire()
            except TrainingFolderLocked as e:
                error = str(e)
        error = from_main(error, self.world_size)
        if error:
            raise TrainingFolderLocked(error)
        return lock

    def fit(self, resume: bool = False) -> list[dict]:
        """Train until the budget (``max_steps`` / ``max_minutes``) or ``epochs`` run out.

        Returns the evaluation history. With ``resume=True`` training continues from ``out_dir/last.pt`` when it exists
        (a fresh start otherwise). A final evaluation and ``last.pt`` are always written.

        Args:
            resume: continue from ``out_dir/last.pt`` when it exists.

        Returns:
            The evaluation history, one metrics dict per evaluation.
        """
        lock = self._lock()
        try:
            resumed = bool(resume and self.resume())
            if not resumed:
                torch.manual_seed(self.cfg.seed + self.rank)
                random.seed(self.cfg.seed + self.rank)
            if self.is_main:
                self._prepare_folder(resumed)
            return self._fit()
        finally:
            if self._fit_start is not None:  # a later fit() on this Trainer continues the same budget
                self._elapsed_before += self.clock() - self._fit_start
                self._fit_start = None
            if lock is not None:
                lock.release()

    def _fit(self) -> list[dict]:
        cfg = self.cfg
        run_model = self.ddp if self.ddp is not None else self.model
        self.model.train()
        self._fit_start = self._log_t0 = self.clock()
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.max_steps or None, initial=self.step, disable=not (cfg.progress and self.is_main),
                   desc="train", dynamic_ncols=True)
        stop = self._should_stop()
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
                # tokens counted on the host batches, before they move: no device read per step
                ntok = sum(int(self.task.num_tokens(b)) for b in group)
                group = [move_to_device(b, self.device) for b in group]
                self._micro_step(group, run_model, ntok)
                self.batches_done += len(group)
                self._train_tokens += ntok
                self._log_tokens += ntok
                if self.step % max(1, cfg.log_every) == 0:
                    entry = self._log_train()
                    bar.set_postfix(loss=f"{entry['loss']:.3f}", tok_s=f"{entry['tokens_per_s']:.0f}",
                                    lr=f"{self.lr:.2e}", ep=self.epoch)
                if self.total_steps and not cfg.max_steps:
                    bar.total = max(round(self.total_steps), self.step)
                bar.update(1)
                if cfg.eval_every and self.step % cfg.eval_every == 0:
                    self.evaluate()
                    if not cfg.save_every:
                        self.save()
                if cfg.save_every and self.step % cfg.save_every == 0:
                    self.save()
                stop = self._should_stop()
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
