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
(Shaw et al. 2018), and :math:`m_{ij}` the mask: :math:`-\infty` from padding, the
causal mask and a boolean ``attn_mask``, plus a float ``attn_mask`` as given (as in
``nn.MultiheadAttention``). The heads are concatenated and projected by :math:`W_O`.

No ``[B, n, n, d_h]`` tensor is built. The key term is a gather of ``q @ a^K.T``
(``[B, H, n, L]``) by the labels, an additive bias on the scores; the value term
scatters the attention probabilities by label into ``[B, H, n, L]`` and multiplies by
``a^V``. Rows whose keys are all masked return zeros (never NaN).

Execution paths (all compute the same function; the tests check each against a
naive float64 reference):

* labels, no dropout, no ``need_weights``, no float ``attn_mask`` that needs a gradient:
  ``label_kernels.LabelAttentionFunction``, blocked like flash attention (over blocks of query
  rows): nothing ``[B, H, n, n]`` is kept for backward (``q, k, v``, the output, the log-sum-exp
  and the labels in a compact dtype are), and peak memory is linear in ``n``. On CPU it runs the
  C++ kernel compiled on first use (``label_cpp``), else blocked torch ops (``label_blocked``).
  On CUDA the fused Triton kernel (``label_triton``, keys and values, forward and backward), else
  keys-only compiled FlexAttention (``label_flex``), else the torch blocks (``choose_label_backend``).
* no labels: plain SDPA (``is_causal`` when possible, else a boolean mask, or a float
  one with a float ``attn_mask``).
* dropout, ``need_weights`` or a float ``attn_mask`` that needs a gradient: straightforward
  autograd ops (``[B, H, n, n]`` scores).
* labels at inference when ``B * H * nq * nk`` exceeds ``GraphAttention.inference_chunk``: the
  label path over chunks of query rows, so even the masks and label slices exist for one chunk
  at a time.
* ``backend="flex"`` (keys-only): FlexAttention on CPU too, for inference (it has no CPU backward;
  calls that need gradients use the default path).

Under autocast, q/k/v come out of the projections in the autocast dtype; the label kernels
compute in float32 and return that dtype.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention_unfused import unfused_attention
from .label_kernels import (
    _mask_terms, _rows, check_labels, choose_label_backend, compact_labels, flex_attention_available, label_attention,
    label_offsets, label_table_sizes,
)

__all__ = ["GraphAttention", "MultiheadGraphAttention", "KVCache", "flex_attention_available", "label_offsets",
           "label_table_sizes"]


@dataclass
class KVCache:
    """Projected keys / values kept between incremental decoding steps.

    For cross-attention the cache is filled once from the memory and reused (``static=True``).

    Args:
        k: projected keys ``[B, H, P, d_head]`` (``None``: empty).
        v: projected values ``[B, H, P, d_head]`` (``None``: empty).
        static: filled once (cross-attention memory) and reused, not extended at each step.
    """

    k: Tensor | None = None
    v: Tensor | None = None
    static: bool = False

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    def reorder(self, index: Tensor) -> None:
        """Select batch rows (beam search).

        Args:
            index: ``[B']`` long, the batch rows to keep, in order.
        """
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)


