r"""Fused label attention in Triton (FlashAttention-2 style), forward and backward: the CUDA label path.

.. math::

    S_{ij} = s\,q_i\cdot k_j + \sum_c qa_{i,\,o_c + l^c_{ij}} + m_{ij},\quad qa = s\,q\,a_K^\top,\quad
    P = \mathrm{softmax}_j(S),\quad o_i = \sum_j P_{ij}\,\big(v_j + \sum_c a^V_{o_c + l^c_{ij}}\big)

(``s`` the scale, ``o_c`` channel c's first row in the concatenated tables, ``m`` the masks). The kernels
(:mod:`g2gt.nn.label_triton_kernels`) work on tiles of queries x keys with an online softmax; the label term is a
gather of the query tile's ``qa`` row block (``[BM, L]``) by the labels, the value term a scatter of ``P`` by label
into ``per [BM, L]``, multiplied by ``a_V`` once at the end (``o += per @ a_V``). Nothing ``[B, H, nq, nk]`` or
``[B, nq, nk, d]`` is built: what lives in memory besides q, k, v, the labels and the masks is ``O(B H n (d + L))``.

Shapes: ``q [B, H, nq, dh]``, ``k, v [B, H, nk, dh]`` (any strides; float32, bfloat16 or float16, arithmetic
in float32, matrix products in the input dtype as flash attention does), tables ``a_k, a_v [L, dh]``, ``labels
[B|1, C, nq, nk]`` channel-local ids (uint8 / int16 / int32, :func:`g2gt.nn.label_kernels.compact_labels`),
``kpm [B|1, nk]`` bool (True = padding), ``allowed [B|1, H|1, nq|1, nk]`` bool (True = may attend), ``add`` like
``allowed``, float (added to the scores; no gradient to it); ``causal``: query ``i`` sees keys ``j <= i + offset``.
A query with no visible key returns zeros and passes no gradient, as the other label paths.

Limits (:func:`unsupported` says which one a call hits, so the caller can take another path): ``L`` (all
channels' tables together) at most :data:`MAX_LABELS`, ``dh`` at most :data:`MAX_HEAD_DIM`, CUDA tensors, or CPU
tensors when ``TRITON_INTERPRET=1`` was set before Triton was imported (the interpreter; slow, for tests).
float32 products use 3xTF32 on NVIDIA GPUs (TF32 with ``torch.backends.cuda.matmul.allow_tf32``). The kernels
compile for sm_90 (checked without a GPU); their speed is not yet measured on a GPU.
"""

from __future__ import annotations

import functools
import os
from typing import Sequence

import torch
from torch import Tensor

__all__ = ["triton_available", "unsupported", "TritonLabelAttention", "triton_label_attention", "MAX_LABELS",
           "MAX_HEAD_DIM"]

MAX_LABELS = 128  # all channels together: the [BM, L] qa / per tiles live in registers
MAX_HEAD_DIM = 128
DTYPES = (torch.float32, torch.bfloat16, torch.float16)


@functools.lru_cache(maxsize=None)
def _triton_import_error() -> str | None:
    try:
        import triton  # noqa: F401
        import triton.language as tl
    except Exception as err:  # pragma: no cover - depends on the install
        return f"triton is not importable ({type(err).__name__}: {err}); pip install triton"
    if not hasattr(tl, "gather"):
        return "this triton has no tl.gather (triton >= 3.2 needed); pip install -U triton"
    return None


def triton_available() -> bool:
    """Whether ``triton`` (with ``tl.gather``) can be imported."""
    return _triton_import_error() is None


def interpreting() -> bool:
    """Whether Triton runs its interpreter (``TRITON_INTERPRET=1``): then the kernels take CPU tensors."""
    return os.environ.get("TRITON_INTERPRET", "0").strip() not in ("", "0")


