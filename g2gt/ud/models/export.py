"""Export trained models into one small model folder (the layout of :mod:`g2gt.ud.models`).

Training folders hold optimizer state and float32 weights; a shipped model needs neither. For each part
(parser, segmenter, enhancer) :func:`export_model` keeps what the part's ``load`` reads -- the weights,
``model_config``, ``task`` (vocabularies, lexicons) and ``train_config`` (the record of how it was
trained) -- and stores floating-point weights as float16 (half the bytes; ``load`` casts them back to
the model's float32, so only the rounding of each weight to float16 changes).

>>> export_model("g2gt/models/en_ewt", parser="runs/en_ewt", segmenter="runs/segmenter",
...              enhancer="runs/enhanced", card={"name": "en_ewt"})             # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from ...core.checkpoint import load_checkpoint, resolve_checkpoint, save_atomic
from . import PART_FILES

__all__ = ["export_model", "export_part", "MAX_MODEL_MB"]

MAX_MODEL_MB = 25.0  # the package-data budget of one shipped model (all parts together)
_KEEP = ("model", "model_config", "task", "train_config", "step", "best")


def export_part(src: str | os.PathLike, dst: str | os.PathLike, dtype: torch.dtype = torch.float16) -> int:
    """Write the inference part of checkpoint (or training folder) ``src`` to file ``dst``; returns its size
    in bytes. Floating-point weights are cast to ``dtype``; integer buffers are kept as they are."""
    file = resolve_checkpoint(src)
    ck = load_checkpoint(file)
    if "model" not in ck or "model_config" not in ck:
        raise ValueError(f"{file}: not a g2gt training checkpoint (needs 'model' and 'model_config')")
    out = {k: ck[k] for k in _KEEP if k in ck}
    out["model"] = {k: (v.to(dtype) if v.is_floating_point() else v).contiguous() for k, v in ck["model"].items()}
    out["source"] = {"checkpoint": file.name, "dtype": str(dtype).removeprefix("torch.")}
    save_atomic(out, dst)
    return Path(dst).stat().st_size


def export_model(out: str | os.PathLike, parser: str | os.PathLike, segmenter: str | os.PathLike | None = None,
                 enhancer: str | os.PathLike | None = None, card: dict | None = None,
                 dtype: torch.dtype = torch.float16, max_mb: float | None = MAX_MODEL_MB) -> dict:
    """Export a parser (and optionally a segmenter and an enhancer) into model folder ``out``.

    ``card``: JSON-serialisable facts written to ``out/model.json`` together with the parts' sizes.
    ``max_mb``: refuse (``ValueError``, nothing left in ``out``) when the parts together are larger.
    Returns the card as written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sizes: dict[str, int] = {}
    parts = {"parser": parser, "segmenter": segmenter, "enhancer": enhancer}
    for part, src in parts.items():
        dst = out / PART_FILES[part]
        if src is None:
            dst.unlink(missing_ok=True)  # a stale part from an earlier export must not be shipped
            continue
        sizes[part] = export_part(src, dst, dtype)
    total_mb = sum(sizes.values()) / 2**20
    if max_mb is not None and total_mb > max_mb:
        for part in sizes:
            (out / PART_FILES[part]).unlink()
        raise ValueError(f"{out}: the exported parts take {total_mb:.1f} MB, over the {max_mb:g} MB limit of a "
                         "shipped model (train a smaller model)")
    written = dict(card or {})
    written["parts"] = {part: {"file": PART_FILES[part], "bytes": n} for part, n in sizes.items()}
    written["dtype"] = str(dtype).removeprefix("torch.")
    (out / "model.json").write_text(json.dumps(written, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return written
