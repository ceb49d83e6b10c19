"""Deliberately naive float64 reference for :class:`g2gt.nn.GraphAttention`.

Implements the DESIGN.md formula literally, *materialising* the per-pair label
embeddings ``[B, H, nq, nk, d_head]``:

    e_ij  = q_i . (k_j + sum_c a^{K,c}[l^c_ij]) / sqrt(d_head)
    a_ij  = softmax_j(e_ij)   over allowed keys (padding / causal)
    o_i   = sum_j a_ij (v_j + sum_c a^{V,c}[l^c_ij])          (value term optional)

It reuses the weights of a GraphAttention module (so gradients flow to the same
parameters) and computes everything in float64. A query row with no allowed key
returns zeros. Only for tests: memory is ``O(B H n^2 d_head)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def _linear(lin: torch.nn.Linear, t: Tensor) -> Tensor:
    y = t.double() @ lin.weight.double().t()
    if lin.bias is not None:
        y = y + lin.bias.double()
    return y


def reference_attention(
    module,
    x: Tensor,
    labels: Tensor | None = None,
    key_padding_mask: Tensor | None = None,
    causal: bool = False,
    memory: Tensor | None = None,
    query_offset: int = 0,
    return_weights: bool = False,
    attn_mask: Tensor | None = None,
):
    """Naive GraphAttention forward.

    Args:
        module: a ``GraphAttention`` whose parameters are used.
        x: ``[B, nq, d]``; memory: ``[B, nk, kdim]`` (None = self-attention).
        labels: ``[B|1, nq, nk]`` or ``[B|1, C, nq, nk]`` integer ids (channel-local).
        key_padding_mask: ``[B, nk]`` bool, True = padding.
        causal: key ``j`` is visible to query ``i`` iff ``j <= i + query_offset``.
        attn_mask: ``[nq, nk]`` or ``[B*H, nq, nk]`` (row ``b*H + h``); bool, True = not visible, or
            float, added to the scores (``-inf`` = not visible).
    Returns:
        ``[B, nq, d]`` float64 (and ``[B, H, nq, nk]`` weights when ``return_weights``).
    """
    B, nq, _ = x.shape
    src = x if memory is None else memory
    nk = src.shape[1]
    H, dh = module.num_heads, module.head_dim

    def heads(t: Tensor, n: int) -> Tensor:  # [B, n, d] -> [B, H, n, dh]
        return t.reshape(B, n, H, dh).permute(0, 2, 1, 3)

    q = heads(_linear(module.q_proj, x), nq)
    k = heads(_linear(module.k_proj, src), nk)
    v = heads(_linear(module.v_proj, src), nk)

    # Per-pair label embeddings, materialised: [B, H, nq, nk, dh].
    rel_k = torch.zeros(B, H, nq, nk, dh, dtype=torch.float64)
    rel_v = torch.zeros(B, H, nq, nk, dh, dtype=torch.float64)
    if module.label_key is not None:
        assert labels is not None
        lab = labels if labels.dim() == 4 else labels.unsqueeze(1)
        lab = lab.expand(B, -1, nq, nk)
        start = 0
        for c, size in enumerate(module.label_sizes):
            table_k = module.label_key.double()[start : start + size]
            rel_k = rel_k + table_k[lab[:, c]].unsqueeze(1)  # [B, 1, nq, nk, dh] broadcast over heads
            if module.label_value is not None:
                table_v = module.label_value.double()[start : start + size]
                rel_v = rel_v + table_v[lab[:, c]].unsqueeze(1)
            start += size

    keys = k.unsqueeze(2) + rel_k  # [B, H, nq, nk, dh]
    scores = (q.unsqueeze(3) * keys).sum(-1) / math.sqrt(dh)  # [B, H, nq, nk]

    allowed = torch.ones(B, 1, nq, nk, dtype=torch.bool)
    if causal:
        for i in range(nq):
            for j in range(nk):
                if j > i + query_offset:
                    allowed[:, :, i, j] = False
    if key_padding_mask is not None:
        allowed = allowed & ~key_padding_mask.bool()[:, None, None, :]
    if attn_mask is not None:
        m = attn_mask.reshape(-1, H, nq, nk) if attn_mask.dim() == 3 else attn_mask.reshape(1, 1, nq, nk)
        if m.dtype == torch.bool:
            allowed = allowed & ~m
        else:
            allowed = allowed & (m != float("-inf"))
            scores = scores + torch.where(m == float("-inf"), 0.0, m.double())
    alive = allowed.any(-1, keepdim=True)  # [B, 1, nq, 1]
    scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
    scores = torch.where(alive, scores, torch.zeros_like(scores))  # dead rows: finite, zeroed below
    weights = torch.softmax(scores, dim=-1) * alive

    values = v.unsqueeze(2) + rel_v  # [B, H, nq, nk, dh]
    out = (weights.unsqueeze(-1) * values).sum(3)  # [B, H, nq, dh]
    out = out.permute(0, 2, 1, 3).reshape(B, nq, H * dh)
    out = _linear(module.out_proj, out)
    return (out, weights) if return_weights else out