def unsupported(device_type: str, dtype: torch.dtype, num_labels: int, head_dim: int) -> str | None:
    """Why the Triton kernel cannot take a call on ``device_type`` tensors of ``dtype`` with ``num_labels`` table rows
    (all channels) and heads of ``head_dim`` (a sentence saying what to change), or None when it can."""
    why = _triton_import_error()
    if why is not None:
        return why
    if device_type != "cuda" and not (device_type == "cpu" and interpreting()):
        return (f"the Triton label kernel runs on CUDA tensors (or CPU ones under TRITON_INTERPRET=1), "
                f"got {device_type} tensors")
    if dtype not in DTYPES:
        return f"the Triton label kernel takes float32 / bfloat16 / float16, got {dtype}"
    if num_labels > MAX_LABELS:
        return (f"the Triton label kernel holds at most {MAX_LABELS} label-table rows (all channels together), "
                f"this layer has {num_labels}")
    if head_dim > MAX_HEAD_DIM:
        return f"the Triton label kernel takes head dimensions up to {MAX_HEAD_DIM}, got {head_dim}"
    return None


def _pow2(n: int, least: int = 16) -> int:
    return max(least, 1 << max(int(n) - 1, 0).bit_length())


def _blocks(device: torch.device, dh: int, lp: int, keys_tile: bool) -> tuple[int, int, int]:
    """``(BM, BN, num_warps)`` of a kernel (``keys_tile``: the ``dk, dv`` one, whose program owns ``BN`` keys).
    ``G2GT_TRITON_BLOCK=m,n`` sets the tiles (the tests use 16,16). The CUDA choice was made from ptxas's register
    and spill counts for sm_90 at ``dh = 64`` (the ``[BM, LP]`` label tiles are what spills first), not from
    timings: no GPU was at hand."""
    env = os.environ.get("G2GT_TRITON_BLOCK", "").strip()
    if env:
        bm, bn = (int(x) for x in env.split(","))
        return bm, bn, 4
    if device.type != "cuda":
        return 16, 16, 1
    if dh > 64:
        return 32, 32, 8
    if lp <= 32:
        return (32, 64, 8) if keys_tile else (64, 32, 8)
    return 32, 64, 8


def _precision(q: Tensor) -> str:
    """``tl.dot``'s input precision: 16-bit inputs as they are; float32 as 3xTF32 on NVIDIA tensor cores (about
    float32 accuracy; IEEE float32 products spilled registers heavily), TF32 when
    ``torch.backends.cuda.matmul.allow_tf32`` is set, IEEE on other GPUs and under the interpreter."""
    if q.dtype != torch.float32:
        return "tf32"
    if q.device.type != "cuda" or torch.version.hip is not None:
        return "ieee"
    return "tf32" if torch.backends.cuda.matmul.allow_tf32 else "tf32x3"


def _mask_args(t: Tensor | None, dims: int, dummy: Tensor) -> tuple[Tensor, list[int]]:
    """A mask and its strides (0 along broadcast dims), or a dummy pointer with zero strides."""
    if t is None:
        return dummy, [0] * dims
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    return t, [0 if t.shape[i] == 1 else t.stride(i) for i in range(dims)]


def _launch(kernel, grid, ins, outs, q, k, v, d_out, labels, offsets, kpm, allowed, add, causal, offset, scale, L,
            values, keys_tile=False):
    B, H, nq, dh = q.shape
    nk = k.shape[2]
    dummy = torch.zeros(1, dtype=torch.uint8, device=q.device)
    labels = labels if labels.stride(-1) == 1 else labels.contiguous()  # the kernels read label rows with unit stride
    lab, lab_s = _mask_args(labels, 4, dummy)
    kp, kp_s = _mask_args(kpm, 2, dummy)
    al, al_s = _mask_args(allowed, 4, dummy)
    ad, ad_s = _mask_args(add, 4, dummy)
    off = torch.tensor(list(offsets), dtype=torch.int32, device=q.device)
    bm, bn, warps = _blocks(q.device, dh, _pow2(L), keys_tile)
    prec = _precision(q)
    strides = [*q.stride(), *k.stride(), *v.stride()] + ([] if d_out is None else list(d_out.stride()))
    kernel[grid(bm, bn)](
        q, k, v, *([] if d_out is None else [d_out]), *ins, lab, off, kp, al, ad, *outs,
        *strides, *lab_s, *kp_s, *al_s, *ad_s, H, nq, nk, int(offset), float(scale), L,
        C=labels.shape[1], D=dh, DP=_pow2(dh), LP=_pow2(L), BM=bm, BN=bn, VALUES=values, HAS_KPM=kpm is not None,
        HAS_AL=allowed is not None, HAS_ADD=add is not None, CAUSAL=bool(causal), PREC=prec, num_warps=warps,
    )


