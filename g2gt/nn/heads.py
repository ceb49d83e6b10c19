r"""Output heads for graph prediction: biaffine arc / label scorers, a tagger and a
character-level word encoder.

Biaffine arc scorer (Dozat & Manning 2017). For encoder states :math:`x_i`,

.. math::

    d_i = \mathrm{MLP}_{dep}(x_i),\qquad h_j = \mathrm{MLP}_{head}(x_j),\qquad
    s_{ij} = d_i^\top U h_j + h_j^\top u

is the score of "node :math:`j` is the head of node :math:`i`" (row = dependent,
column = head, the layout :func:`g2gt.ud.parse.trees.mst_decode` expects).

Biaffine label classifier: for a dependent :math:`i` and its (gold or
predicted) head :math:`j`,

.. math::

    s_{ij}^{(r)} = d_i^\top U^{(r)} h_j + w^{(r)\top} [d_i; h_j] + b^{(r)}.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..core import runtime

__all__ = ["MLP", "BiaffineArcScorer", "BiaffineLabelScorer", "Tagger", "CharCNNWordEncoder", "CPU_CHUNK_ELEMENTS"]

#: on the CPU, :meth:`BiaffineLabelScorer.score` makes its ``[N, L * r]`` intermediate this many elements at a time
#: (4 MB of float32): whole, it is the largest tensor of a parser batch (32 MB for 2,400 words and 54 relations),
#: and the host allocator's free space splits on such one-off sizes, so a long run's peak memory would creep up
CPU_CHUNK_ELEMENTS = 1 << 20


class MLP(nn.Module):
    """``Dropout(act(W x + b))`` — one hidden layer projection used before biaffine scoring."""

    def __init__(self, in_dim: int, out_dim: int, dropout: float = 0.0, activation: str = "leaky_relu") -> None:
        super().__init__()
        self.linear = nn.Linear(in_dim, out_dim)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.linear.weight)
        nn.init.zeros_(self.linear.bias)

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}, dropout={self.dropout.p}"

    def forward(self, x: Tensor) -> Tensor:
        """``[*, in_dim] -> [*, out_dim]``."""
        y = self.linear(x)
        y = F.leaky_relu(y, 0.1) if self.activation == "leaky_relu" else F.gelu(y)
        return self.dropout(y)


class BiaffineArcScorer(nn.Module):
    r"""Head-selection scores ``s[b, i, j] = d_i^T U h_j + h_j^T u``.

    Args:
        in_dim: encoder width ``d``.
        arc_dim: width of the dependent / head MLPs.
        dropout: dropout after the MLPs.

    Shapes: ``x [B, n, d]`` -> scores ``[B, n, n]`` (row = dependent, column = head);
    padded columns are set to ``-inf`` when ``padding_mask [B, n]`` (True = pad) is given.
    """

    def __init__(self, in_dim: int, arc_dim: int = 256, dropout: float = 0.2) -> None:
        super().__init__()
        self.dep = MLP(in_dim, arc_dim, dropout)
        self.head = MLP(in_dim, arc_dim, dropout)
        self.U = nn.Parameter(torch.empty(arc_dim, arc_dim))
        self.u = nn.Parameter(torch.empty(arc_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.dep.reset_parameters()
        self.head.reset_parameters()
        nn.init.zeros_(self.U)  # Dozat & Manning start from zero biaffine weights
        nn.init.zeros_(self.u)

    def extra_repr(self) -> str:
        return f"arc_dim={self.U.shape[0]}"

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        d = self.dep(x)  # [B, n, a]
        h = self.head(x)  # [B, n, a]
        scores = torch.matmul(d @ self.U, h.transpose(1, 2)) + (h @ self.u)[:, None, :]
        if padding_mask is not None:
            scores = scores.masked_fill(padding_mask[:, None, :], float("-inf"))
        return scores


class BiaffineLabelScorer(nn.Module):
    r"""Relation scores for given (dependent, head) pairs.

    ``s^{(r)}_{ij} = d_i^T U^{(r)} h_j + w^{(r)T}[d_i; h_j] + b^{(r)}``.

    Shapes: ``x [B, n, d]``, ``heads [B, n]`` long (index of each node's head) ->
    ``[B, n, num_labels]``.
    """

    def __init__(self, in_dim: int, num_labels: int, label_dim: int = 128, dropout: float = 0.2) -> None:
        super().__init__()
        self.num_labels = num_labels
        self.dep = MLP(in_dim, label_dim, dropout)
        self.head = MLP(in_dim, label_dim, dropout)
        self.U = nn.Parameter(torch.empty(num_labels, label_dim, label_dim))
        self.W = nn.Linear(2 * label_dim, num_labels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.dep.reset_parameters()
        self.head.reset_parameters()
        nn.init.zeros_(self.U)
        nn.init.xavier_uniform_(self.W.weight)
        nn.init.zeros_(self.W.bias)

    def extra_repr(self) -> str:
        return f"num_labels={self.num_labels}, label_dim={self.U.shape[1]}"

    def project(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Dependent and head representations ``([B, n, r], [B, n, r])`` (compute once, score many)."""
        return self.dep(x), self.head(x)

    def score(self, d: Tensor, h_all: Tensor, heads: Tensor) -> Tensor:
        """Scores ``[B, n, L]`` given projected ``d, h_all [B, n, r]`` and ``heads [B, n]``."""
        h = h_all.gather(1, heads.clamp(min=0)[..., None].expand(-1, -1, h_all.shape[-1]))  # [B, n, r]
        L, r, s = self.U.shape
        lead = d.shape[:-1]
        # one GEMM [N, r] x [r, L*s], then a batched dot with h: cheaper than a generic einsum; on the CPU in
        # row blocks of CPU_CHUNK_ELEMENTS (each row's numbers are the same either way)
        dd, hh, Uf = d.reshape(-1, r), h.reshape(-1, s, 1), self.U.permute(1, 0, 2).reshape(r, L * s)
        N = dd.shape[0]
        rows = max(1, CPU_CHUNK_ELEMENTS // (L * s)) if d.device.type == "cpu" else N
        if N <= rows:
            bil = torch.bmm((dd @ Uf).view(-1, L, s), hh)
        else:
            bil = torch.cat([torch.bmm((dd[i : i + rows] @ Uf).view(-1, L, s), hh[i : i + rows])
                             for i in range(0, N, rows)])
        return bil.view(*lead, L) + self.W(torch.cat([d, h], -1))

    def forward(self, x: Tensor, heads: Tensor) -> Tensor:
        d, h = self.project(x)
        return self.score(d, h, heads)


class Tagger(nn.Module):
    """Per-node classifier (e.g. UPOS): ``Linear(Dropout(MLP(x)))``. ``[B, n, d] -> [B, n, num_tags]``."""

    def __init__(self, in_dim: int, num_tags: int, hidden: int = 256, dropout: float = 0.2) -> None:
        super().__init__()
        self.mlp = MLP(in_dim, hidden, dropout)
        self.out = nn.Linear(hidden, num_tags)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.mlp.reset_parameters()
        nn.init.xavier_uniform_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def extra_repr(self) -> str:
        return f"num_tags={self.out.out_features}"

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.mlp(x))


class CharCNNWordEncoder(nn.Module):
    r"""Word vectors from characters: embed, convolve, max-pool, project.

    For a word with character embeddings :math:`c_1..c_m`, filters of width
    ``kernel`` give :math:`z_t = \mathrm{ReLU}(W[c_{t-k/2}..c_{t+k/2}] + b)` and the
    word vector is :math:`P\,\max_t z_t`. Character id 0 is padding (ignored by
    the max-pool).

    The convolution runs as one matrix product over the real characters only (each character's window of
    ``kernel`` embeddings, concatenated, times the filters reshaped to ``[filters, kernel * char_dim]``), and
    the max-pool as a scatter-max into each word: no work for the padding of a batch whose longest word is
    much longer than the others, and on CPU several times faster than a padded ``conv1d`` in bfloat16. The
    weights are ``nn.Conv1d``'s (``conv.weight [filters, char_dim, kernel]``); the function is the same.
    Selecting the real characters reads their count on the host, so off the CPU (where that is a sync that
    stalls the GPU's queue every forward, :func:`g2gt.core.runtime.host_reads_are_free`) the product runs over
    every position, the padding masked out of the max.

    Shapes: ``chars [N, m]`` long -> ``[N, out_dim]``.
    """

    def __init__(self, num_chars: int, out_dim: int, char_dim: int = 64, filters: int = 256,
                 kernel: int = 3, dropout: float = 0.0) -> None:
        super().__init__()
        self.embed = nn.Embedding(num_chars, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, filters, kernel, padding=kernel // 2)
        self.proj = nn.Linear(filters, out_dim)
        self.dropout = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.embed.weight, std=self.embed.embedding_dim**-0.5)
        with torch.no_grad():
            self.embed.weight[0].zero_()
        self.conv.reset_parameters()
        nn.init.xavier_uniform_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)

    def extra_repr(self) -> str:
        return f"kernel={self.conv.kernel_size[0]}, filters={self.conv.out_channels}, dropout={self.dropout.p}"

    def forward(self, chars: Tensor) -> Tensor:
        if chars.numel() == 0:
            return self.proj.weight.new_zeros(chars.shape[0], self.proj.out_features)
        n, m = chars.shape
        k = self.conv.kernel_size[0]
        left = k // 2
        e = F.pad(self.dropout(self.embed(chars)), (0, 0, left, k - 1 - left))  # [N, m + k - 1, c]
        real = chars != 0
        filters = self.conv.weight.permute(0, 2, 1).reshape(self.conv.out_channels, -1)  # [f, k * c]
        if not runtime.host_reads_are_free(chars):
            windows = torch.cat([e[:, t:t + m] for t in range(k)], -1)  # [N, m, k * c]
            z = F.linear(windows, filters, self.conv.bias).masked_fill(~real[..., None], 0.0)  # [N, m, f]
            # max over the real characters and the 0 floor (the scatter-max's start): ReLU(max) = max(ReLU)
            return self.proj(z.amax(1).clamp_min(0.0))
        word = real.nonzero()[:, 0]  # [P]: the word of each real character
        windows = torch.cat([e[:, t:t + m][real] for t in range(k)], -1)  # [P, k * c]
        z = F.linear(windows, filters, self.conv.bias)  # [P, f], before the ReLU
        # max over each word's characters; ReLU(max) = max(ReLU), and the zeros it starts from are ReLU's floor
        pooled = z.new_zeros(n, z.shape[1]).scatter_reduce_(0, word[:, None].expand_as(z), z, "amax")
        return self.proj(pooled)  # [N, out_dim]
