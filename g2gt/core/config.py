"""Training settings as dataclasses, importable without torch (the CLI builds its options from them).

* :class:`TrainConfig`: the :class:`g2gt.core.train.Trainer`'s settings;
* :func:`option`: a dataclass field whose metadata carries its help text and option group;
* :func:`dataclass_from_dict`: one way to rebuild any config dataclass from JSON-like data;
* :class:`Preset`: a named variant of a command's recipe (``g2gt train parser --preset gpu``).

A training recipe is an *instance* of :class:`TrainConfig` (``PARSER_TRAIN = TrainConfig(lr=1.5e-3, ...)``)
and its maker a :func:`dataclasses.replace` of it; no recipe is a dict.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

__all__ = ["AMP_HELP", "AMP_MODES", "GPU_BUDGET_GIB", "GPU_BUDGET_MAX", "DictConfig", "Preset", "TrainConfig", "dataclass_from_dict", "option",
           "recipe_overrides", "model_fields"]

T = TypeVar("T")

#: values of ``amp`` (see :func:`g2gt.core.train.autocast_dtype`) and their one-line help
AMP_MODES = ("auto", "bf16", "fp16", "none")
#: on CUDA a training batch holds the CPU budget times (GPU memory in GiB // GPU_BUDGET_GIB), between 1 and
#: GPU_BUDGET_MAX times (:func:`g2gt.core.runtime.train_batch_tokens`): 8x on an H200 (140 GiB), 4x on an 80 GB
#: H100 / A100, 1x on a 16-24 GB card. A first guess that fits the GPU presets' activations in memory; the
#: throughput it gives is to be measured (benchmarks/gpu_check.py)
GPU_BUDGET_GIB = 16
GPU_BUDGET_MAX = 8
AMP_HELP = "autocast: auto (bf16/fp16 on CUDA, bf16 on CPUs with native bf16, else off), bf16, fp16 or none"


def option(default: Any, help: str, group: str | None = None) -> Any:
    """A dataclass field with a help text and an option group.

    ``dataclasses.field(default=...)`` with ``metadata={"help": help, "group": group}``: the CLI turns field ``x_y``
    into ``--x-y`` with this help text, in this option group.

    Args:
        default: the field's default.
        help: the option's help text.
        group: the CLI option group (``None``: none).

    Returns:
        A ``dataclasses.field``.
    """
    return dataclasses.field(default=default, metadata={"help": help, "group": group})


def dataclass_from_dict(cls: type[T], d: dict, strict: bool = False) -> T:
    """``cls(**d)`` for a dataclass, from JSON-like data (a checkpoint, a config file).

    Keys that are not fields of ``cls`` are ignored (configs written by other versions still load), or
    rejected with ``strict=True``; lists become tuples for tuple fields (JSON has no tuples).

    Args:
        cls: the dataclass.
        d: its fields as JSON-like data.
        strict: reject keys that are not fields of ``cls``.

    Returns:
        The ``cls`` instance.

    Raises:
        ValueError: with ``strict=True``, a key that is not a field.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - set(fields))
    if strict and unknown:
        raise ValueError(f"unknown {cls.__name__} field(s) {unknown}; expected some of {sorted(fields)}")
    kw = {}
    for k, v in d.items():
        if k in fields:
            f = fields[k]
            if isinstance(v, list) and (isinstance(f.default, tuple) or str(f.type).startswith("tuple")):
                v = tuple(v)
            kw[k] = v
    return cls(**kw)


class DictConfig:
    """Mixin for config dataclasses: :meth:`to_dict` (JSON-ready, tuples as lists: what checkpoints and
    ``config.json`` hold) and :meth:`from_dict` (:func:`dataclass_from_dict`: unknown keys of other versions
    are ignored, lists become tuples again)."""

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls: type[T], d: dict) -> T:
        return dataclass_from_dict(cls, d)