class GraphAttention(nn.Module):
    """Graph (relation-aware) multi-head attention.

    Call::

        out = attn(x, labels=None, key_padding_mask=None, causal=False, *, memory=None, cache=None,
                   need_weights=False, attn_mask=None)

    returns ``out [B, nq, d]``, or ``(out, weights [B, H, nq, nk])`` with ``need_weights=True``
    (weights come from the unfused path). ``causal=True``: position ``i`` attends to ``j <= i`` only. For the
    ``nn.MultiheadAttention`` call ``(query, key, value) -> (out, weights)`` use :class:`MultiheadGraphAttention`
    (what :meth:`from_multihead_attention` returns).

    Masks: ``key_padding_mask [B, nk]``, bool (True = padding) or float (added to the scores);
    ``attn_mask`` as ``nn.MultiheadAttention`` takes it, ``[nq, nk]`` or ``[B*H, nq, nk]`` (or
    ``[B|1, H|1, nq, nk]``), bool (True = may *not* attend) or float (added to the scores; a mask
    that needs a gradient takes the unfused autograd path). They combine with the labels, padding and
    the causal mask. A query with no key left to attend to returns zeros (and zero weights), never NaN.

    Shapes:
        - x: ``[B, nq, d]``; memory (cross-attention): ``[B, nk, kdim]``
        - labels: ``[B, nq, nk]`` or ``[B, C, nq, nk]`` integer, any integer dtype (batch dim may be 1
          to broadcast); uint8 / int16 labels are read as they are
        - output: ``[B, nq, d]``

    Args:
        embed_dim: model width ``d``.
        num_heads: heads ``H``; ``d_head = d / H``.
        num_labels: label-table size ``L`` (labels in ``[0, L)``), or a sequence of
            ``C`` sizes, one per channel (labels then ``[B, C, nq, nk]``); ``0`` (default) /
            ``None`` / ``[]`` for plain attention.
        value_labels: also add label embeddings to the values.
        dropout: attention-probability dropout.
        kdim: width of the memory for cross-attention (default ``embed_dim``).
        bias: biases in the projections.
        backend: ``"sdpa"`` (default: the label path is chosen per call, on CUDA the Triton kernel, else
            FlexAttention, else the blocked kernels; ``$G2GT_CUDA_LABEL_BACKEND`` changes the order), ``"flex"``
            (FlexAttention wherever it applies, also on CPU for keys-only inference) or ``"triton"`` (the Triton
            kernel or an error saying why not); see :func:`~g2gt.nn.label_kernels.choose_label_backend`.
            ``last_label_path`` names the path of the last label call.
        vdim: as in ``nn.MultiheadAttention``; keys and values come from one memory tensor, so ``vdim`` must
            equal ``kdim`` (``None``, the default: ``kdim``).
        batch_first: as in ``nn.MultiheadAttention``; inputs are batch-first only, so it must be ``True``.
        device: where the parameters are created, as in ``nn.MultiheadAttention`` (``None``: torch's default
            device).
        dtype: the parameters' dtype, as in ``nn.MultiheadAttention`` (``None``: torch's default dtype).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        num_labels: int | Sequence[int] | None = 0,
        value_labels: bool = True,
        dropout: float = 0.0,
        kdim: int | None = None,
        bias: bool = True,
        backend: str = "sdpa",
        *,
        vdim: int | None = None,
        batch_first: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        if backend not in ("sdpa", "flex", "triton"):
            raise ValueError(f"backend must be 'sdpa' (automatic), 'flex' or 'triton', got {backend!r}")
        if isinstance(num_labels, float) or not (
            num_labels is None or isinstance(num_labels, int) or all(isinstance(s, int) for s in num_labels)
        ):
            raise TypeError(
                f"num_labels must be an int or a sequence of ints, got {num_labels!r} (the third argument of "
                "GraphAttention is num_labels, not dropout as in nn.MultiheadAttention: pass dropout=...)"
            )
        if not batch_first:
            raise ValueError("GraphAttention takes batch-first inputs [B, n, d] only (batch_first=True)")
        if vdim is not None and vdim != (kdim or embed_dim):
            raise ValueError(
                f"vdim={vdim} differs from kdim={kdim or embed_dim}: GraphAttention projects one memory "
                "tensor into both keys and values"
            )
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
        self._offsets = label_offsets(sizes).tolist()
        total = sum(sizes)
        self.value_labels = value_labels and total > 0
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.k_proj = nn.Linear(self.kdim, embed_dim, bias=bias)
        self.v_proj = nn.Linear(self.kdim, embed_dim, bias=bias)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.label_key = nn.Parameter(torch.empty(total, self.head_dim)) if total else None
        self.label_value = nn.Parameter(torch.empty(total, self.head_dim)) if self.value_labels else None
        self.reset_parameters()
        if device is not None or dtype is not None:
            self.to(device=device, dtype=dtype)

    @classmethod
    def from_multihead_attention(
        cls,
        mha: nn.MultiheadAttention,
        num_labels: int | Sequence[int] | None = 0,
        value_labels: bool = True,
        backend: str = "sdpa",
    ) -> "MultiheadGraphAttention":
        """A :class:`MultiheadGraphAttention` computing the same function as ``mha``.

        It is called like ``mha`` and has its device, dtype and train/eval mode.

        Mapping: ``in_proj_weight`` ``[3d, d]`` (or ``q/k/v_proj_weight``) and ``in_proj_bias`` split into
        ``q_proj / k_proj / v_proj``; ``out_proj -> out_proj``; ``dropout`` kept. With ``num_labels > 0``
        the new label tables start at zero, so the layer equals ``mha`` until it is trained on graphs.
        ``mha`` must be ``batch_first=True`` (set ``mha.batch_first = True`` and pass ``[B, n, d]`` inputs;
        the weights do not depend on it), without ``add_bias_kv`` / ``add_zero_attn``, and with
        ``kdim == vdim``. The state dict is a :class:`GraphAttention`'s: load it into one for the graph call.

        Args:
            mha: the ``nn.MultiheadAttention`` to copy (``batch_first=True``, no ``add_bias_kv`` / ``add_zero_attn``,
                ``kdim == vdim``).
            num_labels: label-table sizes of the new layer, as the constructor's ``num_labels`` (``0``, the default: no
                labels, plain attention).
            value_labels: also add label embeddings to the values.
            backend: the label path, as the constructor's ``backend`` (default ``"sdpa"``).

        Returns:
            A :class:`MultiheadGraphAttention` on ``mha``'s device and dtype, in its train/eval mode.
        """
        if not isinstance(mha, nn.MultiheadAttention):
            raise TypeError(f"expected a torch.nn.MultiheadAttention, got {type(mha).__name__}")
        if not mha.batch_first:
            raise ValueError(
                "GraphAttention takes [B, n, d] inputs: set mha.batch_first = True (the weights are the same) "
                "and transpose your inputs"
            )
        if mha.bias_k is not None or mha.add_zero_attn:
            raise ValueError("nn.MultiheadAttention(add_bias_kv=True / add_zero_attn=True) has no GraphAttention "
                             "equivalent")
        weight = mha.out_proj.weight
        target = cls if issubclass(cls, MultiheadGraphAttention) else MultiheadGraphAttention
        new = target(mha.embed_dim, mha.num_heads, num_labels, value_labels=value_labels, dropout=mha.dropout,
                     kdim=mha.kdim, vdim=mha.vdim, bias=mha.in_proj_bias is not None, backend=backend,
                     device=weight.device, dtype=weight.dtype)
        packed = getattr(mha, "in_proj_weight", None)
        ws = packed.chunk(3) if packed is not None else (mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight)
        bs = mha.in_proj_bias.chunk(3) if mha.in_proj_bias is not None else (None,) * 3
        with torch.no_grad():
            for lin, w, b in zip((new.q_proj, new.k_proj, new.v_proj), ws, bs, strict=True):
                lin.weight.copy_(w)
                if b is not None:
                    lin.bias.copy_(b)
            new.out_proj.weight.copy_(mha.out_proj.weight)
            if mha.out_proj.bias is not None:
                new.out_proj.bias.copy_(mha.out_proj.bias)
            for table in (new.label_key, new.label_value):
                if table is not None:
                    table.zero_()
        return new.train(mha.training)

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
        """The layer's settings for ``repr``.

        Returns:
            The layer's settings, shown inside its ``repr``.
        """
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, num_labels={self.label_sizes}, "
            f"value_labels={self.value_labels}, dropout={self.dropout}, backend={self.backend!r}"
        )

    # ------------------------------------------------------------------ helpers
    def _split(self, t: Tensor) -> Tensor:  # [B, n, d] -> [B, H, n, dh]
        B, n, _ = t.shape
        return t.view(B, n, self.num_heads, self.head_dim).transpose(1, 2)

    def _self_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``q, k, v [B, H, n, dh]`` of self-attention over ``x [B, n, d]``. When the three projections are
        plain ``nn.Linear`` layers they run as ONE product with their weights stacked (``[3d, d]``, as
        ``nn.MultiheadAttention``'s packed projection), forward and backward, with the same parameters.
        Stacking copies ``3 d^2`` weights, so it is done only when ``x`` has at least ``d`` rows (not for
        one-token decoding steps); otherwise, and for other layer types (e.g. int8-quantized), three calls."""
        lins = (self.q_proj, self.k_proj, self.v_proj)
        if x.shape[0] * x.shape[1] >= self.embed_dim and all(type(m) is nn.Linear for m in lins):
            bias = None if self.q_proj.bias is None else torch.cat([m.bias for m in lins])
            qkv = F.linear(x, torch.cat([m.weight for m in lins]), bias)
            if self.label_key is not None and torch.is_grad_enabled() and qkv.requires_grad:
                return _PackedSplit.apply(qkv, self.num_heads)  # the label kernels' packed gradient
            q, k, v = qkv.chunk(3, -1)
            return self._split(q), self._split(k), self._split(v)
        return self._split(self.q_proj(x)), self._split(self.k_proj(x)), self._split(self.v_proj(x))

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        x: Tensor,
        labels: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        causal: bool = False,
        *,
        memory: Tensor | None = None,
        cache: KVCache | None = None,
        need_weights: bool = False,
        attn_mask: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Graph attention; see the class docstring.

        Args:
            x: queries ``[B, nq, d]`` (and keys / values for self-attention).
            labels: integer labels ``[B, nq, nk]`` or ``[B, C, nq, nk]`` (batch dim may be 1); ``None``: no labels
                (plain attention).
            key_padding_mask: ``[B, nk]``, bool (True = padding) or float (added to the scores); ``None``: no padding.
            causal: position ``i`` attends to ``j <= i`` only.
            memory: keys / values ``[B, nk, kdim]`` for cross-attention; ``None``: self-attention on ``x``.
            cache: a :class:`KVCache` of earlier steps for incremental decoding, extended in place; ``None``: no cache.
            need_weights: also return the attention weights (from the unfused path).
            attn_mask: ``[nq, nk]``, ``[B*H, nq, nk]`` or ``[B|1, H|1, nq, nk]``, bool (True = may *not* attend) or
                float (added to the scores); ``None``: no mask.

        Returns:
            ``out [B, nq, d]``, or ``(out, weights [B, H, nq, nk])`` with ``need_weights=True``.
        """
        if x.dim() != 3 or x.shape[-1] != self.embed_dim:
            raise ValueError(
                f"x must be [B, n, embed_dim={self.embed_dim}] (batch first), got shape {tuple(x.shape)}"
            )
        if labels is not None and labels.is_floating_point():
            raise TypeError(
                f"labels must be an integer tensor, got {labels.dtype} (for the nn.MultiheadAttention call "
                "attn(query, key, value) use MultiheadGraphAttention or GraphAttention.from_multihead_attention)"
            )
        causal = bool(causal)
        B, nq, _ = x.shape
        offset = 0
        if memory is not None:  # cross-attention
            q = self._split(self.q_proj(x))
            if cache is not None and cache.k is not None:
                k, v = cache.k, cache.v
            else:
                k, v = self._split(self.k_proj(memory)), self._split(self.v_proj(memory))
                if cache is not None:
                    cache.k, cache.v, cache.static = k, v, True
        else:
            q, k, v = self._self_qkv(x)
            if cache is not None:
                offset = cache.length
                if cache.k is not None:
                    k, v = torch.cat([cache.k, k], 2), torch.cat([cache.v, v], 2)
                cache.k, cache.v = k, v
        nk = k.shape[2]
        scale = self.head_dim**-0.5

        lab: Tensor | None = None
        if self.label_key is not None:
            if labels is None:
                raise ValueError("this GraphAttention has label tables; pass labels (or build it with num_labels=0)")
            lab = compact_labels(check_labels(labels, self.label_sizes, self.multi_channel, B, nq, nk),
                                 self.label_sizes)
        if key_padding_mask is not None and (
            key_padding_mask.dim() != 2 or key_padding_mask.shape[1] != nk or key_padding_mask.shape[0] not in (1, B)
        ):
            raise ValueError(
                f"key_padding_mask must be [B={B}, nk={nk}] bool (True = padding) or float (added to the scores), "
                f"got shape {tuple(key_padding_mask.shape)}"
            )
        kpm = None if key_padding_mask is None or key_padding_mask.is_floating_point() else key_padding_mask.bool()
        keep = add = None
        if attn_mask is not None or (key_padding_mask is not None and key_padding_mask.is_floating_point()):
            keep, add = _mask_terms(attn_mask, key_padding_mask, B, self.num_heads, nq, nk)
        p_drop = self.dropout if self.training else 0.0
        mask_grad = add is not None and add.requires_grad and torch.is_grad_enabled()

        if lab is not None and not (need_weights or p_drop or mask_grad):
            wants_grad = torch.is_grad_enabled() and (
                q.requires_grad or k.requires_grad or v.requires_grad or self.label_key.requires_grad
                or (self.label_value is not None and self.label_value.requires_grad)
            )
            rows = nq if wants_grad else self._query_chunk(B, nq, nk)
            out = torch.cat([
                self._label_attention(q[:, :, i : i + rows], k, v, lab[:, :, i : i + rows], kpm,
                                      _rows(keep, i, rows, nq), _rows(add, i, rows, nq), causal, offset + i, scale,
                                      wants_grad)
                for i in range(0, nq, rows)
            ], 2) if rows < nq else self._label_attention(q, k, v, lab, kpm, keep, add, causal, offset, scale,
                                                          wants_grad)
            return self.out_proj(out.transpose(1, 2).reshape(B, nq, self.embed_dim))
        label_tables = (self.label_key, self.label_value, self._offsets) if lab is not None else None
        out, weights = unfused_attention(q, k, v, lab, label_tables, key_padding_mask, keep, add, causal, offset,
                                         scale, need_weights or p_drop > 0 or mask_grad, p_drop)
        out = self.out_proj(out.transpose(1, 2).reshape(B, nq, self.embed_dim))
        return (out, weights) if need_weights else out

    inference_chunk = 1 << 24  # score elements (B * H * rows * nk) per query chunk at inference; see _query_chunk

    def _query_chunk(self, B: int, nq: int, nk: int) -> int:
        """Query rows per chunk at inference: all ``nq`` when ``B * H * nq * nk <= inference_chunk``, else
        the most rows within it (at least one). Each query row's output depends on its own row of the
        scores only, so chunks give the same result while masks and label slices exist for one chunk at a
        time."""
        per_row = max(B * self.num_heads * nk, 1)
        return nq if per_row * nq <= self.inference_chunk else max(self.inference_chunk // per_row, 1)

    def _label_attention(self, q: Tensor, k: Tensor, v: Tensor, lab: Tensor, kpm: Tensor | None,
                         keep: Tensor | None, add: Tensor | None, causal: bool, offset: int, scale: float,
                         wants_grad: bool) -> Tensor:
        """The label paths: ``q [B, H, rows, dh]`` (all rows or one chunk) with ``lab [B|1, C, rows, nk]``,
        ``keep`` / ``add`` ``[B|1, H|1, rows|1, nk]`` for the same rows, ``kpm [B|1, nk]`` (True = padding);
        query row ``i`` sees keys ``j <= i + offset`` when ``causal``. Returns ``[B, H, rows, dh]``."""
        path, _ = choose_label_backend(self.backend, q.device.type, q.dtype, self.value_labels, wants_grad,
                                       self.label_key.shape[0], self.head_dim)
        self.last_label_path = path
        return label_attention(path, q, k, v, self.label_key, self.label_value, lab, kpm, keep, add, self._offsets,
                               causal, offset, scale)


class _PackedSplit(torch.autograd.Function):
    """``qkv [B, n, 3d]`` -> ``q, k, v [B, H, n, dh]`` (views), as ``chunk`` + ``view`` + ``transpose``, with a
    backward that hands on the packed gradient without a copy when the three gradients are the thirds of one
    ``[B, n, 3d]`` buffer (the compiled label kernel writes them so, see ``grad_buffers`` in
    ``csrc/label_attention.cpp``); other gradients are concatenated as ``chunk``'s backward does."""

    @staticmethod
    def forward(ctx, qkv: Tensor, heads: int):  # type: ignore[override]
        B, n, d3 = qkv.shape
        ctx.shape, ctx.dtype, ctx.device = (B, n, d3), qkv.dtype, qkv.device
        return tuple(t.view(B, n, heads, d3 // (3 * heads)).transpose(1, 2) for t in qkv.chunk(3, -1))

    @staticmethod
    def backward(ctx, dq, dk, dv):  # type: ignore[override]
        B, n, d3 = ctx.shape
        d = d3 // 3
        grads = (dq, dk, dv)
        if all(g is not None for g in grads) and _thirds_of_one(dq, dk, dv, B, n, d):
            return dq.as_strided((B, n, d3), (n * d3, d3, 1)), None
        parts = [torch.zeros(B, n, d, dtype=ctx.dtype, device=ctx.device) if g is None
                 else g.transpose(1, 2).reshape(B, n, d) for g in grads]
        return torch.cat(parts, -1), None


def _thirds_of_one(dq: Tensor, dk: Tensor, dv: Tensor, B: int, n: int, d: int) -> bool:
    """Whether ``dq, dk, dv [B, H, n, dh]`` are the consecutive thirds of one ``[B, n, 3d]`` row-major buffer."""
    H, dh = dq.shape[1], dq.shape[3]
    want = (n * 3 * d if B > 1 else dq.stride(0), dh, 3 * d, 1)
    step = d * dq.element_size()
    return (dq.dtype == dk.dtype == dv.dtype and dq.stride() == dk.stride() == dv.stride() == want
            and dq.untyped_storage().data_ptr() == dv.untyped_storage().data_ptr()
            and dk.data_ptr() == dq.data_ptr() + step and dv.data_ptr() == dk.data_ptr() + step
            and H * dh == d)


class MultiheadGraphAttention(GraphAttention):
    """:class:`GraphAttention` called like ``nn.MultiheadAttention(batch_first=True)``.

    Same constructor and parameters; :meth:`GraphAttention.from_multihead_attention` returns one::

        out, weights = attn(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                            average_attn_weights=True, is_causal=False, *, labels=None)

    Self-attention when ``key is value is query``; cross-attention (``memory=key``) when ``key is value``.
    Different key and value tensors raise a ``ValueError`` (one memory gives both). ``labels`` (keyword)
    as in the graph call, required when the layer has label tables. ``weights`` is ``[B, nq, nk]``
    (averaged over heads) or ``[B, H, nq, nk]``, or None with ``need_weights=False`` -- pass that for the
    fast kernels, as with ``nn.MultiheadAttention``. ``is_causal=True`` applies the causal mask itself (an
    ``attn_mask`` is not required, and if given is combined with it). Masks as in :class:`GraphAttention`.

    Args:
        embed_dim: model width ``d``.
        num_heads: heads ``H``.
        num_labels: label-table sizes, as in :class:`GraphAttention` (``0``, the default: plain attention).
        value_labels: also add label embeddings to the values.
        dropout: attention-probability dropout.
        kdim: width of the memory for cross-attention (``None``, the default: ``embed_dim``).
        bias: biases in the projections.
        backend: the label path, as in :class:`GraphAttention` (default ``"sdpa"``).
        vdim: must equal ``kdim`` (one memory gives keys and values); ``None``, the default: ``kdim``.
        batch_first: must be ``True``: inputs are ``[B, n, d]``.
        device: where the parameters are created (``None``: torch's default device).
        dtype: the parameters' dtype (``None``: torch's default dtype).
    """

    def forward(  # type: ignore[override]
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
        *,
        labels: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """``(out [B, nq, d], weights or None)``; see the class docstring.

        Args:
            query: ``[B, nq, d]``.
            key: ``query`` for self-attention, else the memory ``[B, nk, kdim]``; must be ``value``.
            value: the same tensor as ``key``.
            key_padding_mask: ``[B, nk]``, bool (True = padding) or float; ``None``: no padding.
            need_weights: return the attention weights (pass ``False`` for the fast kernels).
            attn_mask: as in :class:`GraphAttention`; ``None``: no mask.
            average_attn_weights: average the weights over the heads (``[B, nq, nk]``) rather than ``[B, H, nq, nk]``.
            is_causal: apply the causal mask (combined with ``attn_mask`` when one is given).
            labels: integer labels as in the graph call; required when the layer has label tables.

        Returns:
            ``(out [B, nq, d], weights)``, ``weights`` ``None`` with ``need_weights=False``.

        Raises:
            ValueError: ``key`` and ``value`` are different tensors.
        """
        if key is not value:
            raise ValueError(
                "GraphAttention projects one tensor into both keys and values: call attn(x, x, x) for "
                "self-attention or attn(query, memory, memory) for cross-attention (key and value must be the "
                "same tensor object)"
            )
        if self.label_key is not None and labels is None:
            raise ValueError("this MultiheadGraphAttention has label tables: pass labels=... (integer [B, nq, nk] "
                             "or [B, C, nq, nk])")
        memory = None if key is query else key
        res = super().forward(query, labels, key_padding_mask, is_causal, memory=memory, need_weights=need_weights,
                              attn_mask=attn_mask)
        if not need_weights:
            return res, None
        out, weights = res
        return out, weights.mean(1) if average_attn_weights else weights