def forward(q: Tensor, k: Tensor, v: Tensor, a_k: Tensor, a_v: Tensor | None, labels: Tensor,
            offsets: Sequence[int], kpm: Tensor | None, allowed: Tensor | None, add: Tensor | None, causal: bool,
            offset: int, scale: float) -> tuple[Tensor, Tensor, Tensor | None]:
    """``(out [B, H, nq, dh] float32, lse [B, H, nq], per [B, H, nq, L] or None)``."""
    from . import label_triton_kernels as kern

    B, H, nq, dh = q.shape
    L = a_k.shape[0]
    LP = _pow2(L)
    qa = torch.matmul(q.float(), a_k.float().t()).mul_(scale).contiguous()  # [B, H, nq, L]
    o = q.new_empty(B, H, nq, _pow2(dh), dtype=torch.float32)
    lse = q.new_empty(B, H, nq, dtype=torch.float32)
    per = q.new_empty(B, H, nq, LP, dtype=torch.float32) if a_v is not None else lse
    _launch(kern._fwd, lambda bm, bn: (triton_cdiv(nq, bm), B * H), (qa,), (o, lse, per), q, k, v, None,
            labels, offsets, kpm, allowed, add, causal, offset, scale, L, a_v is not None)
    out = o[..., :dh]
    if a_v is None:
        return out, lse, None
    per = per[..., :L]
    return out + torch.matmul(per, a_v.float()), lse, per


def backward(d_out: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, per: Tensor | None,
             a_k: Tensor, a_v: Tensor | None, labels: Tensor, offsets: Sequence[int], kpm: Tensor | None,
             allowed: Tensor | None, add: Tensor | None, causal: bool, offset: int,
             scale: float) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor | None]:
    """``(dq, dk, dv, da_k, da_v)`` in float32 (``da_v`` None without ``a_v``)."""
    from . import label_triton_kernels as kern

    B, H, nq, dh = q.shape
    nk = k.shape[2]
    L = a_k.shape[0]
    ak = a_k.float()
    qa = torch.matmul(q.float(), ak.t()).mul_(scale).contiguous()
    g = d_out.to(q.dtype)
    delta = (d_out.float() * out.float()).sum(-1).contiguous()  # [B, H, nq]
    doa = torch.matmul(d_out.float(), a_v.float().t()).contiguous() if a_v is not None else qa
    DP = _pow2(dh)
    dk = q.new_empty(B, H, nk, DP, dtype=torch.float32)
    dv = torch.empty_like(dk)
    dq = q.new_empty(B, H, nq, DP, dtype=torch.float32)
    dqa = q.new_empty(B, H, nq, _pow2(L), dtype=torch.float32)
    common = (labels, offsets, kpm, allowed, add, causal, offset, scale, L, a_v is not None)
    _launch(kern._bwd_kv, lambda bm, bn: (triton_cdiv(nk, bn), B * H), (qa, doa, lse, delta), (dk, dv),
            q, k, v, g, *common, keys_tile=True)
    _launch(kern._bwd_q, lambda bm, bn: (triton_cdiv(nq, bm), B * H), (qa, doa, lse, delta), (dq, dqa),
            q, k, v, g, *common)
    dqa = dqa[..., :L]
    dq = dq[..., :dh].add_(torch.matmul(dqa, ak), alpha=scale)
    dak = (dqa.reshape(-1, L).t() @ q.float().reshape(-1, dh)).mul_(scale)
    dav = None if per is None else per.reshape(-1, L).t() @ d_out.float().reshape(-1, dh)
    return dq, dk[..., :dh], dv[..., :dh], dak, dav


