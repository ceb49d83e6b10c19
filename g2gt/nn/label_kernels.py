"""The label-attention pieces behind :class:`g2gt.nn.GraphAttention` (see its module docstring).

* :class:`LabelAttentionFunction`: label attention with a blocked forward and backward (nothing
  ``[B, H, n, n]`` kept for backward, peak memory linear in ``n``): the compiled CPU kernel of
  :mod:`g2gt.nn.label_cpp`, or the torch blocks of :mod:`g2gt.nn.label_blocked`.
* :func:`compact_labels`: labels in the small integer dtype the kernels read and autograd keeps.
* :func:`gather_sum` / :func:`scatter_sum`: the key term's gather and the value term's scatter by label,
  for the unfused autograd path (dropout, attention weights).
* :func:`choose_label_backend`: which label path a call takes (Triton, FlexAttention or the blocked kernels) and
  why; :func:`label_attention` runs it.
* :func:`label_table_sizes` / :func:`label_offsets`: the concatenated per-channel label tables;
  ``_mask_terms`` / ``_rows``: ``attn_mask`` handling and query-row slices of masks.
"""

from __future__ import annotations

from typing import Sequence

import os
import warnings

import torch
from torch import Tensor

from ..core import runtime
from ..core._compat import device_assert
from . import label_blocked, label_cpp, label_triton
from .label_flex import flex_attention_available, flex_label_attention, flex_trains_label_bias

__all__ = ["LabelAttentionFunction", "choose_label_backend", "label_attention", "cuda_label_backend", "check_labels", "compact_labels", "flex_attention_available", "flex_label_attention",
           "gather_sum", "scatter_sum", "label_table_sizes", "label_offsets"]


def label_table_sizes(num_labels: int | Sequence[int] | None) -> list[int]:
    """Per-channel label-table sizes: ``None`` / ``0`` -> ``[]``, ``L`` -> ``[L]``, a sequence as is."""
    if num_labels is None:
        return []
    if isinstance(num_labels, int):
        return [num_labels] if num_labels > 0 else []
    return [int(s) for s in num_labels]


def label_offsets(sizes: Sequence[int]) -> Tensor:
    """Start row of each channel in the concatenated label tables (``[C]`` long)."""
    starts = [0]
    for size in sizes[:-1]:
        starts.append(starts[-1] + size)
    return torch.tensor(starts if sizes else [], dtype=torch.long)


def _mask_terms(
    attn_mask: Tensor | None, key_padding_mask: Tensor | None, B: int, H: int, nq: int, nk: int
) -> tuple[Tensor | None, Tensor | None]:
    """``attn_mask`` / a float ``key_padding_mask`` -> ``(allowed, add)``, both ``[B|1, H|1, nq, nk]`` or None.

    ``attn_mask`` as :class:`torch.nn.MultiheadAttention` takes it: ``[nq, nk]``, ``[B*H, nq, nk]``
    (batch-major: row ``b*H + h``) or ``[B|1, H|1, nq, nk]``; bool (True = may *not* attend) or
    float (added to the scores). A float ``key_padding_mask [B, nk]`` is added the same way. ``-inf``
    entries of a float mask move into ``allowed`` so that ``add`` stays finite (fully masked rows
    then give zeros, never NaN).
    """
    allowed = add = None
    for name, m in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask)):
        if m is None or (name == "key_padding_mask" and not m.is_floating_point()):
            continue
        if name == "key_padding_mask":
            m = m[:, None, None, :]
        elif m.dim() == 2 and m.shape == (nq, nk):
            m = m[None, None]
        elif m.dim() == 3 and m.shape == (B * H, nq, nk):
            m = m.view(B, H, nq, nk)
        elif not (m.dim() == 4 and m.shape[0] in (1, B) and m.shape[1] in (1, H) and m.shape[2:] == (nq, nk)):
            raise ValueError(
                f"attn_mask must be [nq={nq}, nk={nk}], [B*H={B * H}, nq, nk] or [B|1, H|1, nq, nk], "
                f"got shape {tuple(m.shape)}"
            )
        if m.dtype == torch.bool:
            keep = ~m
        elif m.is_floating_point():
            neg = torch.isneginf(m)
            keep = ~neg if bool(neg.any()) else None
            m = m if keep is None else m.masked_fill(neg, 0.0)
            add = m if add is None else add + m
        else:
            raise TypeError(
                f"{name} must be bool (True = may not attend) or floating (added to the scores), got {m.dtype}"
            )
        if keep is not None:
            allowed = keep if allowed is None else allowed & keep
    return allowed, add


