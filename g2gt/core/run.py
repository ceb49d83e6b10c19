"""The one training runner: every ``train_*`` recipe (``train_parser``, ``train_enhancer``, ``train_coref``,
``train_distill``, ``train_segmenter``, ``train_expander``, ``train_lemmatizer``, ``train_seq2seq``) takes a
model config dataclass and a :class:`TrainConfig`, builds its vocabulary, model and task, then
:func:`run_training`:

1. writes ``OUT/config.json`` (``model_config``, ``train_config``, the recipe's ``task`` and ``data``
   sections, ``parameters``, then any further sections),
2. runs :class:`g2gt.core.train.Trainer` (``best.pt``, ``last.pt``, ``log.jsonl``),
3. with ``TrainConfig.average_last = K > 0`` (which keeps at least ``K`` step snapshots), writes the
   element-wise mean of the weights of the last ``K`` step snapshots to ``OUT/averaged.pt``
   (:mod:`g2gt.core.average`) and scores it on dev,
4. adds ``train_seconds``, ``steps``, ``best_dev`` (and ``average``) to ``config.json``.

**A run is never overwritten.** :func:`training_run` (the decorator of every ``train_*`` function) holds
``OUT``'s lock for the whole call and, before anything is read or written, :func:`check_run_folder`: a folder
that holds a run (any of :data:`RUN_FILES`) is refused with :class:`RunExists` unless the call resumes it
(``resume=True``, ``--resume``) or replaces it (``overwrite=True``, ``--overwrite``).

:func:`resume_checkpoint` is the checkpoint a resumed recipe reads its vocabulary and model config from.
Importable without torch (the recipes' modules import :func:`training_run` at their top).
"""

from __future__ import annotations

import logging
import dataclasses
import functools
import inspect
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..errors import Error
from .checkpoint import main_process_lock
from .config import TrainConfig

if TYPE_CHECKING:
    from torch import nn

    from .train import Trainer

_log = logging.getLogger("g2gt")

__all__ = ["RUN_FILES", "RunExists", "check_run_folder", "training_run", "resume_checkpoint", "with_averaging",
           "run_training", "average_snapshots"]

#: the files of a training run in its folder: one of them there means the folder holds a run
RUN_FILES = ("best.pt", "last.pt", "log.jsonl", "config.json")


class RunExists(Error, FileExistsError):
    """A training folder (``--out``) already holds a run, and the call neither resumes nor overwrites it."""


def check_run_folder(out_dir: str | os.PathLike, resume: bool = False, overwrite: bool = False) -> None:
    """Refuse to start a fresh run in a folder that holds one (any of :data:`RUN_FILES`).

    The refusal is a :class:`RunExists` naming the folder, unless ``resume`` (continue it) or ``overwrite`` (replace
    it).

    Args:
        out_dir: the run's folder.
        resume: the call continues the run.
        overwrite: the call replaces the run.

    Raises:
        RunExists: the folder holds a run and neither ``resume`` nor ``overwrite`` is set.
    """
    if resume or overwrite:
        return
    out = Path(out_dir)
    found = [name for name in RUN_FILES if (out / name).exists()]
    if found:
        raise RunExists(f"{out} already holds a training run ({', '.join(found)}); pass --resume to continue it or "
                        "--overwrite to replace it, or choose another --out")


def training_run(fn: Callable) -> Callable:
    """Decorator of the ``train_*(..., out_dir, ..., resume=False, overwrite=False)`` functions.

    The whole call holds ``out_dir``'s lock (:func:`g2gt.core.checkpoint.main_process_lock`: a second run on the same
    folder stops before it touches anything) and starts with :func:`check_run_folder` (on the main process).

    Args:
        fn: a ``train_*`` function with ``out_dir``, ``resume`` and ``overwrite`` parameters.

    Returns:
        The wrapped function.
    """
    sig = inspect.signature(fn)
    for name in ("out_dir", "resume", "overwrite"):
        if name not in sig.parameters:
            raise TypeError(f"@training_run: {fn.__qualname__} has no parameter {name!r}")

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        with main_process_lock(a["out_dir"]):
            if int(os.environ.get("RANK", "0")) == 0:
                check_run_folder(a["out_dir"], a["resume"], a["overwrite"])
            return fn(*args, **kwargs)

    return wrapper


def resume_checkpoint(out_dir: str | os.PathLike, resume: bool) -> dict | None:
    """``OUT/last.pt`` loaded (``weights_only``) when ``resume`` and it exists, else None (a fresh run)."""
    from .checkpoint import load_checkpoint

    last = Path(out_dir) / "last.pt"
    return load_checkpoint(last) if resume and last.exists() else None