@dataclass
class TrainConfig(DictConfig):
    """Optimisation and bookkeeping settings of the :class:`g2gt.core.train.Trainer` (saved inside checkpoints).

    The budget is ``max_steps`` updates and / or ``max_minutes`` of training time, both counted over the
    whole run (a resumed run continues the same budget). Warmup and cooldown are fractions of the budget
    unless ``warmup_steps`` is set; the formulas are in :func:`g2gt.core.schedule.lr_multiplier`.

    To chain an interrupted run, resume it with the *same* budget: the schedule then continues exactly.
    Resuming a finished run with a *larger* budget re-fits the schedule to it: the learning rate jumps back
    up from ~0 to the curve's value at the new fraction and cools down again (a warm restart). On the
    shipped parser this did not pay: 120 -> 145 minutes ended at dev LAS 84.80 against 84.91, and ``best.pt``
    kept the earlier model. Plan the full budget from the start.

    Args:
        lr: peak learning rate (AdamW).
        betas: adamW betas.
        weight_decay: adamW weight decay (not on biases, norms, embeddings).
        warmup: warmup as a fraction of the budget (max_minutes / max_steps).
        warmup_steps: warmup in updates; wins over warmup (default: use the fraction).
        schedule: after warmup: inverse_sqrt, cosine or constant.
        cooldown: final fraction of the budget over which the learning rate decays linearly to ~0 (0 = off).
        max_steps: update budget of the run (0 = none).
        epochs: at most this many passes over the training data.
        max_minutes: training-time budget of the run in minutes, resumes included (0 = none).
        grad_clip: clip the gradient norm to this (0 = off).
        accum_steps: batches accumulated per update.
        amp: autocast: auto (bf16/fp16 on CUDA, bf16 on CPUs with native bf16, else off), bf16, fp16 or none.
        eval_every: updates between evaluations (0 = at the end of each epoch).
        save_every: updates between resumable checkpoints (0 = at every evaluation).
        keep_last: also keep the weights of the last K resumable checkpoints as OUT/step-NNNNNNN.pt, e.g. for checkpoint
            averaging (0 = none).
        average_last: keep the weights of the last N saved checkpoints (OUT/step-NNNNNNN.pt; a save at every evaluation,
            or every save_every updates) and write their average to OUT/averaged.pt at the end, with its dev scores in
            OUT/config.json (0 = off).
        log_every: updates between log.jsonl training lines (lr, loss, tokens/s).
        metric: evaluation metric that selects best.pt.
        metric_mode: min or max: which values of metric are better.
        seed: random seed.
        device: auto, cpu, cuda, cuda:1 ...
        progress: progress bar.
        find_unused_parameters: dDP: set when some parameters get no gradient in a step.
        init_from: warm start: the model whose matching weights initialise this one (read by the task's training
            function, e.g. train_parser; recorded here).
    """

    lr: float = option(5e-4, "peak learning rate (AdamW)", "optimisation")
    betas: tuple[float, float] = option((0.9, 0.98), "AdamW betas", "optimisation")
    weight_decay: float = option(0.01, "AdamW weight decay (not on biases, norms, embeddings)", "optimisation")
    warmup: float = option(0.05, "warmup as a fraction of the budget (max_minutes / max_steps)", "optimisation")
    warmup_steps: int | None = option(None, "warmup in updates; wins over warmup (default: use the fraction)",
                                      "optimisation")
    schedule: str = option("inverse_sqrt", "after warmup: inverse_sqrt, cosine or constant", "optimisation")
    cooldown: float = option(0.2, "final fraction of the budget over which the learning rate decays linearly to ~0 "
                             "(0 = off)", "optimisation")
    max_steps: int = option(0, "update budget of the run (0 = none)", "budget")
    epochs: int = option(1000, "at most this many passes over the training data", "budget")
    max_minutes: float = option(0.0, "training-time budget of the run in minutes, resumes included (0 = none)",
                                "budget")
    grad_clip: float = option(1.0, "clip the gradient norm to this (0 = off)", "optimisation")
    accum_steps: int = option(1, "batches accumulated per update", "optimisation")
    amp: str = option("auto", AMP_HELP, "runtime")
    eval_every: int = option(1000, "updates between evaluations (0 = at the end of each epoch)", "evaluation")
    save_every: int = option(0, "updates between resumable checkpoints (0 = at every evaluation)", "evaluation")
    keep_last: int = option(0, "also keep the weights of the last K resumable checkpoints as OUT/step-NNNNNNN.pt, "
                            "e.g. for checkpoint averaging (0 = none)", "evaluation")
    average_last: int = option(0, "keep the weights of the last N saved checkpoints (OUT/step-NNNNNNN.pt; a save at "
                               "every evaluation, or every save_every updates) and write their average to "
                               "OUT/averaged.pt at the end, with its dev scores in OUT/config.json (0 = off)",
                               "evaluation")
    log_every: int = option(10, "updates between log.jsonl training lines (lr, loss, tokens/s)", "evaluation")
    metric: str = option("loss", "evaluation metric that selects best.pt", "evaluation")
    metric_mode: str = option("min", "min or max: which values of metric are better", "evaluation")
    seed: int = option(1, "random seed", "optimisation")
    device: str = option("auto", "auto, cpu, cuda, cuda:1 ...", "runtime")
    progress: bool = option(True, "progress bar", "runtime")
    find_unused_parameters: bool = option(False, "DDP: set when some parameters get no gradient in a step",
                                          "runtime")
    init_from: str | None = option(None, "warm start: the model whose matching weights initialise this one (read by "
                                   "the task's training function, e.g. train_parser; recorded here)", "optimisation")


