r"""Multi-head attention whose scores see a label for every (query, key) pair.

For query node :math:`i`, key node :math:`j`, head :math:`h` and label channels
:math:`c = 1..C` with integer labels :math:`l^c_{ij}` (0 = no relation):

.. math::

    e_{ij} = \frac{q_i \cdot \big(k_j + \sum_c a^{K,c}_{l^c_{ij}}\big)}{\sqrt{d_h}},
    \qquad
    \alpha_{ij} = \operatorname{softmax}_j(e_{ij} + m_{ij}),

.. math::

    o_i = \sum_j \alpha_{ij}\,\big(v_j + \sum_c a^{V,c}_{l^c_{ij}}\big)
    \quad\text{(value term optional)},

with :math:`q = xW_Q, k = x'W_K, v = x'W_V` per head (:math:`x' = x` for
self-attention, the encoder memory for cross-attention), label tables
:math:`a^{K,c}, a^{V,c} \in \mathbb{R}^{L_c \times d_h}` shared across heads
(Shaw et al. 2018), and :math:`m_{ij} \in \{0, -\infty\}` from padding and the
causal mask. The heads are concatenated and projected by :math:`W_O`.

No ``[B, n, n, d_h]`` tensor is built. The key term is a gather of
``q @ a^K.T`` (``[B, H, n, L]``) by the labels, i.e. an additive ``[B, H, n, n]``
bias on the scores. The value term scatters the attention probabilities by
label into ``[B, H, n, L]`` and multiplies by ``a^V``. Rows whose keys are all
masked return zeros (never NaN).

Execution paths (all compute the same function; the tests check each against a
naive float64 reference):

* labels, no dropout, no ``need_weights``: :class:`_LabelAttention`, an autograd
  Function with a hand-written backward. SDPA with a differentiable float mask
  silently falls back to the unfused math kernel on CPU; instead the forward of
  the keys-only case runs the fused CPU flash kernel with the bias as a plain
  (non-differentiable) mask, keeps the mask and the log-sum-exp, and the backward
  rebuilds the probabilities once to get ``dS`` -- the bias gradient -- and
  scatters it by label. With value labels the probabilities are kept from the
  forward. On CUDA the keys-only case uses SDPA directly (its memory-efficient
  kernel differentiates the mask).
* no labels: plain SDPA (``is_causal`` when possible, else a boolean mask).
* dropout or ``need_weights``: straightforward autograd ops.
* ``backend="flex"`` (keys-only): FlexAttention with a ``score_mod`` that reads the
  bias inside the kernel; on CPU, where FlexAttention has no backward, calls that
  need gradients use the SDPA path.

Under autocast, q/k/v come out of the projections in the autocast dtype and the
score bias and mask are built in q's dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["GraphAttention", "KVCache", "flex_attention_available"]


@dataclass
class KVCache:
    """Projected keys / values kept between incremental decoding steps.

    ``k``, ``v``: ``[B, H, P, d_head]``. For cross-attention the cache is filled
    once from the memory and reused (``static=True``).
    """

    k: Tensor | None = None
    v: Tensor | None = None
    static: bool = False

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    def reorder(self, index: Tensor) -> None:
        """Select batch rows (beam search)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


def flex_attention_available(device: torch.device | str = "cpu") -> bool:
    """Whether ``torch.nn.attention.flex_attention`` exists in this torch build."""
    try:
        from torch.nn.attention.flex_attention import flex_attention  # noqa: F401
    except Exception:
        return False
    return True


def _gather_sum(src: Tensor, idx: Sequence[Tensor], shape: tuple[int, int, int, int]) -> Tensor:
    """``sum_c src[b, h, i, idx_c[b, 0, i, j]]`` -> a fresh ``[B, H, nq, nk]`` tensor."""
    out = src.gather(-1, idx[0].expand(shape))
    for ix in idx[1:]:
        out.add_(src.gather(-1, ix.expand(shape)))
    return out


def _scatter_sum(src: Tensor, idx: Sequence[Tensor], num_labels: int) -> Tensor:
    """``out[b, h, i, l] = sum_c sum_j [idx_c[b, 0, i, j] = l] src[b, h, i, j]`` -> ``[B, H, nq, L]``."""
    B, H, nq, nk = src.shape
    out = src.new_zeros(B, H, nq, num_labels)
    for ix in idx:
        out.scatter_add_(-1, ix.expand(B, H, nq, nk), src)
    return out


_SAVE_MASK = True
_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


