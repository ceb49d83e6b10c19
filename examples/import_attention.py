"""Use g2gt.nn.GraphAttention inside your own nn.Module (runs as a script).

1. Each sentence pair (i, j) gets a label; here the clipped relative distance, so the
   layer is a Shaw-style relative-position self-attention.
2. An existing ``nn.MultiheadAttention(batch_first=True)`` becomes a ``MultiheadGraphAttention`` (a
   GraphAttention called like the MHA, labels by keyword) with ``GraphAttention.from_multihead_attention``:
   the same function (its label tables start at zero) until it is trained on graphs; ``attn_mask`` /
   ``is_causal`` work as in MHA.
"""

import torch
from torch import nn

from g2gt.core import num_chain_labels, relative_position_labels
from g2gt.nn import GraphAttention


class TinyEncoder(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 32, heads: int = 4, k: int = 3) -> None:
        super().__init__()
        self.k = k
        self.emb = nn.Embedding(vocab, dim)
        self.attn = GraphAttention(dim, heads, num_labels=num_chain_labels(k))
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:  # ids, pad: [B, n]
        x = self.emb(ids)
        labels = relative_position_labels(ids.shape[1], self.k, device=ids.device)[None]  # [1, n, n]
        return self.norm(x + self.attn(x, labels, key_padding_mask=pad))


def from_pretrained_mha(k: int = 3) -> None:
    """Swap an nn.MultiheadAttention for a relation-aware GraphAttention with the same weights."""
    mha = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    graph = GraphAttention.from_multihead_attention(mha, num_labels=num_chain_labels(k))
    x = torch.randn(2, 7, 32)
    causal = nn.Transformer.generate_square_subsequent_mask(7)  # float, -inf above the diagonal
    want, _ = mha(x, x, x, attn_mask=causal, need_weights=False)
    labels = relative_position_labels(7, k)[None]
    got, _ = graph(x, x, x, attn_mask=causal, need_weights=False, labels=labels)  # called like the MHA, + labels
    print("equals nn.MultiheadAttention before training:", torch.allclose(got, want, atol=1e-5))


if __name__ == "__main__":
    ids = torch.randint(1, 100, (2, 7))
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 5:] = True
    out = TinyEncoder()(ids, pad)
    out.sum().backward()
    print(out.shape, "finite:", bool(torch.isfinite(out).all()))
    from_pretrained_mha()
