"""One training run in a folder, the way the task recipes run it (``train_parser``, ``train_enhancer``,
``train_segmenter``, ``train_coref``, ``distill_parser``, ``train_seq2seq``).

A recipe builds its vocabulary, model config and task, then :func:`run_training`:

1. writes ``OUT/config.json`` (``model_config``, ``train_config``, the recipe's ``task`` and ``data``
   sections, ``parameters``, then any further sections),
2. runs :class:`g2gt.core.train.Trainer` (``best.pt``, ``last.pt``, ``log.jsonl``),
3. with ``average_last = K > 0``, writes the element-wise mean of the weights of the last ``K`` step
   snapshots to ``OUT/averaged.pt`` (:mod:`g2gt.core.average`) and scores it on dev,
4. adds ``train_seconds``, ``steps``, ``best_dev`` (and ``average``) to ``config.json``.

:func:`resume_checkpoint` is the checkpoint a resumed recipe reads its vocabulary and model config from;
:func:`with_averaging` makes a :class:`TrainConfig` keep the snapshots that ``average_last`` needs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from .checkpoint import load_checkpoint, snapshots
from .config import TrainConfig
from .train import Trainer

__all__ = ["resume_checkpoint", "with_averaging", "run_training", "average_snapshots"]


def resume_checkpoint(out_dir: str | os.PathLike, resume: bool) -> dict | None:
    """``OUT/last.pt`` loaded (``weights_only``) when ``resume`` and it exists, else None (a fresh run)."""
    last = Path(out_dir) / "last.pt"
    return load_checkpoint(last) if resume and last.exists() else None


def with_averaging(tc: TrainConfig, average_last: int) -> TrainConfig:
    """``tc`` keeping at least ``average_last`` step snapshots (``keep_last``); ``ValueError`` when negative."""
    if average_last < 0:
        raise ValueError(f"average_last must be >= 0 (0 = no averaging), got {average_last}")
    return dataclasses.replace(tc, keep_last=average_last) if average_last > tc.keep_last else tc


def _write_info(out: Path, info: dict) -> None:
    (out / "config.json").write_text(json.dumps(info, indent=2) + "\n")


def run_training(model: nn.Module, task, tc: TrainConfig, out_dir: str | os.PathLike, model_config: dict, *,
                 task_info: dict, data_info: dict, more_info: dict | None = None, resume: bool = False,
                 average_last: int = 0, trainer_class: Callable[..., Trainer] = Trainer
                 ) -> tuple[Trainer, list[dict]]:
    """Steps 1-4 of the module docstring; returns the :class:`Trainer` (``trainer.device``, ``trainer.best``)
    and the dev history of :meth:`Trainer.fit`. ``tc`` must keep ``average_last`` snapshots
    (:func:`with_averaging`). ``trainer_class``: a :class:`Trainer` subclass, e.g. one that also prints what
    it logs."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    info = {"model_config": model_config, "train_config": tc.to_dict(), "task": task_info, "data": data_info,
            "parameters": sum(p.numel() for p in model.parameters()), **(more_info or {})}
    _write_info(out, info)
    trainer = trainer_class(model, task, tc, out, model_config=model_config)
    t0 = time.time()
    history = trainer.fit(resume=resume)
    info.update(train_seconds=round(time.time() - t0, 1), steps=trainer.step, best_dev=trainer.best)
    if average_last and trainer.is_main:
        info["average"] = average_snapshots(trainer, average_last)
    _write_info(out, info)
    return trainer, history


def average_snapshots(trainer: Trainer, k: int) -> dict:
    """Average the last ``k`` step snapshots of ``trainer``'s folder into ``averaged.pt``, load the average
    into ``trainer.model`` and return ``{"file", "steps", **dev scores}`` (``{}`` without snapshots)."""
    from .average import write_average

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
    print(f"averaged the weights of steps {', '.join(map(str, ck['averaged']['steps']))} into {out / 'averaged.pt'}:"
          f" dev {metric.upper()} {scores.get(metric, 0):.2f} (best.pt: {trainer.best or 0:.2f})", file=sys.stderr)
    return {"file": "averaged.pt", "steps": ck["averaged"]["steps"], **scores}
