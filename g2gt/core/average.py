"""Checkpoint averaging: the element-wise mean of the weights of several checkpoints of one run.

For checkpoints ``1..K`` with weights ``W_k`` (every tensor of ``ck["model"]``), the average is

    W = (1 / K) * sum_k W_k

computed in float64 and stored in the first checkpoint's dtype of each tensor. Averaging the last
checkpoints of a run whose learning rate is cooling down approximates the centre of the region the weights
move in (Polyak averaging, as the Transformer recipe does with its last checkpoints); it is not meant for
checkpoints of different runs or models, so model configs, tensor names and shapes must all agree, and
integer tensors (buffers) must be equal. The result loads like ``best.pt``: weights, ``model_config``,
``task`` extras and ``train_config`` of the newest checkpoint, ``step`` of the newest, and ``averaged``
(``{"files": [...], "steps": [...]}``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .checkpoint import load_checkpoint, save_atomic

__all__ = ["average_checkpoints", "write_average"]


def average_checkpoints(paths: Sequence[str | os.PathLike]) -> dict:
    """The averaged checkpoint of ``paths`` (see the module docstring); ``ValueError`` naming the file and
    tensor when they are not checkpoints of one model."""
    import torch

    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint file")
    files = [Path(p) for p in paths]
    first = load_checkpoint(files[0])
    if "model" not in first:
        raise ValueError(f"{files[0]}: no 'model' weights inside (expected a g2gt checkpoint such as best.pt, "
                         "last.pt or step-NNNNNNN.pt)")
    ref = first["model"]
    sums = {k: v.detach().to(torch.float64) if v.is_floating_point() else v for k, v in ref.items()}
    steps = [first.get("step")]
    last = first
    for f in files[1:]:
        ck = load_checkpoint(f)
        state = ck.get("model")
        if state is None:
            raise ValueError(f"{f}: no 'model' weights inside (expected a g2gt checkpoint)")
        if ck.get("model_config") != first.get("model_config"):
            raise ValueError(f"{f}: its model_config differs from {files[0]}'s; average checkpoints of one run only")
        if set(state) != set(ref):
            odd = sorted(set(state) ^ set(ref))[:3]
            raise ValueError(f"{f}: its tensors differ from {files[0]}'s (e.g. {', '.join(odd)}); average "
                             "checkpoints of one model only")
        for k, v in state.items():
            if v.shape != ref[k].shape:
                raise ValueError(f"{f}: {k} has shape {tuple(v.shape)}, {files[0]} has {tuple(ref[k].shape)}")
            if v.is_floating_point():
                sums[k] += v.detach().to(torch.float64)
            elif not torch.equal(v, ref[k]):
                raise ValueError(f"{f}: the integer tensor {k} differs from {files[0]}'s (cannot be averaged)")
        steps.append(ck.get("step"))
        last = ck
    n = len(files)
    model = {k: (v / n).to(ref[k].dtype) if ref[k].is_floating_point() else v for k, v in sums.items()}
    keep = ("model_config", "task", "train_config", "step")
    out = {k: last[k] for k in keep if k in last}
    out.update(model=model, averaged={"files": [str(f) for f in files], "steps": steps})
    return out


def write_average(paths: Sequence[str | os.PathLike], out: str | os.PathLike) -> dict:
    """:func:`average_checkpoints` of ``paths`` written atomically to ``out``; returns it."""
    ck = average_checkpoints(paths)
    save_atomic(ck, out)
    return ck
