r"""Character transducers: a small :class:`~g2gt.nn.transformer.G2GTransformer` that rewrites one short string
as another, character by character (a form as its lemma, a multiword token as its words).

The source symbols form a chain graph: the pair ``(i, j)`` carries the clipped relative distance
``clip(j - i, -k, k)`` (:func:`g2gt.core.graph.relative_position_labels`), the same ``[1, 1, m, m]`` labels for
every row of a batch (:func:`g2gt.core.graph.chain_labels`). The decoder uses relative distances up to ``k`` too, and both stacks
add sinusoidal absolute positions, without which cross-attention has no way to find the next source character
to copy. One symbol table serves source, target and output (shared, tied embeddings).

Training minimises the summed token cross-entropy of the target given the source (teacher forcing,
:func:`transducer_loss`); inference decodes greedily over the KV cache
(:meth:`~g2gt.nn.transformer.G2GTransformer.generate`).

Shapes: ``src [B, m]``, ``tgt_in`` / ``tgt_out [B, t]`` long (``pad_id`` = padding) -> logits ``[B, t, V]``.
"""

from __future__ import annotations

from typing import Protocol

import torch.nn.functional as F
from torch import Tensor

from ..core.graph import chain_labels, num_chain_labels
from .transformer import G2GTConfig, G2GTransformer

__all__ = ["TransducerShape", "build_char_transducer", "transducer_loss"]


class TransducerShape(Protocol):
    """The fields a transducer's size is read from (the lemmatizer's and the expander's configs have them)."""

    vocab_size: int
    d_model: int
    num_heads: int
    num_layers: int
    ffn_dim: int
    dropout: float
    max_distance: int


def build_char_transducer(shape: TransducerShape, pad_id: int, bos_id: int, eos_id: int) -> G2GTransformer:
    """The encoder-decoder of ``shape``: ``num_layers`` layers in each stack, chain labels up to
    ``max_distance`` in both, sinusoidal positions, one tied symbol table of ``vocab_size``."""
    return G2GTransformer(G2GTConfig(
        src_vocab_size=shape.vocab_size, tgt_vocab_size=shape.vocab_size, d_model=shape.d_model,
        num_heads=shape.num_heads, num_encoder_layers=shape.num_layers, num_decoder_layers=shape.num_layers,
        ffn_dim=shape.ffn_dim, dropout=shape.dropout, num_labels=[num_chain_labels(shape.max_distance)],
        decoder_max_distance=shape.max_distance, value_labels=False, share_embeddings=True, tie_embeddings=True,
        positions="sinusoidal", pad_id=pad_id, bos_id=bos_id, eos_id=eos_id))


def transducer_loss(model: G2GTransformer, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, max_distance: int,
                    pad_id: int, label_smoothing: float = 0.0) -> Tensor:
    """Summed cross-entropy (float32) of ``tgt_out`` given ``src`` and the shifted target ``tgt_in``; padding
    (``pad_id``) is neither attended to nor scored."""
    src_mask = src == pad_id
    logits = model(src, chain_labels(src.shape[1], max_distance, src.device),
                   src_mask if bool(src_mask.any()) else None, tgt_in, tgt_in == pad_id)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=pad_id,
                           reduction="sum", label_smoothing=label_smoothing)
