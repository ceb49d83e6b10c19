"""The layers and stacks of the G2GTransformer: feed-forward, residual wrappers, encoder and decoder layers.

Encoder layer (pre-LN, the default; ``norm_first=False`` gives Vaswani post-LN)::

    x = x + Dropout(GraphAttention(LN(x), labels, padding))
    x = x + Dropout(FFN(LN(x)))

Decoder layer adds cross-attention to the encoder memory between the two, and
its self-attention is causal with chain (relative-position) labels
``clip(j - i, -k, 0)``. Incremental decoding keeps a :class:`KVCache` per
attention; decoding step by step gives the same outputs as one full pass.
:class:`GraphEncoder` and :class:`GraphDecoder` stack them (the model is :mod:`g2gt.nn.transformer`).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch.nn.functional as F
from torch import Tensor, nn

from ..core._compat import has_forward_hooks
from ..core.graph import num_chain_labels, relative_position_labels
from .attention import GraphAttention, KVCache
from .residual_norm import add_layer_norm

__all__ = ["FeedForward", "EncoderLayer", "DecoderLayer", "GraphEncoder", "GraphDecoder"]


class FeedForward(nn.Module):
    """``W2 · act(W1 x + b1) + b2`` with dropout after the activation.

    Args:
        d_model: input and output width ``d``.
        ffn_dim: inner width.
        dropout: dropout after the activation.
        activation: ``"relu"`` or ``"gelu"``.
    """

    def __init__(self, d_model: int, ffn_dim: int, dropout: float = 0.0, activation: str = "relu") -> None:
        super().__init__()
        self.lin1 = nn.Linear(d_model, ffn_dim)
        self.lin2 = nn.Linear(ffn_dim, d_model)
        self.dropout = nn.Dropout(dropout)
        self.act = {"relu": F.relu, "gelu": F.gelu}[activation]
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for lin in (self.lin1, self.lin2):
            nn.init.xavier_uniform_(lin.weight)
            nn.init.zeros_(lin.bias)

    def extra_repr(self) -> str:
        """The block's settings for ``repr``.

        Returns:
            The layer's settings, shown inside its ``repr``.
        """
        return f"activation={self.act.__name__!r}, dropout={self.dropout.p}"

    def forward(self, x: Tensor) -> Tensor:
        """``W2 · act(W1 x + b1) + b2``.

        Args:
            x: ``[..., d]``.

        Returns:
            ``[..., d]``.
        """
        return self.lin2(self.dropout(self.act(self.lin1(x))))


class _Residual(nn.Module):
    """Pre-LN ``x + drop(f(LN(x)))`` or post-LN ``LN(x + drop(f(x)))``."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def reset_parameters(self) -> None:
        self.norm.reset_parameters()

    def extra_repr(self) -> str:
        return f"norm_first={self.norm_first}, dropout={self.dropout.p}"

    def forward(self, x: Tensor, fn) -> Tensor:
        if self.norm_first:
            return x + self.dropout(fn(self.norm(x)))
        return self.norm(x + self.dropout(fn(x)))