def _rows(mask: Tensor | None, start: int, count: int, nq: int) -> Tensor | None:
    """Query rows ``start : start + count`` of a ``[B|1, H|1, nq|1, nk]`` mask (a broadcast row stays)."""
    return mask if mask is None or mask.shape[2] != nq else mask[:, :, start : start + count]


def gather_sum(src: Tensor, idx: Sequence[Tensor], shape: tuple[int, int, int, int]) -> Tensor:
    """``sum_c src[b, h, i, idx_c[b, 0, i, j]]`` -> a fresh ``[B, H, nq, nk]`` tensor."""
    out = src.gather(-1, idx[0].expand(shape))
    for ix in idx[1:]:
        out.add_(src.gather(-1, ix.expand(shape)))
    return out


def scatter_sum(src: Tensor, idx: Sequence[Tensor], num_labels: int) -> Tensor:
    """``out[b, h, i, l] = sum_c sum_j [idx_c[b, 0, i, j] = l] src[b, h, i, j]`` -> ``[B, H, nq, L]``."""
    B, H, nq, nk = src.shape
    out = src.new_zeros(B, H, nq, num_labels)
    for ix in idx:
        out.scatter_add_(-1, ix.expand(B, H, nq, nk), src)
    return out


def compact_labels(labels: Tensor, sizes: Sequence[int]) -> Tensor:
    """``labels [B', C, nq, nk]`` (channel-local ids, validated) in the smallest of uint8 / int16 / int32 that
    holds every channel's ids, with unit stride along ``nk``: what the label kernels read (and what autograd
    keeps for backward). No copy when the tensor already qualifies."""
    top = max(sizes, default=1)
    dtype = torch.uint8 if top <= 256 else torch.int16 if top <= 32768 else torch.int32
    if labels.dtype not in (torch.uint8, torch.int16, torch.int32) or (
        labels.dtype != torch.int32 and top > (256 if labels.dtype == torch.uint8 else 32768)
    ):
        labels = labels.to(dtype)
    return labels if labels.stride(-1) == 1 else labels.contiguous()


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


