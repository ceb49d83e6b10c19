"""What the training commands ``g2gt train STAGE`` share.

* :data:`ENCODER_HELP` / :data:`MODEL_FLAGS`: help and flag names of the encoder options the parser and the
  enhanced-UD model have in common;
* :func:`add_training_groups`: the option groups after ``data`` (model, further configs, task, optimisation
  and budget), ``--overwrite`` (:func:`add_overwrite_option`) and the runtime options;
* :func:`add_preset_option` / :func:`apply_preset`: ``--preset NAME``, a named variant of the command's recipe
  (:class:`g2gt.core.config.Preset`) whose settings apply where the command line gives no option;
* :func:`train_batch_tokens_help`: the help of a device-sized ``--batch-tokens`` default
  (:func:`g2gt.core.runtime.train_batch_tokens`);
* :func:`start_run`: the check that ``--out`` holds no run unless ``--resume`` or ``--overwrite``
  (:func:`g2gt.core.run.check_run_folder`), the run's :class:`g2gt.core.config.TrainConfig` from the options,
  and its command recorded in the training folder (``commands.jsonl``, read by the model card of ``g2gt train
  pipeline``).

Importable without torch, like every command module.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .common import (
    COMMON_OPTIONS, add_common_options, add_dataclass_options, add_signature_options, command_line, option_values,
    progress_enabled,
)

__all__ = ["ENCODER_HELP", "MODEL_FLAGS", "add_overwrite_option", "add_preset_option", "add_training_groups",
           "apply_preset", "given_options", "start_run", "train_batch_tokens_help"]

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


def add_overwrite_option(p) -> None:
    """``--overwrite``: the one option of every ``g2gt train STAGE`` that lets a run replace the one in ``--out``
    (without it, and without ``--resume``, an ``--out`` that holds a run is an error)."""
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run that --out holds (without --resume or --overwrite an existing run is an "
                        "error, never overwritten)")


def add_training_groups(p: argparse.ArgumentParser, model_cls: type, model_options: Iterable[str],
                        train_fn: Callable, task_options: Iterable[str], train_options: Iterable[str], *,
                        task_help: Mapping[str, str], batch_tokens: int | None,
                        model_help: Mapping[str, str] | None = None, model_flags: Mapping[str, str] = MODEL_FLAGS,
                        model_defaults: Mapping[str, Any] | None = None,
                        more_configs: Mapping[str, type] | None = None, task_title: str = "task",
                        task_defaults: Mapping[str, Any] | None = None,
                        more_task_options: Callable[[Any], Any] | None = None,
                        recipe: Callable[..., Any] | None = None,
                        train_defaults: Mapping[str, Any] | None = None,
                        task_choices: Mapping[str, Iterable[Any]] | None = None,
                        train_choices: Mapping[str, Iterable[Any]] | None = None,
                        device_sized_batches: bool = False) -> None:
    """Add the groups ``model`` (fields ``model_options`` of the config dataclass ``model_cls``, flags
    ``model_flags``), one per entry of ``more_configs`` (title -> config dataclass, every field),
    ``task_title`` (keyword arguments ``task_options`` of ``train_fn``, then what ``more_task_options(group)``
    adds) and ``optimisation and budget`` (fields ``train_options`` of :class:`TrainConfig` with the defaults
    of ``recipe()``, the command's TrainConfig maker as :func:`start_run` takes it; ``--amp`` among
    :data:`AMP_MODES`), then the runtime options with ``--batch-tokens`` defaulting to ``batch_tokens`` (None:
    the command does not batch by tokens, and the option is hidden; ``device_sized_batches``: its default is None,
    which the command resolves with :func:`g2gt.core.runtime.train_batch_tokens`, ``batch_tokens`` on the CPU).
    ``*_defaults``: the command's own defaults where they differ from those."""
    from ..core.config import AMP_MODES, TrainConfig

    add_dataclass_options(p.add_argument_group("model"), model_cls, model_options, defaults=model_defaults,
                          help=model_help, flags=model_flags)
    add_overwrite_option(p.add_argument_group("training folder"))
    for title, cls in (more_configs or {}).items():  # every field but the common options' (--batch-tokens)
        add_dataclass_options(p.add_argument_group(title), cls, config_options(cls))
    task = p.add_argument_group(task_title)
    add_signature_options(task, train_fn, task_options, defaults=task_defaults, help=task_help, choices=task_choices)
    if more_task_options is not None:
        more_task_options(task)
    base = (recipe or TrainConfig)()
    add_dataclass_options(p.add_argument_group("optimisation and budget"), TrainConfig, train_options,
                          defaults={n: getattr(base, n) for n in train_options} | dict(train_defaults or {}),
                          choices={"amp": AMP_MODES, **(train_choices or {})})
    if batch_tokens is None:
        add_common_options(p, uses=[u for u in COMMON_OPTIONS if u != "batch_tokens"])
    elif device_sized_batches:
        add_common_options(p, batch_tokens_help=train_batch_tokens_help(batch_tokens))
    else:
        add_common_options(p, batch_tokens=batch_tokens)


def config_options(cls: type) -> list[str]:
    """The fields of config dataclass ``cls`` that get an option of their own: all but those the common
    options set (``batch_tokens``: ``--batch-tokens``)."""
    import dataclasses

    return [f.name for f in dataclasses.fields(cls) if f.name not in COMMON_OPTIONS]