class EncoderLayer(nn.Module):
    """Graph self-attention + FFN. ``x [B, n, d]``, ``labels [B, C, n, n]``, ``padding_mask [B, n]``.

    Args:
        d_model: model width ``d``.
        num_heads: attention heads ``H``.
        ffn_dim: inner width of the feed-forward block.
        num_labels: label-table sizes, as :class:`GraphAttention`'s ``num_labels``.
        value_labels: also add label embeddings to the values.
        dropout: dropout on the residual branches and in the feed-forward block.
        attention_dropout: dropout on the attention probabilities.
        norm_first: pre-LN instead of post-LN.
        activation: ``"relu"`` or ``"gelu"``.
    """

    def __init__(
        self, d_model: int, num_heads: int, ffn_dim: int, num_labels, value_labels: bool = True,
        dropout: float = 0.1, attention_dropout: float = 0.0, norm_first: bool = True, activation: str = "relu",
    ) -> None:
        super().__init__()
        self.self_attn = GraphAttention(d_model, num_heads, num_labels, value_labels, attention_dropout)
        self.ffn = FeedForward(d_model, ffn_dim, dropout, activation)
        self.res_attn = _Residual(d_model, dropout, norm_first)
        self.res_ffn = _Residual(d_model, dropout, norm_first)

    def reset_parameters(self) -> None:
        self.self_attn.reset_parameters()
        self.ffn.reset_parameters()
        self.res_attn.norm.reset_parameters()
        self.res_ffn.norm.reset_parameters()

    def extra_repr(self) -> str:
        """The layer's settings for ``repr``.

        Returns:
            The layer's settings, shown inside its ``repr``.
        """
        return f"norm_first={self.res_ffn.norm_first}"

    def forward(
        self, x: Tensor, labels: Tensor | None = None, padding_mask: Tensor | None = None, need_weights: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Self-attention and FFN over ``x``: ``[B, n, d]``, with ``need_weights`` also the attention probabilities.

        The probabilities ``[B, H, n, n]`` are taken before attention dropout; rows of padded / fully masked queries are
        zero. The weights come from :class:`GraphAttention`'s reference path, so the output may differ from the default
        path by floating-point rounding only.

        Args:
            x: ``[B, n, d]``.
            labels: ``[B, C, n, n]`` integer labels, or ``None``.
            padding_mask: ``[B, n]`` bool, True = padding (``None``: no padding).
            need_weights: also return the attention probabilities.

        Returns:
            ``[B, n, d]``, or ``(output, weights [B, H, n, n])`` with ``need_weights=True``.
        """
        if not need_weights:
            x = self.res_attn(x, lambda h: self.self_attn(h, labels, padding_mask))
            return self.res_ffn(x, self.ffn)
        box: list[Tensor] = []

        def attend(h: Tensor) -> Tensor:
            out, w = self.self_attn(h, labels, padding_mask, need_weights=True)
            box.append(w)
            return out

        x = self.res_attn(x, attend)
        return self.res_ffn(x, self.ffn), box[0]


class DecoderLayer(nn.Module):
    """Causal graph self-attention, cross-attention to the memory, FFN.

    Args:
        d_model: model width ``d``.
        num_heads: attention heads ``H``.
        ffn_dim: inner width of the feed-forward block.
        self_labels: label-table sizes of the causal self-attention, as :class:`GraphAttention`'s ``num_labels``.
        value_labels: also add label embeddings to the values.
        dropout: dropout on the residual branches and in the feed-forward block.
        attention_dropout: dropout on the attention probabilities.
        norm_first: pre-LN instead of post-LN.
        activation: ``"relu"`` or ``"gelu"``.
    """

    def __init__(
        self, d_model: int, num_heads: int, ffn_dim: int, self_labels, value_labels: bool = True,
        dropout: float = 0.1, attention_dropout: float = 0.0, norm_first: bool = True, activation: str = "relu",
    ) -> None:
        super().__init__()
        self.self_attn = GraphAttention(d_model, num_heads, self_labels, value_labels, attention_dropout)
        self.cross_attn = GraphAttention(d_model, num_heads, 0, False, attention_dropout)
        self.ffn = FeedForward(d_model, ffn_dim, dropout, activation)
        self.res_self = _Residual(d_model, dropout, norm_first)
        self.res_cross = _Residual(d_model, dropout, norm_first)
        self.res_ffn = _Residual(d_model, dropout, norm_first)

    def reset_parameters(self) -> None:
        for m in (self.self_attn, self.cross_attn, self.ffn):
            m.reset_parameters()
        for r in (self.res_self, self.res_cross, self.res_ffn):
            r.norm.reset_parameters()

    def extra_repr(self) -> str:
        """The layer's settings for ``repr``.

        Returns:
            The layer's settings, shown inside its ``repr``.
        """
        return f"norm_first={self.res_ffn.norm_first}"

    def forward(
        self, x: Tensor, self_labels: Tensor | None, memory: Tensor, memory_padding_mask: Tensor | None,
        tgt_padding_mask: Tensor | None = None, cache: tuple[KVCache, KVCache] | None = None,
    ) -> Tensor:
        """One decoder layer: causal self-attention, cross-attention to the memory, FFN.

        Args:
            x: ``[B, m, d]``.
            self_labels: causal labels ``[B|1, m, P+m]`` of the self-attention (``P`` cached positions), or ``None``.
            memory: the encoder output ``[B, n, d]``.
            memory_padding_mask: ``[B, n]`` bool, True = padding, or ``None``.
            tgt_padding_mask: ``[B, m]`` bool, True = padding (``None``: no padding).
            cache: ``(self, cross)`` :class:`KVCache` pair, extended in place (``None``: no cache).

        Returns:
            ``[B, m, d]``.
        """
        sc, cc = (None, None) if cache is None else cache
        x = self.res_self(x, lambda h: self.self_attn(h, self_labels, tgt_padding_mask, causal=True, cache=sc))
        x = self.res_cross(x, lambda h: self.cross_attn(h, None, memory_padding_mask, memory=memory, cache=cc))
        return self.res_ffn(x, self.ffn)


class _LayerStack(nn.Module):
    """``layers`` (an ``nn.ModuleList``) and ``norm``: a final LayerNorm of width ``d_model`` when pre-LN
    (``norm_first``), else the identity."""

    def __init__(self, layers: Iterable[nn.Module], d_model: int, norm_first: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()
        if isinstance(self.norm, nn.LayerNorm):
            self.norm.reset_parameters()

    def extra_repr(self) -> str:
        return f"num_layers={len(self.layers)}"


class GraphEncoder(_LayerStack):
    """A stack of :class:`EncoderLayer` (final LayerNorm when pre-LN). Bring your own embeddings.

    Args:
        num_layers: number of :class:`EncoderLayer`.
        d_model: model width ``d``.
        num_heads: attention heads ``H``.
        ffn_dim: inner width of the feed-forward blocks.
        num_labels: label-table sizes, as :class:`GraphAttention`'s ``num_labels``.
        value_labels: also add label embeddings to the values.
        dropout: dropout on residual branches and in the feed-forward blocks.
        attention_dropout: dropout on the attention probabilities.
        norm_first: pre-LN (with a final LayerNorm) instead of post-LN.
        activation: ``"relu"`` or ``"gelu"``.
    """

    def __init__(
        self, num_layers: int, d_model: int, num_heads: int, ffn_dim: int, num_labels,
        value_labels: bool = True, dropout: float = 0.1, attention_dropout: float = 0.0,
        norm_first: bool = True, activation: str = "relu",
    ) -> None:
        super().__init__((EncoderLayer(d_model, num_heads, ffn_dim, num_labels, value_labels, dropout,
                                       attention_dropout, norm_first, activation) for _ in range(num_layers)),
                         d_model, norm_first)

    def forward(
        self, x: Tensor, labels: Tensor | None = None, padding_mask: Tensor | None = None, need_weights: bool = False,
    ) -> Tensor | tuple[Tensor, list[Tensor]]:
        """``x [B, n, d]``, ``labels [B, C, n, n]`` -> ``[B, n, d]`` (padding rows zeroed).

        ``need_weights=True`` returns ``(output, weights)`` instead, ``weights[l]`` the
        self-attention probabilities ``[B, H, n, n]`` of layer ``l`` (see
        :meth:`EncoderLayer.forward`); the default return value is unchanged.

        Args:
            x: embedded inputs ``[B, n, d]``.
            labels: ``[B, C, n, n]`` integer labels, or ``None``.
            padding_mask: ``[B, n]`` bool, True = padding (``None``: no padding).
            need_weights: also return each layer's attention probabilities.

        Returns:
            ``[B, n, d]``, or ``(output, weights)`` with ``need_weights=True``.
        """
        if not (self.training or need_weights) and self._fusable():
            x = self._forward_fused(x, labels, padding_mask)
            if padding_mask is not None:
                x = x.masked_fill(padding_mask[..., None], 0.0)
            return x
        weights: list[Tensor] = []
        for layer in self.layers:
            if need_weights:
                x, w = layer(x, labels, padding_mask, need_weights=True)
                weights.append(w)
            else:
                x = layer(x, labels, padding_mask)
        x = self.norm(x)
        if padding_mask is not None:
            x = x.masked_fill(padding_mask[..., None], 0.0)
        return (x, weights) if need_weights else x

    def _fusable(self) -> bool:
        """Whether the fused loop computes what calling the layers would: plain :class:`EncoderLayer` s and no
        forward hook on a module it does not call (a layer, its residual wrappers and norms, the final norm)."""
        layers = list(self.layers)
        if not layers or any(type(la) is not EncoderLayer for la in layers):
            return False
        skipped = [self.norm, *(m for la in layers for m in (la, la.res_attn, la.res_ffn, la.res_attn.norm,
                                                                 la.res_ffn.norm))]
        return not has_forward_hooks(*skipped)

    def _forward_fused(self, x: Tensor, labels: Tensor | None, padding_mask: Tensor | None) -> Tensor:
        """The layers in eval mode (dropout off) with each residual add fused into the LayerNorm that reads
        it (:func:`g2gt.nn.residual_norm.add_layer_norm`); the same function as the layer-by-layer loop.
        Pre-LN: ``h = LN_1(x)``, then per layer ``x, h = x + attn(h), LN_2(...)`` and ``x, h = x + ffn(h),
        LN_next(...)`` (the next layer's first norm, or the final one). Post-LN: ``x = LN(x + f(x))``."""
        layers = list(self.layers)
        if not layers[0].res_attn.norm_first:
            for layer in layers:
                x = add_layer_norm(x, layer.self_attn(x, labels, padding_mask), layer.res_attn.norm)[1]
                x = add_layer_norm(x, layer.ffn(x), layer.res_ffn.norm)[1]
            return x
        h = add_layer_norm(x, None, layers[0].res_attn.norm)[1]
        for i, layer in enumerate(layers):
            x, h = add_layer_norm(x, layer.self_attn(h, labels, padding_mask), layer.res_ffn.norm)
            nxt = layers[i + 1].res_attn.norm if i + 1 < len(layers) else self.norm
            x, h = add_layer_norm(x, layer.ffn(h), nxt)
        return h


class GraphDecoder(_LayerStack):
    """A stack of :class:`DecoderLayer` with causal chain labels clipped at ``max_distance``.

    Args:
        num_layers: number of :class:`DecoderLayer`.
        d_model: model width ``d``.
        num_heads: attention heads ``H``.
        ffn_dim: inner width of the feed-forward blocks.
        max_distance: clip distance of the causal chain labels (``0``: no labels in self-attention).
        value_labels: also add label embeddings to the values.
        dropout: dropout on residual branches and in the feed-forward blocks.
        attention_dropout: dropout on the attention probabilities.
        norm_first: pre-LN (with a final LayerNorm) instead of post-LN.
        activation: ``"relu"`` or ``"gelu"``.
    """

    def __init__(
        self, num_layers: int, d_model: int, num_heads: int, ffn_dim: int, max_distance: int,
        value_labels: bool = True, dropout: float = 0.1, attention_dropout: float = 0.0,
        norm_first: bool = True, activation: str = "relu",
    ) -> None:
        sizes = num_chain_labels(max_distance) if max_distance > 0 else 0
        super().__init__((DecoderLayer(d_model, num_heads, ffn_dim, sizes, value_labels, dropout,
                                       attention_dropout, norm_first, activation) for _ in range(num_layers)),
                         d_model, norm_first)
        self.max_distance = max_distance

    def init_cache(self) -> list[tuple[KVCache, KVCache]]:
        """Empty per-layer (self, cross) caches for incremental decoding.

        Returns:
            One ``(self, cross)`` pair of empty :class:`KVCache` per layer.
        """
        return [(KVCache(), KVCache()) for _ in self.layers]

    def forward(
        self, x: Tensor, memory: Tensor, memory_padding_mask: Tensor | None = None,
        tgt_padding_mask: Tensor | None = None, cache: list[tuple[KVCache, KVCache]] | None = None,
    ) -> Tensor:
        """Decode target inputs against the memory.

        Args:
            x: embedded target inputs ``[B, m, d]``.
            memory: the encoder output ``[B, n, d]``.
            memory_padding_mask: ``[B, n]`` bool, True = padding (``None``: no padding).
            tgt_padding_mask: ``[B, m]`` bool, True = padding (``None``: no padding).
            cache: from :meth:`init_cache`, extended in place; positions continue after the cached ones (``None``: no
                cache).

        Returns:
            ``[B, m, d]``.
        """
        m = x.shape[1]
        offset = 0 if cache is None else cache[0][0].length
        labels = None
        if self.max_distance > 0:
            labels = relative_position_labels(m, self.max_distance, x.device, offset + m, offset)[None]
        for i, layer in enumerate(self.layers):
            x = layer(x, labels, memory, memory_padding_mask, tgt_padding_mask, None if cache is None else cache[i])
        return self.norm(x)
