r"""Blocked label attention in plain torch ops: the path used where the C++ kernel is not (no compiler,
``G2GT_LABEL_KERNEL=torch``, CUDA with value labels). Same maths and interface as ``label_cpp``.

For query rows ``i`` and keys ``j`` of every (batch, head) at once, over blocks of query rows:

.. math::

    S_{ij} = s\,q_i\cdot k_j + \sum_c qa_{i,\,o_c + l^c_{ij}} + m_{ij},\qquad
    P_{ij} = e^{S_{ij} - \mathrm{lse}_i},\qquad
    o_i = \sum_j P_{ij} v_j + \sum_l \mathrm{per}_{il}\, a^V_l,

with ``per = scatter_l P``; backward with ``dP_ij = dO_i . v_j + sum_c doa[i, o_c + l^c_ij]``,
``dS = P * (dP - D)``, ``D_i = dO_i . o_i``: ``dq = s dS k``, ``dk = s dS^T q``, ``dv = P^T dO``,
``dqa = scatter_l dS``, ``da_k = s dqa^T q``, ``da_v = per^T dO`` (and ``dq += s dqa a_k``). Only one block's ``[B, H, rows, nk]`` scores exist at a time (``rows`` chosen so
that the block holds at most ``budget`` elements), so memory is linear in ``n``.

Shapes: ``q [B, H, nq, dh]``, ``k, v [B, H, nk, dh]``, tables ``a_k, a_v [L, dh]`` (``qa = s q a_k^T`` and
``doa = dO a_v^T`` are ``[B, H, nq, L]``, linear in ``n``), ``labels [B|1, C, nq, nk]``
(any integer dtype, channel-local ids; ``offsets[c]`` is channel c's first row in the tables), ``kpm [B|1, nk]``
bool (True = padding), ``allowed [B|1, H|1, nq|1, nk]`` bool (True = may attend), ``add`` like ``allowed``
(float, added to the scores); ``causal``: query ``i`` sees keys ``j <= i + offset``. A query with no visible
key gives zeros (``lse = -inf``) and no gradient.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

__all__ = ["forward", "backward", "BUDGET"]

BUDGET = 1 << 22  # score elements per block (16 MiB in float32); read at each call


def _block_rows(B: int, H: int, nq: int, nk: int, budget: int | None) -> int:
    return max(1, min(nq, (BUDGET if budget is None else budget) // max(B * H * nk, 1)))


def _rows(t: Tensor | None, i0: int, i1: int) -> Tensor | None:
    return t if t is None or t.shape[2] == 1 else t[:, :, i0:i1]


def _scores(q: Tensor, k: Tensor, qa: Tensor, labels: Tensor, offsets: Sequence[int], kpm: Tensor | None,
            allowed: Tensor | None, add: Tensor | None, causal: bool, offset: int, scale: float, i0: int,
            i1: int) -> Tensor:
    """``S`` of query rows ``i0:i1``: ``[B, H, rows, nk]``, ``-inf`` where masked."""
    B, H, _, _ = q.shape
    nk = k.shape[2]
    s = torch.matmul(q[:, :, i0:i1], k.transpose(-1, -2)).mul_(scale)
    qa_rows = qa[:, :, i0:i1]
    shape = (B, H, i1 - i0, nk)
    for c, off in enumerate(offsets):
        s.add_(qa_rows.gather(-1, (labels[:, c, i0:i1].long() + off).unsqueeze(1).expand(shape)))
    extra = _rows(add, i0, i1)
    if extra is not None:
        s.add_(extra.to(s.dtype))
    visible = _rows(allowed, i0, i1)
    if causal:
        i = torch.arange(i0 + offset, i1 + offset, device=q.device)
        ok = (torch.arange(nk, device=q.device)[None, :] <= i[:, None])[None, None]
        visible = ok if visible is None else visible & ok
    if kpm is not None:
        keep = ~kpm.bool()[:, None, None, :]
        visible = keep if visible is None else visible & keep
    return s if visible is None else s.masked_fill_(~visible, float("-inf"))


def _scatter(src: Tensor, labels: Tensor, offsets: Sequence[int], i0: int, i1: int, L: int) -> Tensor:
    """``[B, H, rows, L]``: ``sum_c sum_j [o_c + l^c_ij = l] src_ij``."""
    B, H, rows, nk = src.shape
    out = src.new_zeros(B, H, rows, L)
    for c, off in enumerate(offsets):
        out.scatter_add_(-1, (labels[:, c, i0:i1].long() + off).unsqueeze(1).expand(B, H, rows, nk), src)
    return out


def _probs(s: Tensor, lse: Tensor) -> Tensor:
    """``exp(S - lse)`` in place; rows with ``lse = -inf`` (nothing visible) become zeros."""
    return s.sub_(lse.masked_fill(torch.isinf(lse), 0.0).unsqueeze(-1)).exp_()


def forward(q: Tensor, k: Tensor, v: Tensor, a_k: Tensor, a_v: Tensor | None, labels: Tensor,
            offsets: Sequence[int], kpm: Tensor | None, allowed: Tensor | None, add: Tensor | None, causal: bool,
            offset: int, scale: float, budget: int | None = None) -> tuple[Tensor, Tensor]:
    """``(out [B, H, nq, dh], lse [B, H, nq])``; ``qa = scale * q @ a_k.T``."""
    B, H, nq, _ = q.shape
    nk = k.shape[2]
    L = a_k.shape[0]
    qa = torch.matmul(q, a_k.to(q.dtype).t()).mul_(scale)
    out = torch.empty_like(q)
    lse = q.new_empty(B, H, nq)
    rows = _block_rows(B, H, nq, nk, budget)
    for i0 in range(0, nq, rows):
        i1 = min(nq, i0 + rows)
        s = _scores(q, k, qa, labels, offsets, kpm, allowed, add, causal, offset, scale, i0, i1)
        lse[:, :, i0:i1] = torch.logsumexp(s, -1)
        p = _probs(s, lse[:, :, i0:i1])
        o = torch.matmul(p, v)
        if a_v is not None:
            o.add_(torch.matmul(_scatter(p, labels, offsets, i0, i1, L), a_v.to(p.dtype)))
        out[:, :, i0:i1] = o
    return out, lse


def backward(d_out: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, a_k: Tensor,
             a_v: Tensor | None, labels: Tensor, offsets: Sequence[int], kpm: Tensor | None, allowed: Tensor | None,
             add: Tensor | None, causal: bool, offset: int, scale: float,
             budget: int | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor | None]:
    """``(dq, dk, dv, da_k, da_v)`` (``da_v`` None without ``a_v``)."""
    B, H, nq, dh = q.shape
    nk = k.shape[2]
    L = a_k.shape[0]
    a_k = a_k.to(q.dtype)
    qa = torch.matmul(q, a_k.t()).mul_(scale)
    delta = (d_out * out).sum(-1)
    doa = None if a_v is None else torch.matmul(d_out, a_v.to(q.dtype).t())
    dq, dk, dv = torch.empty_like(q), torch.zeros_like(k), torch.zeros_like(v)
    dqa = torch.empty_like(qa)
    per = torch.empty_like(qa) if doa is not None else None
    rows = _block_rows(B, H, nq, nk, budget)
    for i0 in range(0, nq, rows):
        i1 = min(nq, i0 + rows)
        p = _probs(_scores(q, k, qa, labels, offsets, kpm, allowed, add, causal, offset, scale, i0, i1),
                   lse[:, :, i0:i1])
        g = d_out[:, :, i0:i1]
        dp = torch.matmul(g, v.transpose(-1, -2))
        if doa is not None:
            per[:, :, i0:i1] = _scatter(p, labels, offsets, i0, i1, L)
            shape = (B, H, i1 - i0, nk)
            for c, off in enumerate(offsets):
                dp.add_(doa[:, :, i0:i1].gather(-1, (labels[:, c, i0:i1].long() + off).unsqueeze(1).expand(shape)))
        ds = dp.sub_(delta[:, :, i0:i1].unsqueeze(-1)).mul_(p)
        dq[:, :, i0:i1] = torch.matmul(ds, k).mul_(scale)
        dk.add_(torch.matmul(ds.transpose(-1, -2), q[:, :, i0:i1]), alpha=scale)
        dv.add_(torch.matmul(p.transpose(-1, -2), g))
        dqa[:, :, i0:i1] = _scatter(ds, labels, offsets, i0, i1, L)
    dq.add_(torch.matmul(dqa, a_k), alpha=scale)
    dak = (dqa.reshape(-1, L).t() @ q.reshape(-1, dh)).mul_(scale)
    dav = None if per is None else per.reshape(-1, L).t() @ d_out.reshape(-1, dh)
    return dq, dk, dv, dak, dav