def recipe_overrides(recipe: Any) -> dict[str, Any]:
    """The fields of a config instance that differ from its class's defaults (``{"lr": 1.5e-3, ...}``)."""
    base = type(recipe)()
    return {f.name: getattr(recipe, f.name) for f in dataclasses.fields(recipe)
            if getattr(recipe, f.name) != getattr(base, f.name)}


def model_fields(config: Any, data_fields: Any = (), changed: bool = False) -> dict[str, Any]:
    """The fields of a model config dataclass that a training function takes from the caller: all but
    ``data_fields`` (the sizes it sets from the training data); with ``changed``, only those that differ from
    the class's defaults (the overrides of a warm start's architecture)."""
    values = recipe_overrides(config) if changed else {f.name: getattr(config, f.name)
                                                       for f in dataclasses.fields(config)}
    return {k: v for k, v in values.items() if k not in set(data_fields)}


@dataclass(frozen=True)
class Preset:
    """A named variant of a training command's recipe, chosen with ``--preset NAME``: it sets the options its
    configs change, and options given on the command line win.

    Like the recipes, a preset is made of config *instances*: the model config's fields that differ from their
    class defaults and the :class:`TrainConfig` fields that differ from the command's recipe are what it sets
    (:meth:`values`). The training batch budget is not among them: ``--batch-tokens`` keeps its device-sized
    default (:func:`g2gt.core.runtime.train_batch_tokens`).

    Args:
        name: the ``--preset`` value.
        summary: one line for ``--help`` and the docs.
        model: the model config (e.g. a ``ParserConfig``).
        train: the optimisation and budget settings.
    """

    name: str
    summary: str
    model: Any
    train: TrainConfig

    def values(self, recipe: TrainConfig) -> dict[str, Any]:
        """The settings the preset changes: field name -> value (model fields first).

        Args:
            recipe: the command's :class:`TrainConfig` recipe, which the ``train`` fields are compared with.

        Returns:
            Field name -> value.
        """
        out = recipe_overrides(self.model)
        out.update({f.name: getattr(self.train, f.name) for f in dataclasses.fields(TrainConfig)
                    if getattr(self.train, f.name) != getattr(recipe, f.name)})
        return out
