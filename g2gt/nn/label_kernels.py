"""The label-attention kernels behind :class:`g2gt.nn.GraphAttention` (see its module docstring).

* :class:`LabelAttentionFunction`: an autograd Function with a hand-written backward. The keys-only
  case runs the fused CPU flash kernel (:func:`g2gt._compat.cpu_flash_attention`) forward with the
  label bias as a plain mask and rebuilds the probabilities once in backward.
* :func:`flex_label_attention`: FlexAttention with the label bias read inside ``score_mod``.
* :func:`gather_sum` / :func:`scatter_sum`: the key term's gather and the value term's scatter by label.
* :func:`label_table_sizes` / :func:`label_offsets`: the concatenated per-channel label tables;
  ``_mask_terms`` / ``_rows``: ``attn_mask`` handling and query-row slices of masks.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from .. import _compat

__all__ = ["LabelAttentionFunction", "flex_attention_available", "flex_label_attention", "gather_sum", "scatter_sum",
           "label_table_sizes", "label_offsets"]


def flex_attention_available(device: torch.device | str = "cpu") -> bool:
    """Whether ``torch.nn.attention.flex_attention`` exists in this torch build."""
    try:
        from torch.nn.attention.flex_attention import flex_attention  # noqa: F401
    except Exception:
        return False
    return True


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


class LabelAttentionFunction(torch.autograd.Function):
    """Fused label attention with a hand-written backward (no ``[B, H, n, n]`` autograd chain).

    Inputs: ``q [B, H, nq, dh]``, ``k, v [B, H, nk, dh]``, ``qa = scale * q @ a^K.T``
    ``[B, H, nq, L]``, ``a_v [L, dh]`` or None, ``allowed [B|1, H|1, nq, nk]`` bool or None
    (no row may be all False), ``add [B|1, H|1, nq, nk]`` a finite additive mask (no gradient) or
    None, ``scale``, ``flash`` (keys-only: run the fused CPU flash kernel of
    :func:`g2gt._compat.cpu_flash_attention` forward and recompute the probabilities in backward),
    then one ``[B|1, 1, nq, nk]`` long index per label channel (offsets already added).

    Forward: ``S = scale * q k^T + sum_c qa[.., l^c_ij] + add`` (``-inf`` where not allowed),
    ``P = softmax(S)``, ``out = P v + (sum_c scatter_l P) a_v``.

    Backward, with ``dP = dO v^T + sum_c (dO a_v^T)[.., l^c_ij]`` and
    ``D_i = dO_i . out_i``: ``dS = P * (dP - D)``, ``dq = scale dS k``, ``dk = scale dS^T q``,
    ``dv = P^T dO``, ``dqa = sum_c scatter_l dS``, ``da_v = (scatter_l P)^T dO``. The gradient of the
    additive bias is exactly ``dS``; unlike SDPA with a differentiable mask, nothing
    forces an unfused math fallback.
    """

    @staticmethod
    def forward(ctx, q, k, v, qa, a_v, allowed, add, scale, flash, *idx):  # type: ignore[override]
        dt = q.dtype
        ctx.qa_dtype, ctx.qa_L, ctx.kv_dtypes = qa.dtype, qa.shape[-1], (k.dtype, v.dtype)
        with torch.autocast(q.device.type, enabled=False):
            q, k, v, qa = q.contiguous(), k.to(dt).contiguous(), v.to(dt).contiguous(), qa.to(dt)
            av = None if a_v is None else a_v.to(dt)
            B, H, nq, dh = q.shape
            nk = k.shape[2]
            shape = (B, H, nq, nk)
            s = gather_sum(qa, idx, shape)  # [B, H, nq, nk], fresh
            if add is not None:
                s.add_(add.to(dt))
            if allowed is not None:
                s.masked_fill_(~allowed, float("-inf"))
            kernel = _compat.cpu_flash_attention() if flash and av is None and q.device.type == "cpu" else None
            flash = kernel is not None
            if flash:
                out, lse = kernel(q, k, v, s, scale)
                ctx.save_for_backward(q, k, v, s, out, lse, None, *idx)  # s: the additive mask given to the kernel
            else:
                s.view(B * H, nq, nk).baddbmm_(
                    q.reshape(B * H, nq, dh), k.reshape(B * H, nk, dh).transpose(1, 2), alpha=scale
                )
                p = torch.softmax(s, dim=-1)
                del s
                out = torch.matmul(p, v)
                per = None
                if av is not None:
                    per = scatter_sum(p, idx, av.shape[0])
                    out = out + torch.matmul(per, av)
                ctx.save_for_backward(q, k, v, p, out, per, av, *idx)
        ctx.flash = flash
        ctx.scale = scale
        ctx.has_av = a_v is not None
        ctx.av_dtype = None if a_v is None else a_v.dtype
        return out

    @staticmethod
    def backward(ctx, d_out):  # type: ignore[override]
        scale = ctx.scale
        with torch.autocast(d_out.device.type, enabled=False):
            if ctx.flash:
                q, k, v, mask, out, lse, _, *idx = ctx.saved_tensors
                B, H, nq, dh = q.shape
                nk = k.shape[2]
                q3, k3t = q.view(B * H, nq, dh), k.view(B * H, nk, dh).transpose(1, 2)
                p = torch.baddbmm(mask.view(B * H, nq, nk), q3, k3t, alpha=scale).view(B, H, nq, nk)
                p.sub_(lse.unsqueeze(-1)).exp_()
                per = av = None
            else:
                q, k, v, p, out, per, av, *idx = ctx.saved_tensors
                B, H, nq, dh = q.shape
                nk = k.shape[2]
            d_out = d_out.to(q.dtype)
            dp = torch.matmul(d_out, v.transpose(-1, -2))  # [B, H, nq, nk]
            if av is not None:
                dp.add_(gather_sum(torch.matmul(d_out, av.t()), idx, (B, H, nq, nk)))
            delta = (d_out * out).sum(-1, keepdim=True)
            ds = dp.sub_(delta).mul_(p)  # dS, in place
            nf = ctx.needs_input_grad
            dq = torch.matmul(ds, k).mul_(scale) if nf[0] else None
            dk = torch.matmul(ds.transpose(-1, -2), q).mul_(scale) if nf[1] else None
            dv = torch.matmul(p.transpose(-1, -2), d_out) if nf[2] else None
            dqa = scatter_sum(ds, idx, ctx.qa_L) if nf[3] else None
            dav = None
            if ctx.has_av and nf[4]:
                L = av.shape[0]
                dav = (per.reshape(-1, L).t() @ d_out.reshape(-1, dh)).to(ctx.av_dtype)
        if dk is not None:
            dk = dk.to(ctx.kv_dtypes[0])
        if dv is not None:
            dv = dv.to(ctx.kv_dtypes[1])
        if dqa is not None:
            dqa = dqa.to(ctx.qa_dtype)
        return (dq, dk, dv, dqa, dav, None, None, None, None, *([None] * len(idx)))


_COMPILED_FLEX: dict[str, object] = {}


def _flex_kernel(device_type: str):
    """``flex_attention``, compiled once per process on CUDA (eager elsewhere or if compiling fails)."""
    import torch.nn.attention.flex_attention as fa

    if device_type != "cuda":
        return fa.flex_attention
    if "cuda" not in _COMPILED_FLEX:
        try:
            _COMPILED_FLEX["cuda"] = torch.compile(fa.flex_attention, dynamic=False)
        except Exception:  # pragma: no cover - toolchain dependent
            _COMPILED_FLEX["cuda"] = fa.flex_attention
    return _COMPILED_FLEX["cuda"]


def flex_label_attention(
    q: Tensor, k: Tensor, v: Tensor, qa: Tensor | None, idx: Sequence[Tensor], allowed: Tensor | None,
    add: Tensor | None, scale: float,
) -> Tensor:
    """FlexAttention with a ``score_mod`` that adds ``sum_c qa[b, h, i, l^c_ij]`` (the scaled label key
    term, ``qa [B, H, nq, L]``) and a float mask ``add`` inside the kernel.

    ``allowed`` (``-inf`` where False) and ``add`` are ``[B|1, H|1, nq|1, nk]``; label indices ``idx``
    ``[B|1, 1, nq, nk]`` per channel; tensors with batch or head size 1 broadcast. On CUDA the kernel is
    ``torch.compile``d (eager FlexAttention materialises the scores); elsewhere it runs eagerly.
    """
    flex_attention = _flex_kernel(q.device.type)

    B, H, nq, _ = q.shape
    nk = k.shape[2]
    lab = torch.cat(list(idx), 1) if idx else None  # [B', C, nq, nk]
    n_ch = 0 if lab is None else lab.shape[1]
    add = None if add is None else add.to(q.dtype).expand(add.shape[0], add.shape[1], nq, nk)
    allowed = None if allowed is None else allowed.expand(allowed.shape[0], allowed.shape[1], nq, nk)

    def pick(t: Tensor | None, dim: int, size: int):  # index b (or h) into a dim that may be 1 (broadcast)
        return (lambda i: i) if t is None or t.shape[dim] == size else (lambda i: i * 0)

    bsel, absel, ahsel = pick(lab, 0, B), pick(allowed, 0, B), pick(allowed, 1, H)
    dbsel, dhsel = pick(add, 0, B), pick(add, 1, H)

    def score_mod(score, b, h, q_idx, kv_idx):
        for c in range(n_ch):
            score = score + qa[b, h, q_idx, lab[bsel(b), c, q_idx, kv_idx]]
        if add is not None:
            score = score + add[dbsel(b), dhsel(h), q_idx, kv_idx]
        if allowed is not None:
            score = torch.where(allowed[absel(b), ahsel(h), q_idx, kv_idx], score, -float("inf"))
        return score

    return flex_attention(q, k, v, score_mod=score_mod, scale=scale)
