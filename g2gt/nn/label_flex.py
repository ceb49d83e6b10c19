r"""FlexAttention with the label bias read inside ``score_mod`` (the CUDA path of keys-only label attention).

.. math::

    S_{ij} = s\,q_i\cdot k_j + \sum_c qa_{b,h,i,\;o_c + l^c_{ij}} + m_{ij},
    \qquad qa = s\,q\,a_K^\top \;[B, H, n_q, L],

with ``m`` the float mask and ``-inf`` where masked (causal, padding, a boolean mask). On CUDA the kernel
is ``torch.compile``d once per process: it never builds the ``[B, H, nq, nk]`` scores, and its backward
scatters the gradient of ``qa`` (a captured tensor that requires grad, torch >= 2.6) by label inside the
kernel, so gradients reach ``q`` and the label table ``a_K``. Elsewhere FlexAttention runs eagerly (it
materialises the scores, and has no backward on CPU): GraphAttention uses that only for ``backend="flex"``
inference. Unmeasured on a GPU so far (no GPU was available when this was written).
"""

from __future__ import annotations

import warnings
from typing import Sequence

import torch
from torch import Tensor

__all__ = ["flex_attention_available", "flex_trains_label_bias", "flex_label_attention", "dead_rows"]

_COMPILED: dict[str, object] = {}


def flex_attention_available(device: torch.device | str = "cpu") -> bool:
    """Whether ``torch.nn.attention.flex_attention`` exists in this torch build."""
    try:
        from torch.nn.attention.flex_attention import flex_attention  # noqa: F401
    except Exception:
        return False
    return True


def flex_trains_label_bias() -> bool:
    """Whether compiled FlexAttention differentiates captured tensors in ``score_mod`` (torch >= 2.6)."""
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 6) and flex_attention_available()


def _kernel(device_type: str):
    """``flex_attention``, compiled once per process on CUDA (eager elsewhere, or if compiling fails)."""
    import torch.nn.attention.flex_attention as fa

    if device_type != "cuda":
        return fa.flex_attention
    if "cuda" not in _COMPILED:
        try:
            _COMPILED["cuda"] = torch.compile(fa.flex_attention)
        except Exception as err:  # pragma: no cover - toolchain dependent
            warnings.warn(f"g2gt: torch.compile(flex_attention) failed ({type(err).__name__}); eager FlexAttention "
                          "materialises the scores", RuntimeWarning, stacklevel=3)
            _COMPILED["cuda"] = fa.flex_attention
    return _COMPILED["cuda"]


def dead_rows(kpm: Tensor | None, allowed: Tensor | None, causal: bool, offset: int, nq: int, nk: int,
              device: torch.device) -> Tensor | None:
    """``[B|1, H|1, nq, 1]`` bool, True where a query sees no key (None when there is none), from the mask
    parts (``kpm [B|1, nk]`` True = padding, ``allowed [B|1, H|1, nq|1, nk]`` True = may attend)."""
    if allowed is not None:
        vis = allowed
        if kpm is not None:
            vis = vis & ~kpm.bool()[:, None, None, :]
        if causal:
            vis = vis & (torch.arange(nk, device=device) <= torch.arange(nq, device=device)[:, None] + offset)
        dead = ~vis.any(-1, keepdim=True)
    else:
        i = torch.arange(nq, device=device)[None, None, :, None] + offset  # last visible key when causal
        if kpm is not None:
            keep = ~kpm.bool()
            first = torch.where(keep.any(-1), keep.float().argmax(-1), nk)  # first non-padding key, [B]
            dead = (i < first[:, None, None, None]) if causal else (first[:, None, None, None] >= nk).expand(
                -1, 1, nq, 1)
        elif causal:
            dead = i < 0
        else:
            return None
    return dead if bool(dead.any()) else None


def flex_label_attention(q: Tensor, k: Tensor, v: Tensor, qa: Tensor | None, labels: Tensor | None,
                         offsets: Sequence[int], kpm: Tensor | None, allowed: Tensor | None, add: Tensor | None,
                         causal: bool, offset: int, scale: float) -> Tensor:
    """``[B, H, nq, dh]``: attention with ``score_mod`` adding the label bias (``qa [B, H, nq, L]``, ``labels
    [B|1, C, nq, nk]`` channel-local ids, ``offsets[c]`` channel c's first table row) and the float mask ``add``
    (``[B|1, H|1, nq|1, nk]``), and setting ``-inf`` where masked: ``kpm [B|1, nk]`` True = padding, ``allowed``
    (like ``add``) False, or ``j > i + offset`` when ``causal``. Queries with no visible key give zeros."""
    B, H, nq, _ = q.shape
    nk = k.shape[2]
    n_ch = 0 if labels is None else labels.shape[1]
    offs = [int(o) for o in offsets]
    add = None if add is None else add.to(q.dtype)

    def pick(t: Tensor | None, dim: int, size: int):  # index b (or h, i) into a dim that may be 1 (broadcast)
        return (lambda i: i) if t is None or t.shape[dim] == size else (lambda i: i * 0)

    lb = pick(labels, 0, B)
    ab, ah, ai = pick(allowed, 0, B), pick(allowed, 1, H), pick(allowed, 2, nq)
    db, dh_, di = pick(add, 0, B), pick(add, 1, H), pick(add, 2, nq)
    kb = pick(kpm, 0, B)

    def score_mod(score, b, h, q_idx, kv_idx):
        for c in range(n_ch):
            score = score + qa[b, h, q_idx, labels[lb(b), c, q_idx, kv_idx].long() + offs[c]]
        if add is not None:
            score = score + add[db(b), dh_(h), di(q_idx), kv_idx]
        if allowed is not None:
            score = torch.where(allowed[ab(b), ah(h), ai(q_idx), kv_idx], score, -float("inf"))
        if kpm is not None:
            score = torch.where(kpm[kb(b), kv_idx], -float("inf"), score)
        if causal:
            score = torch.where(kv_idx <= q_idx + offset, score, -float("inf"))
        return score

    out = _kernel(q.device.type)(q, k, v, score_mod=score_mod, scale=scale)
    dead = dead_rows(kpm, allowed, causal, offset, nq, nk, q.device)
    return out if dead is None else out.masked_fill(dead, 0.0)