class LabelAttentionFunction(torch.autograd.Function):
    r"""Label attention with a blocked forward and backward: nothing ``[B, H, nq, nk]`` is kept.

    ``apply(q, k, v, a_k, a_v, labels, kpm, allowed, add, offsets, causal, offset, scale)`` with
    ``q [B, H, nq, dh]``, ``k, v [B, H, nk, dh]``, label tables ``a_k [L, dh]`` and ``a_v [L, dh]`` or None,
    ``labels [B|1, C, nq, nk]`` channel-local ids (see :func:`compact_labels`), ``offsets`` the first table
    row of each channel, ``kpm [B|1, nk]`` bool (True = padding) or None, ``allowed [B|1, H|1, nq|1, nk]`` bool
    (True = may attend) or None, ``add`` like ``allowed``, a finite float mask without gradient, or None;
    ``causal``: query ``i`` sees keys ``j <= i + offset``.

    .. math::

        S_{ij} = s\,q_i\cdot k_j + \sum_c qa_{i,\,o_c + l^c_{ij}} + m_{ij},\quad qa = s\,q\,a_K^\top,\quad
        o_i = \sum_j P_{ij} (v_j + \sum_c a^V_{o_c + l^c_{ij}}),\quad P = \mathrm{softmax}_j(S).

    Forward keeps ``q, k, v, out, lse`` (``[B, H, nq]``), the compact labels and the masks; the backward
    rebuilds ``qa`` (one small product) and, block by block, ``P`` and ``dS``, giving ``dq, dk, dv`` and the
    table gradients ``da_K = s\, dqa^T q`` (``dqa = scatter_l dS``) and ``da_V = per^T dO``
    (``per = scatter_l P``). A query with no visible key returns zeros and passes no gradient.

    On CPU the work runs in the compiled kernel of :mod:`g2gt.nn.label_cpp`; elsewhere (or without a
    compiler, or with ``G2GT_LABEL_KERNEL=torch``) in the torch blocks of :mod:`g2gt.nn.label_blocked`.
    There is no size threshold between the two: measured down to ``n = 8`` (the MWT expander's shapes, one
    thread, forward + backward) the compiled kernel was the faster at every size (README, "GraphAttention:
    speed and memory"). float16 / bfloat16 inputs (autocast) are computed in float32 and the output is
    returned in q's dtype; at inference (no input needs a gradient) the compiled kernel reads them as they are,
    widening each row as a block loads it, instead of working on float32 copies.
    """

    @staticmethod
    def forward(ctx, q, k, v, a_k, a_v, labels, kpm, allowed, add, offsets, causal, offset, scale):  # type: ignore[override]
        cdt = _compute_dtype(q.dtype)
        args = (labels, offsets, kpm, allowed, add, causal, offset, scale)
        with torch.autocast(q.device.type, enabled=False):
            ops = label_cpp.cpp_kernels() if q.device.type == "cpu" else None
            no_grad = torch.is_inference_mode_enabled() or not any(ctx.needs_input_grad[:5])
            if ops is not None and cdt != q.dtype and no_grad:
                # inference in bfloat16 / float16: the kernel widens q, k, v row by row as it reads them (no
                # float32 copies) and writes q's dtype; the same float32 arithmetic as below
                out, lse = label_cpp.forward(ops, q, k, v, a_k.to(cdt), None if a_v is None else a_v.to(cdt), *args)
                ctx.use_cpp = True
                return out
            qc, kc, vc, ak = q.to(cdt), k.to(cdt), v.to(cdt), a_k.to(cdt)
            av = None if a_v is None else a_v.to(cdt)
            if ops is not None:
                out, lse = label_cpp.forward(ops, qc, kc, vc, ak, av, *args)
            else:
                out, lse = label_blocked.forward(qc, kc, vc, ak, av, *args)
        ctx.save_for_backward(q, k, v, a_k, a_v, out, lse, labels, kpm, allowed, add)
        ctx.args = (tuple(offsets), causal, offset, scale)
        ctx.use_cpp = ops is not None
        return out.to(q.dtype)

    @staticmethod
    def backward(ctx, d_out):  # type: ignore[override]
        q, k, v, a_k, a_v, out, lse, labels, kpm, allowed, add = ctx.saved_tensors
        offsets, causal, offset, scale = ctx.args
        cdt = out.dtype
        args = (labels, offsets, kpm, allowed, add, causal, offset, scale)
        with torch.autocast(d_out.device.type, enabled=False):
            qc, kc, vc, ak, g = q.to(cdt), k.to(cdt), v.to(cdt), a_k.to(cdt), d_out.to(cdt)
            av = None if a_v is None else a_v.to(cdt)
            if ctx.use_cpp:
                dq, dk, dv, dak, dav = label_cpp.backward(label_cpp.cpp_kernels(), g, qc, kc, vc, out, lse, ak, av,
                                                          *args)
            else:
                dq, dk, dv, dak, dav = label_blocked.backward(g, qc, kc, vc, out, lse, ak, av, *args)
        nf = ctx.needs_input_grad
        return (
            dq.to(q.dtype) if nf[0] else None,
            dk.to(k.dtype) if nf[1] else None,
            dv.to(v.dtype) if nf[2] else None,
            dak.to(a_k.dtype) if nf[3] else None,
            dav.to(a_v.dtype) if a_v is not None and nf[4] else None,
            None, None, None, None, None, None, None, None,
        )


def check_labels(labels: Tensor, sizes: Sequence[int], multi_channel: bool, B: int, nq: int, nk: int) -> Tensor:
    """Validated labels ``[B|1, C, nq, nk]`` (a 3-d ``[B|1, nq, nk]`` tensor is channel 0 of a single-channel
    layer), each channel's ids in ``[0, sizes[c])``; any integer dtype, not copied."""
    C = len(sizes)
    if labels.dim() == 3:
        if multi_channel and C != 1:
            raise ValueError(f"labels must be [B, C, nq, nk] with C={C} channels (num_labels={list(sizes)}), "
                             f"got shape {tuple(labels.shape)}")
        labels = labels.unsqueeze(1)
    if labels.dim() != 4 or labels.shape[1] != C or labels.shape[0] not in (1, B):
        raise ValueError(f"labels of shape {tuple(labels.shape)} do not match {C} channel(s) "
                         f"[B={B} or 1, C={C}, nq={nq}, nk={nk}]")
    if labels.shape[-2:] != (nq, nk):
        raise ValueError(f"labels cover {tuple(labels.shape[-2:])} pairs but attention is ({nq}, {nk})")
    if labels.dtype.is_floating_point or labels.dtype == torch.bool:
        raise TypeError(f"labels must be an integer tensor, got {labels.dtype}")
    if labels.numel() and not runtime.host_reads_are_free(labels):
        # checked in the device's queue: reading the range on the host would make it wait for the GPU every call
        ok = torch.stack([(lo >= 0) & (hi < size) for c, size in enumerate(sizes)
                          for lo, hi in [torch.aminmax(labels[:, c])]]).all()
        if device_assert(ok, f"labels out of range for GraphAttention's num_labels={list(sizes)} (ids of channel "
                             "c must lie in 0..num_labels[c]-1)"):
            return labels
    if labels.numel():
        for c, size in enumerate(sizes):  # one pass over each channel (aminmax), not one for min and one for max
            lo, hi = (int(t) for t in torch.aminmax(labels[:, c]))
            if lo < 0 or hi >= size:
                raise ValueError(
                    f"labels of channel {c} span [{lo}, {hi}] but GraphAttention was built with "
                    f"num_labels={size} for it (valid ids: 0..{size - 1}); raise num_labels or fix the label vocabulary"
                )
    return labels