def start_run(args: argparse.Namespace, train_options: Iterable[str], device: str, metric: str, *,
              recipe: Callable[..., Any] | None = None, metric_mode: str = "max", **fields: Any):
    """The run's :class:`TrainConfig`, made by ``recipe`` (keyword fields -> TrainConfig; default the class
    itself): the ``train_options`` as given, ``best.pt`` chosen by the dev ``metric`` (``metric_mode``: higher
    values are better by default), ``device``, the progress bar as asked and ``fields`` (e.g. ``init_from``).
    First refuses an ``args.out``
    that holds a run unless ``args.resume`` or ``args.overwrite`` (:class:`g2gt.core.run.RunExists`, exit
    status 2), then records the command line there (:func:`g2gt.core.run_folder.record_command`)."""
    from ..core.config import TrainConfig
    from ..core.run import check_run_folder
    from ..core.run_folder import record_command

    check_run_folder(args.out, args.resume, args.overwrite)
    record_command(args.out, command_line(args), args.resume)  # for the model card (g2gt train pipeline)
    return (recipe or TrainConfig)(**option_values(args, train_options), metric=metric, metric_mode=metric_mode,
                                   device=device, progress=progress_enabled(args), **fields)


def _flag_text(name: str, value: Any, flags: Mapping[str, str]) -> str:
    flag = flags.get(name, "--" + name.replace("_", "-"))
    if isinstance(value, bool):
        return flag if value else "--no-" + flag[2:]
    return f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}"


def add_preset_option(p: argparse.ArgumentParser, presets: Mapping[str, Any], recipe: Any,
                      flags: Mapping[str, str] = MODEL_FLAGS) -> None:
    """``--preset NAME``: one of ``presets`` (name -> :class:`g2gt.core.config.Preset`), its help listing the options
    each sets (``recipe``: the command's TrainConfig, which the presets' training settings are compared with).

    Args:
        p: the command's parser.
        presets: the command's presets.
        recipe: the command's :class:`~g2gt.core.config.TrainConfig` recipe.
        flags: option names of fields that are not ``--field-name``.
    """
    lines = [f"{name}: {pr.summary} (sets " + ", ".join(_flag_text(k, v, flags) for k, v in pr.values(recipe).items())
             + ")" for name, pr in presets.items()]
    p.add_argument("--preset", choices=sorted(presets), default=None,
                   help="a variant of the recipe; options given on the command line win. " + "; ".join(lines))


def given_options(args: argparse.Namespace, names: Iterable[str]) -> set[str] | None:
    """Which of the options ``names`` (their ``dest``) the command line of ``args`` gave (``args`` parsed by
    :func:`g2gt.cli.main.main`, which keeps the command's parser and argv); None when ``args`` does not say (made
    by hand)."""
    parser, argv = getattr(args, "_parser", None), getattr(args, "_argv", None)
    if parser is None or argv is None:
        return None
    pos = 0
    try:
        for word in parser.prog.split()[1:]:  # "g2gt train parser" -> after "train", then "parser"
            pos = argv.index(word, pos) + 1
    except ValueError:
        return None
    unset = object()
    saved = [(a, a.default) for a in parser._actions if a.dest in set(names)]
    try:
        for a, _ in saved:
            a.default = unset
        ns, _ = parser.parse_known_args(argv[pos:])
    finally:
        for a, default in saved:
            a.default = default
    return {k for k, v in vars(ns).items() if v is not unset}


def apply_preset(args: argparse.Namespace, presets: Mapping[str, Any], recipe: Any) -> dict[str, Any]:
    """Set ``args.preset``'s settings on ``args`` where the command line gave no option of their own.

    Args:
        args: the parsed options (``args.preset``: a name of ``presets``, or None: nothing to do).
        presets: the command's presets (name -> :class:`g2gt.core.config.Preset`).
        recipe: the command's :class:`~g2gt.core.config.TrainConfig` recipe.

    Returns:
        The settings applied (field name -> value).
    """
    if not getattr(args, "preset", None):
        return {}
    values = presets[args.preset].values(recipe)
    given = given_options(args, values) or set()
    applied = {}
    for name, value in values.items():
        if not hasattr(args, name):
            raise ValueError(f"--preset {args.preset} sets {name}, which is not an option of this command")
        if name not in given:
            setattr(args, name, value)
            applied[name] = value
    return applied


def train_batch_tokens_help(cpu_tokens: int) -> str:
    """The ``--batch-tokens`` help of a training command whose default is sized to the device
    (:func:`g2gt.core.runtime.train_batch_tokens`; its constants, without importing torch)."""
    from ..core.config import GPU_BUDGET_GIB, GPU_BUDGET_MAX

    return (f"padded tokens per training batch, padding included (default: {cpu_tokens} on the CPU; on a CUDA device "
            f"{cpu_tokens} x (GPU memory in GiB // {GPU_BUDGET_GIB}), 1 to {GPU_BUDGET_MAX} times: "
            f"{min(GPU_BUDGET_MAX, 140 // GPU_BUDGET_GIB) * cpu_tokens} on an H200, "
            f"{min(GPU_BUDGET_MAX, 79 // GPU_BUDGET_GIB) * cpu_tokens} on an 80 GB GPU)")
