"""The paths of :class:`g2gt.nn.GraphAttention` that build the ``[B, H, nq, nk]`` scores: plain SDPA (no labels)
and the straightforward autograd path (dropout on the probabilities, the weights wanted, or a float
``attn_mask`` that needs a gradient). See ``attention.py`` for the maths.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from .label_kernels import gather_sum, scatter_sum

__all__ = ["unfused_attention", "visible"]


def visible(B: int, nq: int, nk: int, key_padding_mask: Tensor | None, causal: bool, offset: int,
            device: torch.device) -> Tensor | None:
    """Causal mask and boolean padding: ``[B|1, 1, nq, nk]`` bool, True = may attend (query ``i`` sees keys
    ``j <= i + offset`` when causal); None when nothing is masked. A float padding mask is additive and handled
    with ``attn_mask`` (``label_kernels._mask_terms``)."""
    allowed = None
    if causal:
        i = torch.arange(offset, offset + nq, device=device)
        allowed = (torch.arange(nk, device=device)[None, :] <= i[:, None])[None, None]
    if key_padding_mask is not None and not key_padding_mask.is_floating_point():
        keep = (~key_padding_mask.bool())[:, None, None, :]
        allowed = keep if allowed is None else allowed & keep
    return allowed


def _plain_sdpa(q: Tensor, k: Tensor, v: Tensor, allowed: Tensor | None, add: Tensor | None,
                is_causal: bool) -> Tensor:
    """No labels: SDPA with ``is_causal`` when possible, else a boolean mask (True = attend), or a float one
    when there is an additive term."""
    if is_causal:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    if add is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    mask = add.to(q.dtype)
    if allowed is not None:
        mask = mask.masked_fill(~allowed, float("-inf"))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def unfused_attention(
    q: Tensor, k: Tensor, v: Tensor, labels: Tensor | None,
    tables: tuple[Tensor, Tensor | None, Sequence[int]] | None, key_padding_mask: Tensor | None,
    keep: Tensor | None, add: Tensor | None, causal: bool, offset: int, scale: float, autograd_path: bool,
    p_drop: float,
) -> tuple[Tensor, Tensor | None]:
    """``(out [B, H, nq, dh], weights [B, H, nq, nk] or None)`` before the output projection.

    ``labels [B|1, C, nq, nk]`` with ``tables = (a_K, a_V or None, channel offsets)`` (both None without labels),
    ``keep`` / ``add`` from ``attn_mask`` (``[B|1, H|1, nq, nk]``). Without labels and ``autograd_path``: plain
    SDPA. Otherwise the scores, softmax, dropout ``p_drop`` and value term as autograd ops; ``weights`` are the
    probabilities before dropout. Queries with no visible key give zeros (and zero weights)."""
    B, H, nq, _ = q.shape
    nk = k.shape[2]
    allowed = visible(B, nq, nk, key_padding_mask, causal, offset, q.device)
    if keep is not None:
        allowed = keep if allowed is None else allowed & keep
    dead = None
    if allowed is not None:
        # always applied (asking whether any row is dead would read the mask on the host: a sync per call)
        dead = ~allowed.any(-1, keepdim=True)  # [B|1, H|1, nq, 1]
        allowed = allowed | dead
    weights = None
    if labels is None and not autograd_path:
        fast_causal = causal and key_padding_mask is None and keep is None and add is None and offset == 0 and nq == nk
        out = _plain_sdpa(q, k, v, allowed, add, fast_causal)
    else:
        scores = torch.matmul(q, k.transpose(-1, -2)) * scale
        idx: list[Tensor] = []
        if labels is not None:
            a_k, _, offsets = tables
            idx = [(labels[:, c].long() + off).unsqueeze(1) for c, off in enumerate(offsets)]
            scores = scores + gather_sum(torch.matmul(q, a_k.to(q.dtype).t()), idx, (B, H, nq, nk)) * scale
        if add is not None:
            scores = scores + add.to(scores.dtype)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        weights = attn
        if p_drop:
            attn = F.dropout(attn, p_drop, True)
        out = torch.matmul(attn, v)
        if labels is not None and tables[1] is not None:
            a_v = tables[1]
            out = out + torch.matmul(scatter_sum(attn, idx, a_v.shape[0]), a_v.to(attn.dtype))
    if dead is not None:
        out = out.masked_fill(dead, 0.0)
        weights = None if weights is None else weights.masked_fill(dead, 0.0)
    return out, weights