class _LabelAttention(torch.autograd.Function):
    """Fused label attention with a hand-written backward (no ``[B, H, n, n]`` autograd chain).

    Inputs: ``q [B, H, nq, dh]``, ``k, v [B, H, nk, dh]``, ``qa = scale * q @ a^K.T``
    ``[B, H, nq, L]``, ``a_v [L, dh]`` or None, ``allowed [B|1, 1, nq, nk]`` bool or None
    (no row may be all False), ``scale``, ``flash`` (keys-only: run the fused CPU flash
    kernel forward and recompute the probabilities in backward), then one
    ``[B|1, 1, nq, nk]`` long index per label channel (offsets already added).

    Forward: ``S = scale * q k^T + sum_c qa[.., l^c_ij]`` (``-inf`` where not allowed),
    ``P = softmax(S)``, ``out = P v + (sum_c scatter_l P) a_v``.

    Backward, with ``dP = dO v^T + sum_c (dO a_v^T)[.., l^c_ij]`` and
    ``D_i = dO_i . out_i``: ``dS = P * (dP - D)``, ``dq = scale dS k``, ``dk = scale dS^T q``,
    ``dv = P^T dO``, ``dqa = sum_c scatter_l dS``, ``da_v = (scatter_l P)^T dO``. The gradient of the
    additive bias is exactly ``dS``; unlike SDPA with a differentiable mask, nothing
    forces an unfused math fallback.
    """

    @staticmethod
    def forward(ctx, q, k, v, qa, a_v, allowed, scale, flash, *idx):  # type: ignore[override]
        dt = q.dtype
        ctx.qa_dtype, ctx.qa_L, ctx.kv_dtypes = qa.dtype, qa.shape[-1], (k.dtype, v.dtype)
        with torch.autocast(q.device.type, enabled=False):
            q, k, v, qa = q.contiguous(), k.to(dt).contiguous(), v.to(dt).contiguous(), qa.to(dt)
            av = None if a_v is None else a_v.to(dt)
            B, H, nq, dh = q.shape
            nk = k.shape[2]
            shape = (B, H, nq, nk)
            s = _gather_sum(qa, idx, shape)  # [B, H, nq, nk], fresh
            if allowed is not None:
                s.masked_fill_(~allowed, float("-inf"))
            flash = bool(flash) and av is None and _FLASH_CPU is not None and q.device.type == "cpu"
            if flash:
                out, lse = _FLASH_CPU(q, k, v, 0.0, False, attn_mask=s, scale=scale)
                ctx.saved_mask = _SAVE_MASK
                if _SAVE_MASK:
                    ctx.save_for_backward(q, k, v, s, out, lse, None, *idx)
                else:
                    del s
                    ctx.save_for_backward(q, k, v, qa, out, lse, allowed, *idx)
                per = None
            else:
                s.view(B * H, nq, nk).baddbmm_(
                    q.reshape(B * H, nq, dh), k.reshape(B * H, nk, dh).transpose(1, 2), alpha=scale
                )
                p = torch.softmax(s, dim=-1)
                del s
                out = torch.matmul(p, v)
                per = None
                if av is not None:
                    per = _scatter_sum(p, idx, av.shape[0])
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
                q, k, v, qa, out, lse, allowed, *idx = ctx.saved_tensors
                B, H, nq, dh = q.shape
                nk = k.shape[2]
                q3, k3t = q.view(B * H, nq, dh), k.view(B * H, nk, dh).transpose(1, 2)
                if ctx.saved_mask:  # `qa` slot holds the saved additive mask
                    p = torch.baddbmm(qa.view(B * H, nq, nk), q3, k3t, alpha=scale).view(B, H, nq, nk)
                else:
                    p = _gather_sum(qa, idx, (B, H, nq, nk))
                    if allowed is not None:
                        p.masked_fill_(~allowed, float("-inf"))
                    p.view(B * H, nq, nk).baddbmm_(q3, k3t, alpha=scale)
                p.sub_(lse.unsqueeze(-1)).exp_()
                per = av = None
            else:
                q, k, v, p, out, per, av, *idx = ctx.saved_tensors
                B, H, nq, dh = q.shape
                nk = k.shape[2]
            d_out = d_out.to(q.dtype)
            dp = torch.matmul(d_out, v.transpose(-1, -2))  # [B, H, nq, nk]
            if av is not None:
                dp.add_(_gather_sum(torch.matmul(d_out, av.t()), idx, (B, H, nq, nk)))
            delta = (d_out * out).sum(-1, keepdim=True)
            ds = dp.sub_(delta).mul_(p)  # dS, in place
            nf = ctx.needs_input_grad
            dq = torch.matmul(ds, k).mul_(scale) if nf[0] else None
            dk = torch.matmul(ds.transpose(-1, -2), q).mul_(scale) if nf[1] else None
            dv = torch.matmul(p.transpose(-1, -2), d_out) if nf[2] else None
            dqa = _scatter_sum(ds, idx, ctx.qa_L) if nf[3] else None
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
        return (dq, dk, dv, dqa, dav, None, None, None, *([None] * len(idx)))


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


