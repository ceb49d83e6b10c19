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
``q @ a^K.T`` (``[B, H, n, L]``) by the labels and rides on
:func:`torch.nn.functional.scaled_dot_product_attention` as an additive float
mask. The value term scatters the attention probabilities by label into
``[B, H, n, L]`` and multiplies by ``a^V``. Rows whose keys are all masked
return zeros (never NaN).
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
        if num_labels is None:
            sizes: list[int] = []
        elif isinstance(num_labels, int):
            sizes = [num_labels] if num_labels > 0 else []
        else:
            sizes = [int(s) for s in num_labels]
        self.multi_channel = not isinstance(num_labels, int)
        self.label_sizes = sizes
        offsets = [0]
        for s in sizes:
            offsets.append(offsets[-1] + s)
        self.register_buffer("label_offsets", torch.tensor(offsets[:-1], dtype=torch.long), persistent=False)
        total = offsets[-1]
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
                raise ValueError(f"labels must be [B, C, nq, nk] with C={len(self.label_sizes)}")
            labels = labels.unsqueeze(1)
        if labels.dim() != 4 or labels.shape[1] != len(self.label_sizes):
            raise ValueError(
                f"labels of shape {tuple(labels.shape)} do not match {len(self.label_sizes)} channel(s) "
                f"[B, C, nq={nq}, nk={nk}]"
            )
        if labels.shape[-2:] != (nq, nk):
            raise ValueError(f"labels cover {tuple(labels.shape[-2:])} pairs but attention is ({nq}, {nk})")
        return [
            (labels[:, c].long() + self.label_offsets[c]).unsqueeze(1) for c in range(labels.shape[1])
        ]

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

        allowed = self._allowed(B, nq, nk, key_padding_mask, causal, offset, x.device)
        dead = None
        if allowed is not None:
            dead = ~allowed.any(-1, keepdim=True)  # [B|1, 1, nq, 1]
            if bool(dead.any()):
                allowed = allowed | dead
            else:
                dead = None
        p_drop = self.dropout if self.training else 0.0

        if self.backend == "flex" and not self.value_labels and not need_weights and p_drop == 0.0:
            out = self._flex(q, k, v, idx, allowed, scale)
        elif self.value_labels or need_weights:
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
        else:
            mask = None
            if idx:
                mask = self._key_bias(q, idx, B, nq, nk) * scale
            if allowed is not None:
                if mask is None:
                    mask = torch.zeros(allowed.shape, dtype=q.dtype, device=q.device)
                mask = mask.masked_fill(~allowed, float("-inf"))
            if mask is not None and mask.dtype != q.dtype:
                mask = mask.to(q.dtype)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p_drop)
        if dead is not None:
            out = out.masked_fill(dead, 0.0)
        out = self.out_proj(out.transpose(1, 2).reshape(B, nq, self.embed_dim))
        if need_weights:
            if dead is not None:
                weights = weights.masked_fill(dead, 0.0)
            return out, weights
        return out

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
        """FlexAttention path: ``score_mod`` adds ``q_i · a^K[l_ij]`` inside the kernel."""
        from torch.nn.attention.flex_attention import flex_attention

        B, H, nq, _ = q.shape
        qa = torch.matmul(q, self.label_key.to(q.dtype).t()) * scale if idx else None  # [B, H, nq, L]
        lab = torch.cat([ix for ix in idx], 1) if idx else None  # [B', C, nq, nk]
        bsel = (lambda b: b) if lab is None or lab.shape[0] == B else (lambda b: b * 0)
        allow = allowed
        absel = (lambda b: b) if allow is None or allow.shape[0] == B else (lambda b: b * 0)
        n_ch = 0 if lab is None else lab.shape[1]

        def score_mod(score, b, h, q_idx, kv_idx):
            for c in range(n_ch):
                score = score + qa[b, h, q_idx, lab[bsel(b), c, q_idx, kv_idx]]
            if allow is not None:
                score = torch.where(allow[absel(b), 0, q_idx, kv_idx], score, -float("inf"))
            return score

        return flex_attention(q, k, v, score_mod=score_mod, scale=scale)