CUDA_BACKENDS = ("triton", "flex", "blocked")
_warned: set[str] = set()


def cuda_label_backend() -> str:
    """The first label path tried on CUDA by the automatic choice: ``$G2GT_CUDA_LABEL_BACKEND`` (``triton``, the
    default, ``flex`` or ``blocked``), read at each call."""
    choice = os.environ.get("G2GT_CUDA_LABEL_BACKEND", "triton").strip().lower() or "triton"
    if choice not in CUDA_BACKENDS:
        raise ValueError(f"G2GT_CUDA_LABEL_BACKEND must be one of {', '.join(CUDA_BACKENDS)}, got {choice!r}")
    return choice


def choose_label_backend(backend: str, device_type: str, dtype: torch.dtype, values: bool, wants_grad: bool,
                         num_labels: int, head_dim: int) -> tuple[str, str]:
    """``(path, why)``: the label path of a :class:`~g2gt.nn.GraphAttention` call, ``"triton"``
    (:mod:`g2gt.nn.label_triton`), ``"flex"`` (:mod:`g2gt.nn.label_flex`) or ``"blocked"``
    (:class:`LabelAttentionFunction`: the C++ kernel on CPU, torch blocks elsewhere).

    * ``backend="triton"``: Triton, or a ``ValueError`` saying why it cannot run (an explicit request).
    * ``backend="flex"``: FlexAttention where it applies (keys-only; on CPU for inference only), else as the default.
    * ``backend="sdpa"`` (the default, automatic): on CPU the blocked kernels; on CUDA the first of Triton ->
      FlexAttention -> blocked that applies, starting from ``$G2GT_CUDA_LABEL_BACKEND`` (default ``triton``).
      Triton applies when it is importable and the call is within its limits (``num_labels`` <=
      ``label_triton.MAX_LABELS`` rows over all channels, ``head_dim`` <= ``MAX_HEAD_DIM``, float32 / bfloat16 /
      float16); when it is passed over on CUDA the reason is warned once. FlexAttention applies keys-only, and with
      gradients only where it differentiates the label bias (torch >= 2.6).
    """
    if backend == "triton":
        why = label_triton.unsupported(device_type, dtype, num_labels, head_dim)
        if why is not None:
            raise ValueError(f"GraphAttention(backend='triton'): {why} (backend='sdpa' chooses a path by itself)")
        return "triton", "backend='triton'"
    flex_ok = not values and flex_attention_available() and (
        not wants_grad or (device_type == "cuda" and flex_trains_label_bias()))
    if backend == "flex" and flex_ok:
        return "flex", "backend='flex'"
    if device_type != "cuda":
        return "blocked", f"{device_type}: the blocked label kernels"
    first = cuda_label_backend()
    if first == "triton":
        why = label_triton.unsupported(device_type, dtype, num_labels, head_dim)
        if why is None:
            return "triton", "CUDA: the Triton kernel"
        if why not in _warned:
            _warned.add(why)
            warnings.warn(f"g2gt: label attention on CUDA without the Triton kernel: {why}", RuntimeWarning,
                          stacklevel=4)
    if first != "blocked" and flex_ok:
        return "flex", "CUDA: FlexAttention (keys-only)"
    return "blocked", "CUDA: the blocked label kernels in torch ops"


def label_attention(path: str, q: Tensor, k: Tensor, v: Tensor, a_k: Tensor, a_v: Tensor | None, labels: Tensor,
                    kpm: Tensor | None, allowed: Tensor | None, add: Tensor | None, offsets: Sequence[int],
                    causal: bool, offset: int, scale: float) -> Tensor:
    """Label attention ``[B, H, nq, dh]`` on the path :func:`choose_label_backend` named (arguments as
    :class:`LabelAttentionFunction`'s)."""
    if path == "triton":
        return label_triton.TritonLabelAttention.apply(q, k, v, a_k, a_v, labels, kpm, allowed, add, offsets, causal,
                                                       offset, scale)
    if path == "flex":
        return flex_label_attention(q, k, v, a_k, labels, offsets, kpm, allowed, add, causal, offset, scale)
    return LabelAttentionFunction.apply(q, k, v, a_k, a_v, labels, kpm, allowed, add, offsets, causal, offset, scale)
