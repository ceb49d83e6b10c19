"""Learning-rate schedules that fit the training budget.

A run has a *budget*: ``max_steps`` optimizer updates, or ``max_minutes`` of
training time, or both. Warmup and the final decay are fractions of that budget,
so a 2-minute run and a 3-hour run both warm up and both anneal to ~0. For a
wall-clock budget the number of updates it will hold is not known in advance;
it is estimated from the measured step rate and re-estimated at every update
(:func:`estimate_total_steps`).

All functions take the schedule fields of :class:`g2gt.core.train.TrainConfig`
(``warmup``, ``warmup_steps``, ``schedule``, ``cooldown``, ``max_steps``) from any
object that has them, so this module imports nothing from the Trainer.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["SCHEDULES", "NO_BUDGET_WARMUP_STEPS", "warmup_length", "lr_multiplier", "make_schedule",
           "estimate_total_steps"]

SCHEDULES = ("inverse_sqrt", "cosine", "constant")
NO_BUDGET_WARMUP_STEPS = 1000  # warmup of a run without max_steps / max_minutes (its length is unknown)


def _total(cfg, total_steps: float | None) -> float | None:
    if total_steps:
        return float(total_steps)
    return float(cfg.max_steps) if cfg.max_steps else None


def warmup_length(cfg, total_steps: float | None = None) -> int:
    """Warmup updates ``W``: ``warmup_steps`` when set (it wins), else ``round(warmup * T)`` for a budget of
    ``T`` updates, else :data:`NO_BUDGET_WARMUP_STEPS`."""
    if cfg.warmup_steps is not None:
        if cfg.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0 (or None for a fraction of the budget), got {cfg.warmup_steps}")
        return int(cfg.warmup_steps)
    if not 0.0 <= cfg.warmup < 1.0:
        raise ValueError(f"warmup is a fraction of the budget in [0, 1), got {cfg.warmup}")
    total = _total(cfg, total_steps)
    if total is None:
        return NO_BUDGET_WARMUP_STEPS
    return int(round(cfg.warmup * total))


def lr_multiplier(cfg, step: int, total_steps: float | None = None) -> float:
    """Learning-rate multiplier ``f(s)`` of the ``s``-th optimizer update (``s >= 1``).

    ``T`` = ``total_steps`` (the estimate for a wall-clock budget) or else ``max_steps`` (``None`` when
    neither is set); ``W`` = :func:`warmup_length` (``warmup_steps`` if set, else ``round(warmup * T)``);
    ``c`` = ``cooldown``. Then ``f(s) = warm(s) * shape(s) * ramp(s)`` with

    * warmup: ``warm(s) = min(1, s / W)`` (1 when ``W = 0``);
    * ``shape`` (1 during warmup, then by ``schedule``):

      - ``inverse_sqrt``: ``sqrt(W / s)`` (Vaswani et al. 2017). With ``W = w * T`` this is
        ``sqrt(w / (s / T))``: the same curve over the *fraction* of the budget at every budget;
      - ``cosine``: ``(1 + cos(pi * min(1, (s - W) / (T - W)))) / 2``, 0 at ``T`` (needs a budget);
      - ``constant``: 1 (with ``cooldown`` this is warmup-stable-decay, Hägele et al. 2024);

    * cooldown over the final fraction ``c`` of the budget: ``ramp(s) = clip((T - s + 1) / (c * T), 0, 1)``,
      linear from 1 down to ``1 / (c T)`` at the last update ``s = T`` (1 without a budget or with ``c = 0``).
    """
    total = _total(cfg, total_steps)
    warm = warmup_length(cfg, total)
    s = max(int(step), 1)
    if cfg.schedule not in SCHEDULES:
        raise ValueError(f"schedule must be inverse_sqrt, cosine or constant, got {cfg.schedule!r}")
    if s <= warm:
        f = s / warm
    elif cfg.schedule == "inverse_sqrt":
        f = math.sqrt(max(warm, 1) / s)
    elif cfg.schedule == "cosine":
        if total is None:
            raise ValueError("schedule='cosine' needs a budget (max_steps, max_minutes or total_steps) to know where "
                             "it ends")
        t = min(1.0, (s - warm) / max(total - warm, 1.0))
        f = 0.5 * (1.0 + math.cos(math.pi * t))
    else:
        f = 1.0
    if cfg.cooldown > 0 and total is not None:
        if cfg.cooldown > 1:
            raise ValueError(f"cooldown is a fraction of the budget in [0, 1], got {cfg.cooldown}")
        f *= min(1.0, max(0.0, (total - s + 1) / (cfg.cooldown * total)))
    return f


def make_schedule(cfg, total_steps: float | None = None) -> Callable[[int], float]:
    """``f(s)`` of :func:`lr_multiplier` for a fixed ``total_steps`` (default ``max_steps``). Raises
    ``ValueError`` at once for an unknown ``schedule`` or a cosine schedule without a budget."""
    if cfg.schedule not in SCHEDULES:
        raise ValueError(f"schedule must be inverse_sqrt, cosine or constant, got {cfg.schedule!r}")
    if cfg.schedule == "cosine" and _total(cfg, total_steps) is None:
        raise ValueError("schedule='cosine' needs max_steps > 0 (or total_steps) to know where it ends")
    warmup_length(cfg, total_steps)  # validates warmup / warmup_steps
    return lambda step: lr_multiplier(cfg, step, total_steps)


def estimate_total_steps(steps: int, elapsed: float, budget: float) -> float:
    """Updates a time budget will hold, from the rate so far: ``T = steps * budget / elapsed``.

    ``steps`` updates took ``elapsed`` seconds (evaluations and checkpoints included, so their share of the
    remaining time is accounted for); ``budget`` is the whole budget in seconds. Never less than ``steps``.
    """
    if steps <= 0 or elapsed <= 0:
        return float(max(steps, 1))
    return max(float(steps), steps * budget / elapsed)
