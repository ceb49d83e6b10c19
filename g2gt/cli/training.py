"""What the one-stage training commands ``g2gt train parser`` and ``g2gt train enhanced`` share.

* :data:`ENCODER_HELP` / :data:`MODEL_FLAGS`: help and flag names of the encoder options both models have;
* :func:`add_training_groups`: the option groups after ``data`` (model, task, optimisation and budget) and
  the runtime options;
* :func:`start_run`: the run's :class:`g2gt.core.config.TrainConfig` from those options, and its command
  recorded in the training folder (``commands.jsonl``, read by the model card of ``g2gt train pipeline``).

Importable without torch, like every command module.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .common import (
    add_common_options, add_dataclass_options, add_signature_options, command_line, option_values, progress_enabled,
)

__all__ = ["ENCODER_HELP", "MODEL_FLAGS", "add_training_groups", "start_run"]

#: help of the model options the parser and the enhanced-UD model have in common
ENCODER_HELP = {
    "d_model": "model width",
    "num_layers": "encoder layers",
    "num_heads": "attention heads",
    "ffn_dim": "feed-forward width",
    "dropout": "dropout in the encoder",
    "max_distance": "clip distance of the relative-position labels",
    "label_dim": "width of the biaffine label scorer",
    "char_filters": "character CNN filters",
}
MODEL_FLAGS = {"num_layers": "--layers", "num_heads": "--heads"}


def add_training_groups(p: argparse.ArgumentParser, model_cls: type, model_options: Iterable[str],
                        train_fn: Callable, task_options: Iterable[str], train_options: Iterable[str], *,
                        model_help: Mapping[str, str], task_help: Mapping[str, str], batch_tokens: int,
                        model_defaults: Mapping[str, Any] | None = None,
                        train_defaults: Mapping[str, Any] | None = None,
                        task_choices: Mapping[str, Iterable[Any]] | None = None,
                        train_choices: Mapping[str, Iterable[Any]] | None = None) -> None:
    """Add the groups ``model`` (fields ``model_options`` of the config dataclass ``model_cls``, flags
    :data:`MODEL_FLAGS`), ``task`` (keyword arguments ``task_options`` of ``train_fn``) and ``optimisation
    and budget`` (fields ``train_options`` of :class:`TrainConfig`; ``--amp`` among :data:`AMP_MODES`), then
    the runtime options with ``--batch-tokens`` defaulting to ``batch_tokens``. ``*_defaults``: the
    command's own defaults where they differ from the dataclass's."""
    from ..core.config import AMP_MODES, TrainConfig

    add_dataclass_options(p.add_argument_group("model"), model_cls, model_options, defaults=model_defaults,
                          help=model_help, flags=MODEL_FLAGS)
    add_signature_options(p.add_argument_group("task"), train_fn, task_options, help=task_help, choices=task_choices)
    add_dataclass_options(p.add_argument_group("optimisation and budget"), TrainConfig, train_options,
                          defaults=train_defaults, choices={"amp": AMP_MODES, **(train_choices or {})})
    add_common_options(p, batch_tokens=batch_tokens)


def start_run(args: argparse.Namespace, train_options: Iterable[str], device: str, metric: str, **fields: Any):
    """The run's :class:`TrainConfig`: the ``train_options`` as given, ``best.pt`` chosen by the dev ``metric``
    (higher is better), ``device``, the progress bar as asked and ``fields`` (e.g. ``init_from``); records the
    command line in ``args.out`` first (:func:`g2gt.ud.runs.record_command`)."""
    from ..core.config import TrainConfig
    from ..ud.runs import record_command

    record_command(args.out, command_line(args), args.resume)  # for the model card (g2gt train pipeline)
    return TrainConfig(**option_values(args, train_options), metric=metric, metric_mode="max", device=device,
                       progress=progress_enabled(args), **fields)