class GraphAttention(nn.Module):
    """Graph (relation-aware) multi-head attention.

    Args:
        embed_dim: model width ``d``.
        num_heads: heads ``H``; ``d_head = d / H``.
        num_labels: label-table size ``L`` (labels in ``[0, L)``), or a sequence of
            ``C`` sizes, one per channel (labels then ``[B, C, nq, nk]``); ``0`` /
            ``None`` / ``[]`` for plain attention.
        value_labels: also add label embeddings to the values.
        dropout: attention-probability dropout.
        kdim: width of the memory for cross-attention (default ``embed_dim``).
        bias: biases in the projections.
        backend: ``"sdpa"`` (default) or ``"flex"`` (FlexAttention with a
            ``score_mod`` reading the label bias; keys-only, torch >= 2.5).

    Shapes:
        - x: ``[B, nq, d]``; memory (cross-attention): ``[B, nk, kdim]``
        - labels: ``[B, nq, nk]`` or ``[B, C, nq, nk]`` integer (batch dim may be 1 to broadcast)
        - key_padding_mask: ``[B, nk]`` bool, True = padding
        - output: ``[B, nq, d]`` (and ``[B, H, nq, nk]`` weights with ``need_weights``)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        num_labels: int | Sequence[int] | None,
        value_labels: bool = True,
        dropout: float = 0.0,
        kdim: int | None = None,
        bias: bool = True,
        backend: str = "sdpa",
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        if backend not in ("sdpa", "flex"):
            raise ValueError(f"backend must be 'sdpa' or 'flex', got {backend!r}")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim = kdim or embed_dim
        self.dropout = dropout
        self.backend = backend
        sizes = label_table_sizes(num_labels)
        self.multi_channel = not isinstance(num_labels, int)
        self.label_sizes = sizes
        self.register_buffer("label_offsets", label_offsets(sizes), persistent=False)
        total = sum(sizes)
        self.value_labels = value_labels and total > 0
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(self.kdim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(self.kdim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.label_key = nn.Parameter(torch.empty(total, self.head_dim)) if total else None
        self.label_value = nn.Parameter(torch.empty(total, self.head_dim)) if self.value_labels else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)
        std = self.head_dim**-0.5
        if self.label_key is not None:
            nn.init.normal_(self.label_key, std=std)
        if self.label_value is not None:
            nn.init.normal_(self.label_value, std=std)

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, num_labels={self.label_sizes}, "
            f"value_labels={self.value_labels}, dropout={self.dropout}, backend={self.backend!r}"
        )

    # ------------------------------------------------------------------ helpers
    def _split(self, t: Tensor) -> Tensor:  # [B, n, d] -> [B, H, n, dh]
        B, n, _ = t.shape
        return t.view(B, n, self.num_heads, self.head_dim).transpose(1, 2)

    def _label_index(self, labels: Tensor, B: int, nq: int, nk: int) -> list[Tensor]:
        """Per channel: ``[B', 1, nq, nk]`` long indices into the concatenated tables."""
        if labels.dim() == 3:
            if self.multi_channel and len(self.label_sizes) != 1:
                raise ValueError(
                    f"labels must be [B, C, nq, nk] with C={len(self.label_sizes)} channels "
                    f"(num_labels={self.label_sizes}), got shape {tuple(labels.shape)}"
                )
            labels = labels.unsqueeze(1)
        if labels.dim() != 4 or labels.shape[1] != len(self.label_sizes):
            raise ValueError(
                f"labels of shape {tuple(labels.shape)} do not match {len(self.label_sizes)} channel(s) "
                f"[B, C, nq={nq}, nk={nk}]"
            )
        if labels.shape[-2:] != (nq, nk):
            raise ValueError(f"labels cover {tuple(labels.shape[-2:])} pairs but attention is ({nq}, {nk})")
        if labels.dtype.is_floating_point or labels.dtype == torch.bool:
            raise TypeError(f"labels must be an integer tensor, got {labels.dtype}")
        if labels.numel():
            lo = labels.amin(dim=(0, 2, 3)).tolist()
            hi = labels.amax(dim=(0, 2, 3)).tolist()
            for c, size in enumerate(self.label_sizes):
                if lo[c] < 0 or hi[c] >= size:
                    raise ValueError(
                        f"labels of channel {c} span [{lo[c]}, {hi[c]}] but GraphAttention was built with "
                        f"num_labels={size} for it (valid ids: 0..{size - 1}); "
                        f"raise num_labels or fix the label vocabulary"
                    )
        offsets = self.label_offsets.tolist()
        return [(labels[:, c].long() + offsets[c]).unsqueeze(1) for c in range(labels.shape[1])]

    def _allowed(
        self, B: int, nq: int, nk: int, key_padding_mask: Tensor | None, causal: bool, offset: int, device
    ) -> Tensor | None:
        """``[B|1, 1, nq, nk]`` bool, True = may attend; None when nothing is masked."""
        allowed = None
        if causal:
            i = torch.arange(offset, offset + nq, device=device)
            j = torch.arange(nk, device=device)
            allowed = (j[None, :] <= i[:, None])[None, None]
        if key_padding_mask is not None:
            keep = (~key_padding_mask.bool())[:, None, None, :]
            allowed = keep if allowed is None else allowed & keep
        return allowed

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        x: Tensor,
        labels: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
        memory: Tensor | None = None,
        cache: KVCache | None = None,
        need_weights: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        B, nq, _ = x.shape
        q = self._split(self.q_proj(x))
        offset = 0
        if memory is not None:  # cross-attention
            if cache is not None and cache.k is not None:
                k, v = cache.k, cache.v
            else:
                k, v = self._split(self.k_proj(memory)), self._split(self.v_proj(memory))
                if cache is not None:
                    cache.k, cache.v, cache.static = k, v, True
        else:
            k, v = self._split(self.k_proj(x)), self._split(self.v_proj(x))
            if cache is not None:
                offset = cache.length
                if cache.k is not None:
                    k, v = torch.cat([cache.k, k], 2), torch.cat([cache.v, v], 2)
                cache.k, cache.v = k, v
        nk = k.shape[2]
        scale = self.head_dim**-0.5

        idx: list[Tensor] = []
        if self.label_key is not None:
            if labels is None:
                raise ValueError("this GraphAttention has label tables; pass labels (or build it with num_labels=0)")
            idx = self._label_index(labels, B, nq, nk)

        if key_padding_mask is not None and (
            key_padding_mask.dim() != 2 or key_padding_mask.shape[1] != nk or key_padding_mask.shape[0] not in (1, B)
        ):
            raise ValueError(
                f"key_padding_mask must be [B={B}, nk={nk}] bool (True = padding), "
                f"got shape {tuple(key_padding_mask.shape)}"
            )
        allowed = self._allowed(B, nq, nk, key_padding_mask, causal, offset, x.device)
        dead = None
        if allowed is not None:
            dead = ~allowed.any(-1, keepdim=True)  # [B|1, 1, nq, 1]
            if bool(dead.any()):
                allowed = allowed | dead
            else:
                dead = None
        p_drop = self.dropout if self.training else 0.0

        weights = None
        use_flex = self.backend == "flex" and not self.value_labels and not need_weights and p_drop == 0.0
        wants_grad = torch.is_grad_enabled() and (
            q.requires_grad or k.requires_grad or v.requires_grad
            or (self.label_key is not None and self.label_key.requires_grad)
        )
        if use_flex and q.device.type == "cpu" and wants_grad:
            # FlexAttention has no CPU backward (torch <= 2.13): the SDPA path computes the same function.
            use_flex = False
        if use_flex:
            out = self._flex(q, k, v, idx, allowed, scale)
        elif need_weights or p_drop > 0.0:
            # Reference-style autograd path (dropout on the probabilities, or the weights are wanted).
            scores = torch.matmul(q, k.transpose(-1, -2)) * scale
            if idx:
                scores = scores + self._key_bias(q, idx, B, nq, nk) * scale
            if allowed is not None:
                scores = scores.masked_fill(~allowed, float("-inf"))
            attn = torch.softmax(scores, dim=-1)
            weights = attn
            if p_drop:
                attn = F.dropout(attn, p_drop, True)
            out = torch.matmul(attn, v)
            if self.value_labels:
                out = out + self._value_term(attn, idx)
        elif not idx:
            out = self._plain_sdpa(q, k, v, allowed, causal and key_padding_mask is None and offset == 0 and nq == nk)
        else:
            qa = torch.matmul(q, self.label_key.to(q.dtype).t()) * scale  # [B, H, nq, L]
            if self.value_labels:
                out = _LabelAttention.apply(q, k, v, qa, self.label_value, allowed, scale, False, *idx)
            elif q.device.type == "cuda":
                # CUDA's memory-efficient SDPA kernel differentiates the additive mask itself.
                mask = self._gather_bias(qa, idx)
                if allowed is not None:
                    mask = mask.masked_fill(~allowed, float("-inf"))
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype), scale=scale)
            else:
                out = _LabelAttention.apply(q, k, v, qa, None, allowed, scale, True, *idx)
        if dead is not None:
            out = out.masked_fill(dead, 0.0)
        out = self.out_proj(out.transpose(1, 2).reshape(B, nq, self.embed_dim))
        if need_weights:
            if dead is not None:
                weights = weights.masked_fill(dead, 0.0)
            return out, weights
        return out

    def _gather_bias(self, qa: Tensor, idx: list[Tensor]) -> Tensor:
        """``[B, H, nq, nk]``: ``sum_c qa[b, h, i, l^c_ij]``."""
        B, H, nq, _ = qa.shape
        return _gather_sum(qa, idx, (B, H, nq, idx[0].shape[-1]))

    def _plain_sdpa(self, q: Tensor, k: Tensor, v: Tensor, allowed: Tensor | None, is_causal: bool) -> Tensor:
        """No labels: SDPA with ``is_causal`` when possible, else a boolean mask (True = attend)."""
        if is_causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)

    def _key_bias(self, q: Tensor, idx: list[Tensor], B: int, nq: int, nk: int) -> Tensor:
        """``[B, H, nq, nk]``: ``q_i · a^K[l_ij]`` (unscaled)."""
        qa = torch.matmul(q, self.label_key.to(q.dtype).t())  # [B, H, nq, L]
        bias = None
        for ix in idx:
            g = qa.gather(-1, ix.expand(B, self.num_heads, nq, nk))
            bias = g if bias is None else bias + g
        return bias

    def _value_term(self, attn: Tensor, idx: list[Tensor]) -> Tensor:
        """``[B, H, nq, dh]``: ``sum_j attn_ij a^V[l_ij]`` via a scatter by label."""
        B, H, nq, nk = attn.shape
        per_label = attn.new_zeros(B, H, nq, self.label_value.shape[0])
        for ix in idx:
            per_label = per_label.scatter_add(-1, ix.expand(B, H, nq, nk), attn)
        return torch.matmul(per_label, self.label_value.to(attn.dtype))

    def _flex(self, q: Tensor, k: Tensor, v: Tensor, idx: list[Tensor], allowed: Tensor | None, scale: float) -> Tensor:
        """FlexAttention path: ``score_mod`` adds ``q_i · a^K[l_ij]`` inside the kernel.

        Masking (padding / causal) is applied in the same ``score_mod`` (``-inf``); label
        tensors with batch size 1 broadcast. On CUDA the kernel is ``torch.compile``d (eager
        FlexAttention materialises the scores); elsewhere it runs eagerly.
        """
        flex_attention = _flex_kernel(q.device.type)

        B, H, nq, _ = q.shape
        qa = torch.matmul(q, self.label_key.to(q.dtype).t()) * scale if idx else None  # [B, H, nq, L]
        lab = torch.cat([ix for ix in idx], 1) if idx else None  # [B', C, nq, nk]
        bsel = (lambda b: b) if lab is None or lab.shape[0] == B else (lambda b: b * 0)
        allow = None if allowed is None else allowed.expand(allowed.shape[0], 1, nq, k.shape[2])
        absel = (lambda b: b) if allow is None or allow.shape[0] == B else (lambda b: b * 0)
        n_ch = 0 if lab is None else lab.shape[1]

        def score_mod(score, b, h, q_idx, kv_idx):
            for c in range(n_ch):
                score = score + qa[b, h, q_idx, lab[bsel(b), c, q_idx, kv_idx]]
            if allow is not None:
                score = torch.where(allow[absel(b), 0, q_idx, kv_idx], score, -float("inf"))
            return score

        return flex_attention(q, k, v, score_mod=score_mod, scale=scale)