def with_averaging(tc: TrainConfig) -> TrainConfig:
    """``tc`` keeping at least ``tc.average_last`` step snapshots (``keep_last``); ``ValueError`` when
    ``average_last`` is negative."""
    if tc.average_last < 0:
        raise ValueError(f"average_last must be >= 0 (0 = no averaging), got {tc.average_last}")
    return dataclasses.replace(tc, keep_last=tc.average_last) if tc.average_last > tc.keep_last else tc


def _write_info(out: Path, info: dict) -> None:
    (out / "config.json").write_text(json.dumps(info, indent=2) + "\n")


def run_training(model: nn.Module, task, tc: TrainConfig, out_dir: str | os.PathLike, model_config: dict, *,
                 task_info: dict, data_info: dict, more_info: dict | None = None, resume: bool = False,
                 overwrite: bool = False, trainer_class: Callable[..., Trainer] | None = None
                 ) -> tuple[Trainer, list[dict]]:
    """Steps 1-4 of the module docstring (after :func:`check_run_folder`).

    A fresh run (not ``resume``) in the folder of a replaced run (``overwrite``) removes its ``best.pt``, ``last.pt``
    and ``averaged.pt`` first; the Trainer starts ``log.jsonl`` and the step snapshots afresh.

    Args:
        model: the model to train.
        task: the training task.
        tc: the :class:`TrainConfig`.
        out_dir: the run's folder.
        model_config: the model's hyper-parameters (``config.json`` and the checkpoints).
        task_info: the recipe's ``task`` section of ``config.json``.
        data_info: the recipe's ``data`` section of ``config.json``.
        more_info: further sections of ``config.json`` (``None``: none).
        resume: continue the run in ``out_dir``.
        overwrite: replace the run in ``out_dir``.
        trainer_class: a :class:`Trainer` subclass to use, e.g. one that also prints what it logs (``None``:
            :class:`Trainer`).

    Returns:
        ``(trainer, history)``: the :class:`Trainer` (``trainer.device``, ``trainer.best``) and the dev history of
            :meth:`Trainer.fit`.
    """
    from .train import Trainer

    out = Path(out_dir)
    main = int(os.environ.get("RANK", "0")) == 0
    if main:
        check_run_folder(out, resume, overwrite)
    tc = with_averaging(tc)
    out.mkdir(parents=True, exist_ok=True)
    resumed = resume and (out / "last.pt").exists()
    if main and not resumed:  # a fresh run: nothing of a replaced one (overwrite) stays beside it
        for name in ("best.pt", "last.pt", "averaged.pt"):
            (out / name).unlink(missing_ok=True)
    info = {"model_config": model_config, "train_config": tc.to_dict(), "task": task_info, "data": data_info,
            "parameters": sum(p.numel() for p in model.parameters()), **(more_info or {})}
    if main:
        _write_info(out, info)
    trainer = (trainer_class or Trainer)(model, task, tc, out, model_config=model_config)
    t0 = time.time()
    history = trainer.fit(resume=resume)
    info.update(train_seconds=round(time.time() - t0, 1), steps=trainer.step, best_dev=trainer.best)
    if tc.average_last and trainer.is_main:
        info["average"] = average_snapshots(trainer, tc.average_last)
    if trainer.is_main:
        _write_info(out, info)
    return trainer, history


def average_snapshots(trainer: Trainer, k: int) -> dict:
    """Average the last ``k`` step snapshots of ``trainer``'s folder into ``averaged.pt``, load the average
    into ``trainer.model`` and return ``{"file", "steps", **dev scores}`` (``{}`` without snapshots)."""
    import torch

    from .average import write_average
    from .checkpoint import snapshots

    out = trainer.out_dir
    files = [p for _, p in snapshots(out)][-k:]
    if not files:
        return {}
    ck = write_average(files, out / "averaged.pt")
    model = trainer.model
    model.load_state_dict(ck["model"], strict=True)
    model.eval()
    with torch.no_grad(), trainer.autocast:
        scores = {key: float(v) for key, v in trainer.task.evaluate(model).items()}
    metric = trainer.cfg.metric
    _log.info(f"averaged the weights of steps {', '.join(map(str, ck['averaged']['steps']))} into {out / 'averaged.pt'}:"
          f" dev {metric.upper()} {scores.get(metric, 0):.2f} (best.pt: {trainer.best or 0:.2f})")
    return {"file": "averaged.pt", "steps": ck["averaged"]["steps"], **scores}