def triton_cdiv(a: int, b: int) -> int:
    return max(1, -(-a // b))


class TritonLabelAttention(torch.autograd.Function):
    """``apply(q, k, v, a_k, a_v, labels, kpm, allowed, add, offsets, causal, offset, scale)`` -> ``[B, H, nq, dh]``
    in q's dtype, as :class:`g2gt.nn.label_kernels.LabelAttentionFunction` (same arguments and maths) but in the
    Triton kernels. Keeps ``q, k, v``, the output, ``lse [B, H, nq]``, ``per [B, H, nq, L]`` (value labels), the
    labels and masks for backward; gradients to ``q, k, v, a_k, a_v`` (float32 arithmetic, cast to each input's
    dtype)."""

    @staticmethod
    def forward(ctx, q, k, v, a_k, a_v, labels, kpm, allowed, add, offsets, causal, offset, scale):  # type: ignore[override]
        dtype = q.dtype
        # Triton's interpreter multiplies bfloat16 matrices wrongly (numpy has no bfloat16: tl.dot sees the raw bits),
        # so on CPU tensors (the interpreter) bfloat16 inputs are widened to float32; CUDA reads them as they are
        kdt = torch.float32 if dtype == torch.bfloat16 and q.device.type == "cpu" else dtype
        q, k, v = q.to(kdt), k.to(kdt), v.to(kdt)
        with torch.autocast(q.device.type, enabled=False):
            out, lse, per = forward(q, k, v, a_k, a_v, labels, offsets, kpm, allowed, add, causal, offset, scale)
        out = out.to(dtype)
        ctx.save_for_backward(q, k, v, a_k, a_v, out, lse, per, labels, kpm, allowed, add)
        ctx.dtype = dtype
        ctx.args = (tuple(int(o) for o in offsets), bool(causal), int(offset), float(scale))
        return out

    @staticmethod
    def backward(ctx, d_out):  # type: ignore[override]
        q, k, v, a_k, a_v, out, lse, per, labels, kpm, allowed, add = ctx.saved_tensors
        offsets, causal, offset, scale = ctx.args
        with torch.autocast(d_out.device.type, enabled=False):
            dq, dk, dv, dak, dav = backward(d_out, q, k, v, out, lse, per, a_k, a_v, labels, offsets, kpm, allowed,
                                            add, causal, offset, scale)
        nf = ctx.needs_input_grad
        return (dq.to(ctx.dtype) if nf[0] else None, dk.to(ctx.dtype) if nf[1] else None,
                dv.to(ctx.dtype) if nf[2] else None, dak.to(a_k.dtype) if nf[3] else None,
                dav.to(a_v.dtype) if a_v is not None and nf[4] else None,
                None, None, None, None, None, None, None, None)


def triton_label_attention(q: Tensor, k: Tensor, v: Tensor, a_k: Tensor, a_v: Tensor | None, labels: Tensor,
                           offsets: Sequence[int], kpm: Tensor | None = None, allowed: Tensor | None = None,
                           add: Tensor | None = None, causal: bool = False, offset: int = 0,
                           scale: float | None = None) -> Tensor:
    """Label attention in the Triton kernels (see the module docstring); raises a ``ValueError`` naming the limit
    when the call is outside them (:func:`unsupported`)."""
    why = unsupported(q.device.type, q.dtype, a_k.shape[0], q.shape[-1])
    if why is not None:
        raise ValueError(why)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return TritonLabelAttention.apply(q, k, v, a_k, a_v, labels, kpm, allowed, add, list(offsets), causal, offset,
                                      scale)
