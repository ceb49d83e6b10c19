r"""The enhanced-graph model: basic tree in (as attention label channels), enhanced graph out.

A sentence of ``n`` words is ``n + 1`` nodes (node 0 = ROOT). Node input:

    e_i = LN(E_word[lower(w_i)] + CharCNN(w_i) + E_upos[u_i] + E_rel[r_i])

where ``r_i`` is the basic relation of word ``i`` in the input tree. Three label channels enter every
attention score (:class:`g2gt.nn.GraphAttention`):

* ``position``: ``clip(j - i, -k, k) + k + 1`` (:func:`g2gt.core.graph.relative_position_labels`);
* ``tree``: the basic tree, ``1 + 2r`` on (dependent, head) and ``2 + 2r`` on (head, dependent), as the
  parser's dependency channel;
* ``path``: the tree relation of the pair up to two steps (:func:`tree_paths`): parent, child, sibling,
  grandparent, grandchild, aunt (a sibling of the parent), niece -- where enhanced edges live (controlled
  subjects are siblings, propagated conjunct heads are grandparents, ``ref`` goes to the grandparent).

After a :class:`g2gt.nn.layers.GraphEncoder`, the Dozat & Manning (2018) semantic-graph heads:

    s_ij     = d_i^T U h_j + w_d^T d_i + w_h^T h_j + b + β_tree[t_ij] + β_path[p_ij]
               + (P x_i)^T diag(w_{p_ij}) (Q x_j)                                             (edge logit)
    P(j -> i) = σ(s_ij)                                     (independent for every pair, ROOT included)
    s_ij^(l) = BiaffineLabel(i, j)_l + γ_tree[t_ij, l] + γ_path[p_ij, l]              (label template)

The last term is a low-rank bilinear form per tree path (:class:`PathBilinear`): it lets a pair's
score depend on its words *and* their tree relation jointly (an ``nsubj`` and an ``xcomp`` that are
siblings, a conjunct and its grandparent), which additive path biases cannot express.

Loss (summed over words): binary cross-entropy of every (word, candidate head) pair plus
``label_weight`` x the cross-entropy of the label template on every gold edge.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...core.graph import num_chain_labels, relative_position_labels
from ...nn.heads import MLP, BiaffineLabelScorer, CharCNNWordEncoder
from ...nn.layers import GraphEncoder
from .config import EnhancerConfig

__all__ = ["EnhancerConfig", "EnhancerModel", "BiaffineEdgeScorer", "PathBilinear", "tree_channel", "tree_paths",
           "NUM_PATHS", "PATH_NAMES"]

PATH_NAMES = ("none", "parent", "child", "sibling", "grandparent", "grandchild", "aunt", "niece")
NUM_PATHS = len(PATH_NAMES)


def tree_channel(heads: Tensor, rels: Tensor, words_mask: Tensor) -> Tensor:
    """Basic-tree labels ``[B, n, n]`` long: (dependent ``i``, head ``h``) gets ``1 + 2 r_i`` and
    (``h``, ``i``) gets ``2 + 2 r_i``; ``heads, rels [B, n]`` long, ``words_mask [B, n]`` True on words."""
    B, n = heads.shape
    out = torch.zeros(B, n, n, dtype=torch.long, device=heads.device)
    b, i = words_mask.nonzero(as_tuple=True)
    if b.numel():
        h = heads[b, i].clamp(0, n - 1)
        r = rels[b, i]
        out[b, h, i] = 2 + 2 * r
        out[b, i, h] = 1 + 2 * r
    return out


def tree_paths(heads: Tensor, words_mask: Tensor) -> Tensor:
    """Tree relation of every ordered pair ``(i, j)`` up to two steps, ``[B, n, n]`` long ids of
    :data:`PATH_NAMES` (0 = none of them; the first name that applies wins)::

        parent:      j = head(i)                 child:      i = head(j)
        sibling:     head(i) = head(j), i != j
        grandparent: j = head(head(i))           grandchild: i = head(head(j))
        aunt:        head(j) = head(head(i))     niece:      head(i) = head(head(j))
    """
    B, n = heads.shape
    P = torch.zeros(B, n, n, device=heads.device)
    b, i = words_mask.nonzero(as_tuple=True)
    if b.numel():
        P[b, i, heads[b, i].clamp(0, n - 1)] = 1.0
    G = P @ P  # grandparent
    rel = [None, P, P.transpose(1, 2), P @ P.transpose(1, 2), G, G.transpose(1, 2), G @ P.transpose(1, 2),
           P @ G.transpose(1, 2)]
    out = torch.zeros(B, n, n, dtype=torch.long, device=heads.device)
    for k in range(NUM_PATHS - 1, 0, -1):  # lowest id written last, so it wins
        out.masked_fill_(rel[k] > 0.5, k)
    out.masked_fill_(torch.eye(n, dtype=torch.bool, device=heads.device), 0)
    return out


class BiaffineEdgeScorer(nn.Module):
    r"""Edge logits ``s[b, i, j] = d_i^T U h_j + w_d^T d_i + w_h^T h_j + b`` for "``j`` is a head of ``i``".

    ``x [B, n, d]`` -> ``[B, n, n]`` (row = dependent, column = head). Unlike a head-selection scorer
    the dependent term and the bias matter: every pair is an independent sigmoid decision.
    """

    def __init__(self, in_dim: int, edge_dim: int = 256, dropout: float = 0.2, prior: float = -3.0) -> None:
        super().__init__()
        self.dep = MLP(in_dim, edge_dim, dropout)
        self.head = MLP(in_dim, edge_dim, dropout)
        self.U = nn.Parameter(torch.empty(edge_dim, edge_dim))
        self.w_dep = nn.Parameter(torch.empty(edge_dim))
        self.w_head = nn.Parameter(torch.empty(edge_dim))
        self.bias = nn.Parameter(torch.empty(()))
        self.prior = prior
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.dep.reset_parameters()
        self.head.reset_parameters()
        nn.init.zeros_(self.U)
        nn.init.zeros_(self.w_dep)
        nn.init.zeros_(self.w_head)
        nn.init.constant_(self.bias, self.prior)

    def extra_repr(self) -> str:
        return f"edge_dim={self.U.shape[0]}, prior={self.prior}"

    def forward(self, x: Tensor) -> Tensor:
        d = self.dep(x)
        h = self.head(x)
        s = torch.matmul(d @ self.U, h.transpose(1, 2))
        return s + (d @ self.w_dep)[:, :, None] + (h @ self.w_head)[:, None, :] + self.bias


class PathBilinear(nn.Module):
    r"""Path-typed low-rank bilinear edge term ``s[b, i, j] = Σ_k (P x_i)_k (Q x_j)_k w[p_ij, k]``.

    ``x [B, n, d]``, ``path [B, n, n]`` long in ``[0, num_paths)`` -> ``[B, n, n]``. Computed as one
    ``[B, n, r] x [B, r, n]`` product per path type, then gathered by ``path`` (no ``[B, n, n, r]`` tensor).
    """

    def __init__(self, in_dim: int, rank: int, num_paths: int) -> None:
        super().__init__()
        self.P = nn.Linear(in_dim, rank, bias=False)
        self.Q = nn.Linear(in_dim, rank, bias=False)
        self.w = nn.Parameter(torch.empty(num_paths, rank))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.P.weight)
        nn.init.xavier_uniform_(self.Q.weight)
        nn.init.zeros_(self.w)

    def extra_repr(self) -> str:
        return f"num_paths={self.w.shape[0]}, rank={self.w.shape[1]}"

    def forward(self, x: Tensor, path: Tensor) -> Tensor:
        p, q = self.P(x), self.Q(x).transpose(1, 2)  # [B, n, r], [B, r, n]
        per = torch.stack([(p * w) @ q for w in self.w], -1)  # [B, n, n, num_paths]
        return per.gather(-1, path[..., None]).squeeze(-1)


class EnhancerModel(nn.Module):
    """Basic tree -> enhanced graph (see the module docstring).

    Shapes: ``words, upos, heads, rels, word_types [B, n]`` long (node 0 = ROOT; ``heads``/``rels`` the
    input basic tree), ``char_ids [U, m]``, ``padding_mask [B, n]`` bool (True = pad).
    """

    def extra_repr(self) -> str:
        """The config's sizes (the submodules follow)."""
        c = self.config
        keys = ("d_model", "num_layers", "num_heads", "ffn_dim", "num_rels", "num_upos", "num_labels")
        return ", ".join(f"{k}={getattr(c, k)}" for k in keys if hasattr(c, k))

    def __init__(self, config: EnhancerConfig) -> None:
        super().__init__()
        self.config = c = config
        self.word_embed = nn.Embedding(c.num_words, c.d_model, padding_idx=0)
        self.char_encoder = CharCNNWordEncoder(c.num_chars, c.d_model, c.char_dim, c.char_filters)
        self.upos_embed = nn.Embedding(c.num_upos, c.d_model, padding_idx=0)
        self.rel_embed = nn.Embedding(c.num_rels, c.d_model, padding_idx=0)
        self.embed_norm = nn.LayerNorm(c.d_model)
        self.embed_dropout = nn.Dropout(c.dropout)
        self.num_tree_labels = 1 + 2 * c.num_rels
        sizes = [num_chain_labels(c.max_distance), self.num_tree_labels, NUM_PATHS]
        self.encoder = GraphEncoder(c.num_layers, c.d_model, c.num_heads, c.ffn_dim, sizes, c.value_labels,
                                    c.dropout, c.attention_dropout, True, c.activation)
        self.edge = BiaffineEdgeScorer(c.d_model, c.edge_dim, c.head_dropout)
        self.edge_tree_bias = nn.Embedding(self.num_tree_labels, 1)
        self.edge_path_bias = nn.Embedding(NUM_PATHS, 1)
        self.edge_path = PathBilinear(c.d_model, c.path_rank, NUM_PATHS) if c.path_rank > 0 else None
        self.label = BiaffineLabelScorer(c.d_model, c.num_labels, c.label_dim, c.head_dropout)
        self.label_tree_bias = nn.Embedding(self.num_tree_labels, c.num_labels)
        self.label_path_bias = nn.Embedding(NUM_PATHS, c.num_labels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        std = self.config.d_model ** -0.5
        for emb in (self.word_embed, self.upos_embed, self.rel_embed):
            nn.init.normal_(emb.weight, std=std)
            with torch.no_grad():
                emb.weight[0].zero_()
        self.char_encoder.reset_parameters()
        self.embed_norm.reset_parameters()
        self.encoder.reset_parameters()
        self.edge.reset_parameters()
        if self.edge_path is not None:
            self.edge_path.reset_parameters()
        self.label.reset_parameters()
        for emb in (self.edge_tree_bias, self.edge_path_bias, self.label_tree_bias, self.label_path_bias):
            nn.init.zeros_(emb.weight)

    # ------------------------------------------------------------------ pieces
    def pair_labels(self, heads: Tensor, rels: Tensor, padding_mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(labels [B, 3, n, n], tree [B, n, n], path [B, n, n])`` of the input tree."""
        n = heads.shape[1]
        words = ~padding_mask
        words[:, 0] = False
        tree = tree_channel(heads, rels, words)
        path = tree_paths(heads, words)
        pos = relative_position_labels(n, self.config.max_distance, heads.device).expand_as(tree)
        return torch.stack([pos, tree, path], 1), tree, path

    def encode(self, words: Tensor, char_ids: Tensor, word_types: Tensor, upos: Tensor, rels: Tensor,
               padding_mask: Tensor, labels: Tensor) -> Tensor:
        """Encoder states ``[B, n, d]``."""
        x = self.word_embed(words) + self.char_encoder(char_ids)[word_types] + self.upos_embed(upos) \
            + self.rel_embed(rels)
        x = self.embed_dropout(self.embed_norm(x))
        return self.encoder(x, labels, padding_mask)

    def edge_scores(self, h: Tensor, tree: Tensor, path: Tensor, padding_mask: Tensor) -> Tensor:
        """Edge logits ``[B, n, n]`` (row = dependent, column = head); ``-inf`` on padded columns and the
        diagonal."""
        s = self.edge(h) + self.edge_tree_bias(tree).squeeze(-1) + self.edge_path_bias(path).squeeze(-1)
        if self.edge_path is not None:
            s = s + self.edge_path(h, path)
        n = s.shape[-1]
        bad = padding_mask[:, None, :] | torch.eye(n, dtype=torch.bool, device=s.device)
        return s.masked_fill(bad, float("-inf"))

    def label_scores(self, proj: tuple[Tensor, Tensor], tree: Tensor, path: Tensor, b: Tensor, i: Tensor,
                     j: Tensor) -> Tensor:
        """Template scores ``[E, L]`` of the edges ``j -> i`` in sentence ``b`` (``[E]`` long each), from
        ``proj = self.label.project(h)``."""
        d, hh = proj
        if b.numel() == 0:
            return d.new_zeros(0, self.config.num_labels)
        E = b.numel()
        idx = torch.arange(E, device=b.device)[None]
        s = self.label.score(d[b, i][None], hh[b, j][None], idx)[0]
        return s + self.label_tree_bias(tree[b, i, j]) + self.label_path_bias(path[b, i, j])

    # ------------------------------------------------------------------ training
    def forward(self, words: Tensor, char_ids: Tensor, word_types: Tensor, upos: Tensor, heads: Tensor,
                rels: Tensor, padding_mask: Tensor, gold_edges: Tensor, gold_labels: Tensor) -> Tensor:
        """The summed training loss of a batch (one call per step, DDP-safe): edge binary cross-entropy
        over every (word, candidate head) pair + ``label_weight`` x label cross-entropy on the gold
        edges. ``gold_edges [B, n, n]`` bool, ``gold_labels [B, n, n]`` long (-100 = no label)."""
        labels, tree, path = self.pair_labels(heads, rels, padding_mask)
        h = self.encode(words, char_ids, word_types, upos, rels, padding_mask, labels)
        s = self.edge_scores(h, tree, path, padding_mask)
        n = s.shape[-1]
        valid = (~padding_mask)[:, :, None] & (~padding_mask)[:, None, :]
        valid[:, 0, :] = False
        valid &= ~torch.eye(n, dtype=torch.bool, device=s.device)
        loss = F.binary_cross_entropy_with_logits(s[valid].float(), gold_edges[valid].float(), reduction="sum")
        b, i, j = (gold_edges & (gold_labels >= 0)).nonzero(as_tuple=True)
        if b.numel():
            ls = self.label_scores(self.label.project(h), tree, path, b, i, j)
            loss = loss + self.config.label_weight * F.cross_entropy(ls.float(), gold_labels[b, i, j],
                                                                     reduction="sum")
        return loss
