"""The character tagger of the segmenter: a chain-graph Transformer over the characters of a window.

A window of ``n`` non-space characters (:meth:`g2gt.ud.tokenize.chars.CharVocab.compact`) is a linear-chain
graph (:func:`g2gt.chain_graph`): characters are the nodes and the pair ``(i, j)`` carries the clipped
relative distance ``clip(j - i, -k, k) + k + 1``, the labels a :class:`g2gt.core.graph.ChainChannel` gives.
The model::

    x_i      = sqrt(d) * (E_char[lower(c_i)] + E_class[class(c_i)]
                          + E_prev[class(c_{i-1})] + E_next[class(c_{i+1})]
                          + E_before[gap before c_i] + E_after[gap after c_i])  [B, n, d]
    h        = GraphEncoder(x, chain labels [1, 1, n, n], padding)             [B, n, d]
    logits_i = W h_i + b                                                       [B, n, 5]

over the labels of :data:`g2gt.ud.tokenize.config.LABEL_NAMES`. Models with a dictionary of words with spaces
(``space_words``) have one more gap type, a space inside a dictionary word (:mod:`g2gt.ud.tokenize.words`). The classes of the neighbouring characters
(padding class 0 at the window's edges) and the whitespace around it give every character its immediate
context from the first layer on
(is the next character a space, a period, a letter?), which the attention would otherwise have to find
first; training converges in far fewer updates with them. Every window shares one chain, so the labels
are one ``[1, 1, n, n]`` tensor that broadcasts over the batch (cached per length and device).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...core.graph import chain_labels, num_chain_labels
from ...nn.layers import GraphEncoder
from .chars import CLASSES, GAPS
from .config import NUM_LABELS, SegmenterConfig

__all__ = ["SegmenterConfig", "SegmenterModel"]


class SegmenterModel(nn.Module):
    """Per-character classifier: ``forward(chars, classes, before, after, padding_mask=None)``, all
    ``[B, n]`` -> logits ``[B, n, 5]``.

    >>> m = SegmenterModel(SegmenterConfig(vocab_size=10, d_model=32, num_layers=1, num_heads=2, ffn_dim=64))
    >>> x = torch.tensor([[2, 3, 4]])
    >>> m(x, torch.tensor([[3, 4, 11]]), torch.tensor([[4, 0, 0]]), torch.tensor([[0, 0, 4]])).shape
    torch.Size([1, 3, 5])
    """

    def __init__(self, config: SegmenterConfig) -> None:
        super().__init__()
        if config.vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2 (padding and unknown), got {config.vocab_size}")
        self.config = c = config
        self.char_embed = nn.Embedding(c.vocab_size, c.d_model, padding_idx=0)
        self.class_embed = nn.Embedding(len(CLASSES), c.d_model, padding_idx=0)
        self.prev_embed = nn.Embedding(len(CLASSES), c.d_model, padding_idx=0)
        self.next_embed = nn.Embedding(len(CLASSES), c.d_model, padding_idx=0)
        gaps = len(GAPS) + int(bool(c.space_words))  # + WORD_SPACE with a dictionary (g2gt.ud.tokenize.words)
        self.before_embed = nn.Embedding(gaps, c.d_model)
        self.after_embed = nn.Embedding(gaps, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.encoder = GraphEncoder(c.num_layers, c.d_model, c.num_heads, c.ffn_dim,
                                    [num_chain_labels(c.max_distance)], c.value_labels, c.dropout)
        self.classifier = nn.Linear(c.d_model, NUM_LABELS)
        self._chains: dict[tuple[int, str], Tensor] = {}
        self.reset_parameters()

    def reset_parameters(self) -> None:
        std = (6 * self.config.d_model) ** -0.5  # six tables add up to unit variance after sqrt(d)
        for emb in (self.char_embed, self.class_embed, self.prev_embed, self.next_embed):
            nn.init.normal_(emb.weight, std=std)
            with torch.no_grad():
                emb.weight[0].zero_()
        for emb in (self.before_embed, self.after_embed):
            nn.init.normal_(emb.weight, std=std)
        self.encoder.reset_parameters()
        nn.init.xavier_uniform_(self.classifier.weight)
        nn.init.zeros_(self.classifier.bias)

    def extra_repr(self) -> str:
        c = self.config
        return (f"vocab_size={c.vocab_size}, d_model={c.d_model}, layers={c.num_layers}, heads={c.num_heads}, "
                f"max_distance={c.max_distance}, window={c.window}")

    def chain_labels(self, n: int, device: torch.device) -> Tensor:
        """``[1, 1, n, n]`` uint8 chain labels of a window of ``n`` characters (cached)."""
        key = (n, str(device))
        lab = self._chains.get(key)
        if lab is None:
            lab = chain_labels(n, self.config.max_distance, device)
            if len(self._chains) > 16:
                self._chains.clear()
            self._chains[key] = lab
        return lab

    def forward(self, chars: Tensor, classes: Tensor, before: Tensor, after: Tensor,
                padding_mask: Tensor | None = None) -> Tensor:
        """``chars``, ``classes``, ``before``, ``after`` (gap ids): ``[B, n]`` long; ``padding_mask``:
        ``[B, n]`` bool, True = padding."""
        for name, t in (("classes", classes), ("before", before), ("after", after)):
            if t.shape != chars.shape:
                raise ValueError(f"chars {tuple(chars.shape)} and {name} {tuple(t.shape)} must have one shape")
        if padding_mask is not None:
            classes = classes.masked_fill(padding_mask, 0)
        prev = F.pad(classes[:, :-1], (1, 0))
        nxt = F.pad(classes[:, 1:], (0, 1))
        x = self.char_embed(chars) + self.class_embed(classes) + self.prev_embed(prev) + self.next_embed(nxt)
        x = x + self.before_embed(before) + self.after_embed(after)
        x = x * math.sqrt(self.config.d_model)
        x = self.dropout(x)
        h = self.encoder(x, self.chain_labels(chars.shape[1], chars.device), padding_mask)
        return self.classifier(h)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
