"""The G2GTransformer: an encoder-decoder of graph-attention layers (:mod:`g2gt.nn.layers`) and its config.

The encoder reads tokens plus ``[B, C, n, n]`` labels; the decoder is causal with chain labels.
:meth:`G2GTransformer.generate` encodes a batch and decodes it greedily or with beam search
(:mod:`g2gt.nn.search`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core.config import DictConfig
from ..core.graph import num_chain_labels
from .attention import KVCache
from .layers import GraphDecoder, GraphEncoder
from .search import beam_search, greedy_search

__all__ = ["G2GTConfig", "G2GTransformer", "sinusoidal_positions"]


@dataclass
class G2GTConfig(DictConfig):
    """Hyper-parameters of :class:`G2GTransformer` (saved inside checkpoints; :meth:`from_dict` reads them).

    Args:
        src_vocab_size: source vocabulary size.
        tgt_vocab_size: target vocabulary size; ``0`` (default) builds an encoder-only model.
        d_model: model width ``d``.
        num_heads: attention heads ``H``.
        num_encoder_layers: encoder layers.
        num_decoder_layers: decoder layers.
        ffn_dim: inner width of the feed-forward blocks.
        dropout: dropout on residual branches and in the feed-forward blocks.
        attention_dropout: dropout on the attention probabilities.
        activation: ``"relu"`` or ``"gelu"``.
        num_labels: label-table size of each encoder label channel (e.g. ``[num_chain_labels(16)]`` for a
            sequence, plus a dependency channel), as :class:`GraphAttention`'s ``num_labels`` (default ``[]``: no
            labels).
        decoder_max_distance: clip distance of the decoder's causal chain labels (``0``: no labels in decoder
            self-attention).
        value_labels: also add label embeddings to the values.
        norm_first: pre-LN (LayerNorm before each sublayer, and a final one) instead of post-LN.
        positions: ``"none"`` (relative labels only), ``"sinusoidal"`` or ``"learned"`` absolute positions.
        max_positions: longest sequence with ``"learned"`` positions.
        tie_embeddings: the output projection shares the target embedding's weights.
        share_embeddings: source and target share one embedding table (a joint vocabulary).
        pad_id: id of padding.
        bos_id: id that starts decoding.
        eos_id: id that ends decoding.
    """

    src_vocab_size: int
    tgt_vocab_size: int = 0
    d_model: int = 512
    num_heads: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    ffn_dim: int = 2048
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation: str = "relu"
    num_labels: list[int] = field(default_factory=lambda: [num_chain_labels(16)])
    decoder_max_distance: int = 16
    value_labels: bool = True
    norm_first: bool = True
    positions: str = "none"
    max_positions: int = 1024
    tie_embeddings: bool = True
    share_embeddings: bool = False
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2


def sinusoidal_positions(positions: Tensor, dim: int) -> Tensor:
    """``[*, dim]`` sinusoidal encodings of integer positions (Vaswani et al. 2017)."""
    half = dim // 2
    freq = torch.exp(-math.log(10000.0) * torch.arange(half, device=positions.device, dtype=torch.float32) / half)
    ang = positions.float()[..., None] * freq
    out = torch.cat([ang.sin(), ang.cos()], -1)
    if dim % 2:
        out = F.pad(out, (0, 1))
    return out


class G2GTransformer(nn.Module):
    """Graph-to-sequence / sequence-to-sequence encoder-decoder with graph attention.

    The encoder reads tokens plus ``[B, C, n, n]`` labels (a chain channel makes it
    a relative-position Transformer); the decoder is causal with chain labels.

    >>> cfg = G2GTConfig(src_vocab_size=100, tgt_vocab_size=100, d_model=64, num_heads=4,
    ...                  num_encoder_layers=2, num_decoder_layers=2, ffn_dim=128)
    >>> model = G2GTransformer(cfg)

    Args:
        config: the hyper-parameters.
    """

    def extra_repr(self) -> str:
        """The model's settings for ``repr``.

        Returns:
            The layer's settings, shown inside its ``repr``.
        """
        c = self.config
        return (f"d_model={c.d_model}, num_heads={c.num_heads}, layers={c.num_encoder_layers}+{c.num_decoder_layers}, "
                f"ffn_dim={c.ffn_dim}, num_labels={list(c.num_labels)}, positions={c.positions!r}")

    def __init__(self, config: G2GTConfig) -> None:
        super().__init__()
        self.config = c = config
        if c.positions not in ("none", "sinusoidal", "learned"):
            raise ValueError(f"positions must be 'none', 'sinusoidal' or 'learned', got {c.positions!r}")
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.encoder = GraphEncoder(
            c.num_encoder_layers, c.d_model, c.num_heads, c.ffn_dim, list(c.num_labels), c.value_labels,
            c.dropout, c.attention_dropout, c.norm_first, c.activation,
        )
        self.pos_embed = nn.Embedding(c.max_positions, c.d_model) if c.positions == "learned" else None
        self.embed_dropout = nn.Dropout(c.dropout)
        self.decoder = None
        if c.tgt_vocab_size:
            if c.share_embeddings and c.src_vocab_size != c.tgt_vocab_size:
                raise ValueError("share_embeddings needs src_vocab_size == tgt_vocab_size")
            self.tgt_embed = self.src_embed if c.share_embeddings else nn.Embedding(
                c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
            self.decoder = GraphDecoder(
                c.num_decoder_layers, c.d_model, c.num_heads, c.ffn_dim, c.decoder_max_distance, c.value_labels,
                c.dropout, c.attention_dropout, c.norm_first, c.activation,
            )
            self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
            if c.tie_embeddings:
                self.output.weight = self.tgt_embed.weight
        self.reset_parameters()

    def reset_parameters(self) -> None:
        d = self.config.d_model
        nn.init.normal_(self.src_embed.weight, std=d**-0.5)
        nn.init.zeros_(self.src_embed.weight[self.config.pad_id])
        self.encoder.reset_parameters()
        if self.pos_embed is not None:
            nn.init.normal_(self.pos_embed.weight, std=d**-0.5)
        if self.decoder is not None:
            if self.tgt_embed is not self.src_embed:
                nn.init.normal_(self.tgt_embed.weight, std=d**-0.5)
                nn.init.zeros_(self.tgt_embed.weight[self.config.pad_id])
            self.decoder.reset_parameters()
            if not self.config.tie_embeddings:
                nn.init.normal_(self.output.weight, std=d**-0.5)

    def _embed(self, table: nn.Embedding, tokens: Tensor, offset: int = 0) -> Tensor:
        x = table(tokens) * math.sqrt(self.config.d_model)
        if self.config.positions != "none":
            last = int(offset) + tokens.shape[1] - 1  # on the host: reading pos[-1] would be a device sync
            if tokens.shape[1] and last >= self.config.max_positions and self.pos_embed is not None:
                raise ValueError(f"position {last} exceeds max_positions={self.config.max_positions}")
            pos = torch.arange(offset, offset + tokens.shape[1], device=tokens.device)
            pe = self.pos_embed(pos) if self.pos_embed is not None else sinusoidal_positions(pos, x.shape[-1])
            x = x + pe.to(x.dtype)
        return self.embed_dropout(x)

    def encode(self, tokens: Tensor, labels: Tensor | None = None, padding_mask: Tensor | None = None) -> Tensor:
        """``tokens [B, n]``, ``labels [B, C, n, n]`` -> memory ``[B, n, d]``.

        Args:
            tokens: source ids ``[B, n]``.
            labels: ``[B, C, n, n]`` integer labels, or ``None`` (no labels).
            padding_mask: ``[B, n]`` bool, True = padding (``None``: no padding).

        Returns:
            The memory ``[B, n, d]``.
        """
        return self.encoder(self._embed(self.src_embed, tokens), labels, padding_mask)

    def init_cache(self) -> list[tuple[KVCache, KVCache]]:
        """Empty per-layer (self, cross) caches for incremental decoding.

        Returns:
            One ``(self, cross)`` pair of empty :class:`KVCache` per decoder layer.
        """
        return self.decoder.init_cache()

    def decode(
        self, tokens: Tensor, memory: Tensor, memory_padding_mask: Tensor | None = None,
        tgt_padding_mask: Tensor | None = None, cache: list[tuple[KVCache, KVCache]] | None = None,
    ) -> Tensor:
        """``tokens [B, m]`` (the new tokens when ``cache`` holds earlier ones) -> logits ``[B, m, V]``.

        Args:
            tokens: target ids ``[B, m]``.
            memory: the encoder output ``[B, n, d]``.
            memory_padding_mask: ``[B, n]`` bool, True = padding (``None``: no padding).
            tgt_padding_mask: ``[B, m]`` bool, True = padding (``None``: no padding).
            cache: from :meth:`init_cache`, extended in place (``None``: decode ``tokens`` from the start).

        Returns:
            Logits ``[B, m, V]``.
        """
        if self.decoder is None:
            raise RuntimeError("this G2GTransformer is encoder-only (tgt_vocab_size=0)")
        offset = 0 if cache is None else cache[0][0].length
        x = self._embed(self.tgt_embed, tokens, offset)
        h = self.decoder(x, memory, memory_padding_mask, tgt_padding_mask, cache)
        return self.output(h)

    def forward(
        self, src_tokens: Tensor, src_labels: Tensor | None, src_padding_mask: Tensor | None,
        tgt_tokens: Tensor, tgt_padding_mask: Tensor | None = None,
    ) -> Tensor:
        """Teacher-forced logits ``[B, m, V]`` for target inputs ``tgt_tokens [B, m]``.

        Args:
            src_tokens: source ids ``[B, n]``.
            src_labels: ``[B, C, n, n]`` integer labels, or ``None``.
            src_padding_mask: ``[B, n]`` bool, True = padding, or ``None``.
            tgt_tokens: target inputs ``[B, m]`` (BOS first).
            tgt_padding_mask: ``[B, m]`` bool, True = padding (``None``: no padding).

        Returns:
            Logits ``[B, m, V]``.
        """
        memory = self.encode(src_tokens, src_labels, src_padding_mask)
        return self.decode(tgt_tokens, memory, src_padding_mask, tgt_padding_mask)

    @torch.no_grad()
    def generate(
        self, src_tokens: Tensor, src_labels: Tensor | None = None, src_padding_mask: Tensor | None = None, *,
        max_new_tokens: int, beam: int = 1, length_penalty: float = 1.0,
    ) -> list[list[int]]:
        """Encode a batch of sources and decode each one (as nanoGPT's ``generate``, without sampling).

        ``src_tokens [B, n]``, ``src_labels [B, C, n, n]`` (or ``None``), ``src_padding_mask [B, n]`` bool
        (True = padding) -> per source the generated token ids, without BOS and EOS, at most
        ``max_new_tokens`` of them. ``beam = 1``: greedy search, ``y_t = argmax_v p(v | y_<t, x)``;
        ``beam = K > 1``: beam search ranking hypotheses by ``log p(y | x) / |y| ** length_penalty``
        (:func:`g2gt.nn.search.beam_search`). Decoding starts from ``config.bos_id`` and stops at
        ``config.eos_id``; it runs in eval mode (no dropout) whatever the model's mode, which is restored.

        Args:
            src_tokens: source ids ``[B, n]``.
            src_labels: ``[B, C, n, n]`` integer labels (``None``: no labels).
            src_padding_mask: ``[B, n]`` bool, True = padding (``None``: no padding).
            max_new_tokens: most tokens generated per source.
            beam: beam size; ``1`` (default): greedy search.
            length_penalty: exponent of the length normalisation in beam search.

        Returns:
            Per source, the generated token ids without BOS and EOS.
        """
        if self.decoder is None:
            raise RuntimeError("this G2GTransformer is encoder-only (tgt_vocab_size=0): it cannot generate")
        if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
            raise ValueError(f"beam must be an integer >= 1 (1 = greedy search), got {beam!r}")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
        c = self.config
        was = self.training
        self.eval()
        try:
            memory = self.encode(src_tokens, src_labels, src_padding_mask)
            if beam == 1:
                return greedy_search(self, memory, src_padding_mask, max_new_tokens, c.bos_id, c.eos_id)
            return beam_search(self, memory, src_padding_mask, max_new_tokens, c.bos_id, c.eos_id,
                               beam_size=beam, length_penalty=length_penalty)
        finally:
            self.train(was)
