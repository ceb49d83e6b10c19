"""What a training folder holds: whether its run finished, with which budget, how far it got.

A training folder (written by the :class:`g2gt.core.train.Trainer`) has ``last.pt`` with the run's
``train_config``, ``step``, ``epoch`` and the training time used (``schedule.elapsed_s``). A run is
*finished* when it used its budget: ``step >= max_steps``, or ``elapsed_s >= 60 * max_minutes``, or
``epoch >= epochs``. ``g2gt train pipeline --resume`` skips finished stages and continues the others with
their own stored budget (:func:`stored_train_config`), so a stage trained on its own before (``g2gt train
parser --out OUT/parser``) is picked up as it is.

``commands.jsonl`` in a training folder lists the commands that trained its run, one JSON object a line
(``{"command": ...}``), oldest first: :func:`record_command` writes it (``g2gt train parser / enhanced /
segmenter / pipeline``), :func:`run_commands` reads it (for the model card). A run started afresh replaces the
list; a resumed one adds its command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunState", "run_state", "run_finished", "stored_train_config", "record_command", "run_commands",
           "COMMANDS_FILE"]

COMMANDS_FILE = "commands.jsonl"


@dataclass
class RunState:
    """``exists``: the folder has ``last.pt``; ``finished``: its budget is used up; ``step`` / ``minutes``:
    updates and training minutes so far; ``budget``: a short description of the stored budget;
    ``max_minutes``: its wall-clock budget (0 = none)."""

    exists: bool
    finished: bool = False
    step: int = 0
    minutes: float = 0.0
    budget: str = ""
    max_minutes: float = 0.0


def _last(folder: str | os.PathLike) -> dict | None:
    from .checkpoint import load_checkpoint

    last = Path(folder) / "last.pt"
    return load_checkpoint(last) if last.is_file() else None


def run_state(folder: str | os.PathLike) -> RunState:
    """The :class:`RunState` of a training folder (``exists=False`` when it has no ``last.pt``)."""
    ck = _last(folder)
    if ck is None:
        return RunState(False)
    tc = ck.get("train_config") or {}
    step, epoch = int(ck.get("step", 0)), int(ck.get("epoch", 0))
    elapsed = float((ck.get("schedule") or {}).get("elapsed_s", 0.0))
    max_steps, max_minutes = int(tc.get("max_steps") or 0), float(tc.get("max_minutes") or 0.0)
    epochs = int(tc.get("epochs") or 0)
    finished = bool((max_steps and step >= max_steps) or (max_minutes and elapsed >= 60 * max_minutes)
                    or (epochs and epoch >= epochs))
    parts = [f"{max_minutes:g} min"] if max_minutes else []
    parts += [f"{max_steps} steps"] if max_steps else []
    return RunState(True, finished, step, elapsed / 60, " / ".join(parts) or f"{epochs} epochs", max_minutes)


def run_finished(folder: str | os.PathLike) -> bool:
    """Whether the run in ``folder`` used its whole budget (False when there is no ``last.pt``)."""
    return run_state(folder).finished


def stored_train_config(folder: str | os.PathLike, **overrides):
    """The :class:`g2gt.core.config.TrainConfig` a training folder's ``last.pt`` was trained with, with
    ``overrides`` (e.g. ``device``, ``progress``); None when there is no ``last.pt``."""
    import dataclasses

    from .config import TrainConfig

    ck = _last(folder)
    if ck is None:
        return None
    return dataclasses.replace(TrainConfig.from_dict(ck.get("train_config") or {}), **overrides)


def record_command(folder: str | os.PathLike, command: str, resume: bool) -> None:
    """Note ``command`` as one that trains the run in ``folder`` (created if needed): added to
    ``commands.jsonl`` with ``resume`` (unless it is already the last one), else the list starts afresh.
    Written under the folder's lock, by the main process only (``RANK`` unset or 0): a folder another process
    trains in raises :class:`g2gt.core.checkpoint.TrainingFolderLocked` and is left as it is."""
    import json

    from .checkpoint import TrainingFolderLock

    if os.environ.get("RANK", "0") != "0":
        return
    path = Path(folder) / COMMANDS_FILE
    with TrainingFolderLock(folder):
        known = run_commands(folder) if resume else []
        if known and known[-1] == command:
            return
        with open(path, "a" if known else "w", encoding="utf-8") as f:
            f.write(json.dumps({"command": command}, ensure_ascii=False) + "\n")


def run_commands(folder: str | os.PathLike) -> list[str]:
    """The commands recorded in ``folder/commands.jsonl``, oldest first (``[]`` when none were recorded, e.g.
    a run made before commands were kept)."""
    import json

    path = Path(folder) / COMMANDS_FILE
    if not path.is_file():
        return []
    out = []
    for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(str(json.loads(line)["command"]))
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{k}: expected a JSON object with a \"command\" string") from None
    return out
