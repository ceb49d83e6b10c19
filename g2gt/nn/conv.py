r"""G2GConv: graph-to-graph attention as a PyG :class:`~torch_geometric.nn.MessagePassing` layer.

For a target node :math:`i`, its incoming edges :math:`j \to i` with integer
types :math:`t^c_{ij}` in label channels :math:`c = 1..C`, and head :math:`h`:

.. math::

    e_{ij} = \frac{q_i \cdot \big(k_j + \sum_c a^{K,c}_{t^c_{ij}}\big)}{\sqrt{d_h}},
    \qquad
    \alpha_{ij} = \operatorname{softmax}_{j \in \mathcal{N}(i)} e_{ij},

.. math::

    m_i = \sum_{j \in \mathcal{N}(i)} \alpha_{ij}\,\big(v_j + \sum_c a^{V,c}_{t^c_{ij}}\big)
    \quad\text{(value term optional)},
    \qquad
    x'_i = \operatorname{concat}_h m_i^{(h)} \;\big(\text{or } \operatorname{mean}_h\big) \;+\; x_i W_R
    \quad\text{(root weight optional)},

with :math:`q = x W_Q` (targets), :math:`k = x W_K`, :math:`v = x W_V`
(sources), :math:`d_h` = ``out_channels`` per head, and label tables
:math:`a^{K,c}, a^{V,c} \in \mathbb{R}^{L_c \times d_h}` shared across heads, exactly
as in :class:`g2gt.nn.GraphAttention` (or one table per head with
``shared_labels=False``, which is what :class:`~torch_geometric.nn.TransformerConv`
with one-hot ``edge_attr`` computes).  This is the sparse form of
:class:`~g2gt.nn.GraphAttention`: on a complete graph (self-loops included) with
``edge_type[e] = labels[i, j]`` for the edge ``e = (j -> i)`` it gives the same
result before GraphAttention's output projection ``out_proj``.

**Edge direction.**  PyG's default ``flow="source_to_target"`` is kept:
``edge_index[0]`` are sources (keys / values) and ``edge_index[1]`` targets
(queries), so ``edge_type`` of edge ``(j, i)`` plays the role of
GraphAttention's ``labels[i, j]``.  A :class:`g2gt.Graph` edge channel stores
``(row=query, col=key)`` pairs; feed it with ``edge_index.flip(0)`` (or build the
layer with ``flow="target_to_source"``) to keep the dense meaning.  For
dependency graphs, which hold both directions with distinct ``rel↑`` / ``rel↓``
labels, either choice is a consistent model.

**Relative positions.**  For sequence-like graphs add a channel with the
clipped relative distance ``clip(j - i, -k, k) + k + 1`` of each edge
(``num_edge_labels=[L_dep, g2gt.core.num_chain_labels(k)]``,
``edge_type = torch.stack([dep_type, rel], 1)``).  For a single sequence take it
from the dense matrix, ``g2gt.core.relative_position_labels(n, k)[edge_index[1],
edge_index[0]]``; for a PyG mini-batch use :func:`edge_relative_positions` with
each node's position inside its own graph (no ``n x n`` matrix is built).

**Cost.**  Nothing of size ``N x N`` and no ``[E, H, d]`` tensor is kept: the
default ``fused=True`` path runs the score ``q_i · k_j`` and the aggregation
``Σ α v_j`` as two chunked edge kernels (gather, multiply, ``index_add_``) with
hand-written backward passes that recompute the per-edge gathers, so autograd
keeps only ``[E, H]`` scores / weights and the ``[N, H, d]`` projections.  The
label terms never form an ``[E, H*d]`` edge projection (as TransformerConv's
``lin_edge`` does): when ``N·L <= E·d_h`` they are computed as in
GraphAttention, ``q @ a^K.T`` (``[N, L, H]``) gathered per edge and the weights
scattered by label into ``[N, L, H]`` then multiplied by ``a^V``; otherwise the
``[L, d_h]`` rows are gathered per edge inside the two kernels and broadcast
over heads (the attribute ``label_path`` = ``"auto"`` / ``"dense"`` / ``"edge"``
picks).  ``fused=False`` runs the same math through
:meth:`MessagePassing.propagate` / :meth:`message` (hooks, explainers), with
``O(E·H·d)`` autograd memory.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.nn.dense.linear import Linear
from torch_geometric.utils import softmax

from .attention import label_offsets, label_table_sizes

__all__ = ["G2GConv", "edge_relative_positions", "node_positions"]

# edges per chunk of the fused kernels: the transient [chunk, H, d] gathers stay small
_CHUNK_ELEMENTS = 1 << 22


def node_positions(batch: Tensor | None, num_nodes: int, ptr: Tensor | None = None) -> Tensor:
    """``[N]`` long: each node's index inside its own graph of a PyG mini-batch.

    ``batch``: ``[N]`` graph id of every node (sorted, as PyG's ``Batch`` makes it),
    or ``None`` for a single graph. ``ptr`` (``[B+1]``), when given, saves a cumsum.
    """
    if batch is None:
        return torch.arange(num_nodes)
    if ptr is None:
        counts = torch.bincount(batch, minlength=int(batch.max()) + 1 if batch.numel() else 0)
        ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return torch.arange(num_nodes, device=batch.device) - ptr[batch]


def edge_relative_positions(edge_index: Tensor, position: Tensor, max_distance: int) -> Tensor:
    """Chain labels of edges: ``clip(pos[j] - pos[i], -k, k) + k + 1`` for edge ``j -> i``.

    Same ids as :func:`g2gt.core.relative_position_labels` (``1 .. 2k+1``; table size
    :func:`g2gt.core.num_chain_labels`), read at ``[target, source]``.

    Args:
        edge_index: ``[2, E]`` (source, target).
        position: ``[N]`` position of each node in its sequence (see :func:`node_positions`).
        max_distance: clip distance ``k``.

    Returns:
        ``[E]`` long.
    """
    if max_distance < 1:
        raise ValueError(f"max_distance must be >= 1, got {max_distance}")
    pos = position.to(edge_index.device)
    rel = (pos[edge_index[0]] - pos[edge_index[1]]).clamp(-max_distance, max_distance)
    return rel + max_distance + 1


# ---------------------------------------------------------------------- fused edge kernels
def _chunks(E: int, per_edge: int) -> list[tuple[int, int]]:
    step = max(1, _CHUNK_ELEMENTS // max(1, per_edge))
    return [(s, min(E, s + step)) for s in range(0, E, step)] or [(0, 0)]


def _gather(x: Tensor, table: Tensor | None, src: Tensor, types: Tensor | None, a: int, b: int) -> Tensor:
    """``x[src_e] + Σ_c A[t_ec]`` for the edges ``a..b-1``: ``[b - a, H, d]`` (``x [N, H, d]``, the label table
    ``A [T, H|1, d]`` broadcast over heads when it has one row per label, ``types [E, C]``)."""
    out = x.index_select(0, src[a:b])
    if table is not None:
        for c in range(types.shape[1]):
            out = out + table.index_select(0, types[a:b, c])
    return out


def _label_grad(gt: Tensor, types: Tensor, a: int, b: int, g: Tensor) -> None:
    """Add the gradient ``g [b - a, H, d]`` of the edges ``a..b-1`` into the label rows ``t_ec`` of ``gt``
    (summed over heads first when the table is shared by the heads, ``[T, 1, d]``)."""
    if gt.shape[1] == 1:
        g = g.sum(1, keepdim=True)
    for c in range(types.shape[1]):
        gt.index_add_(0, types[a:b, c], g)


class _EdgeScore(torch.autograd.Function):
    r"""``s[e, h] = q[dst_e, h] · (k[src_e, h] + Σ_c A[t_ec, h|0])`` (chunked, O(E·H) saved)."""

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, table: Tensor | None, dst: Tensor, src: Tensor, types: Tensor | None):
        E = dst.numel()
        H, d = q.shape[1], q.shape[2]
        out = q.new_empty(E, H)
        for a, b in _chunks(E, H * d):
            out[a:b] = (q.index_select(0, dst[a:b]) * _gather(k, table, src, types, a, b)).sum(-1)
        ctx.save_for_backward(q, k, table, dst, src, types)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor):
        q, k, table, dst, src, types = ctx.saved_tensors
        E = dst.numel()
        H, d = q.shape[1], q.shape[2]
        need_q, need_k, need_t = ctx.needs_input_grad[:3]
        gq = torch.zeros_like(q) if need_q else None
        gk = torch.zeros_like(k) if need_k else None
        gt = torch.zeros_like(table) if (need_t and table is not None) else None
        for a, b in _chunks(E, H * d):
            g = grad[a:b].unsqueeze(-1)  # [c, H, 1]
            qd = q.index_select(0, dst[a:b])
            if gq is not None:
                gq.index_add_(0, dst[a:b], g * _gather(k, table, src, types, a, b))
            gqd = g * qd
            if gk is not None:
                gk.index_add_(0, src[a:b], gqd)
            if gt is not None:
                _label_grad(gt, types, a, b, gqd)
        return gq, gk, gt, None, None, None


class _EdgeAggregate(torch.autograd.Function):
    r"""``m[i, h] = Σ_{e: dst_e = i} w[e, h] (v[src_e, h] + Σ_c A[t_ec, h|0])`` (chunked)."""

    @staticmethod
    def forward(ctx, w: Tensor, v: Tensor, table: Tensor | None, dst: Tensor, src: Tensor,
                types: Tensor | None, num_dst: int):
        E = dst.numel()
        H, d = v.shape[1], v.shape[2]
        out = v.new_zeros(num_dst, H, d)
        for a, b in _chunks(E, H * d):
            out.index_add_(0, dst[a:b], w[a:b].unsqueeze(-1) * _gather(v, table, src, types, a, b))
        ctx.save_for_backward(w, v, table, dst, src, types)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad: Tensor):
        w, v, table, dst, src, types = ctx.saved_tensors
        E = dst.numel()
        H, d = v.shape[1], v.shape[2]
        need_w, need_v, need_t = ctx.needs_input_grad[:3]
        gw = torch.empty_like(w) if need_w else None
        gv = torch.zeros_like(v) if need_v else None
        gt = torch.zeros_like(table) if (need_t and table is not None) else None
        for a, b in _chunks(E, H * d):
            go = grad.index_select(0, dst[a:b])  # [c, H, d]
            if gw is not None:
                gw[a:b] = (go * _gather(v, table, src, types, a, b)).sum(-1)
            if gv is not None or gt is not None:
                wgo = w[a:b].unsqueeze(-1) * go
                if gv is not None:
                    gv.index_add_(0, src[a:b], wgo)
                if gt is not None:
                    _label_grad(gt, types, a, b, wgo)
        return gw, gv, gt, None, None, None, None


# ---------------------------------------------------------------------- the layer
class G2GConv(MessagePassing):
    r"""Relation-aware multi-head attention over the edges of a graph (see module docstring).

    Shapes:
        - x: ``[N, in]`` or ``([N_src, in_src], [N_dst, in_dst])``
        - edge_index: ``[2, E]`` long (source, target)
        - edge_type: ``[E]`` or ``[E, C]`` long
        - output: ``[N_dst, H*d_h]`` (``concat``) or ``[N_dst, d_h]``; with
          ``return_attention_weights`` also ``(edge_index, alpha [E, H])`` where
          ``alpha`` sums to 1 over each target's incoming edges (before dropout).

    Parameters (names as in :class:`g2gt.nn.GraphAttention` where they coincide):
        ``q_proj`` (targets), ``k_proj``, ``v_proj`` (sources), ``lin_skip``,
        ``label_key`` ``[L_total, d_h]`` and ``label_value`` (channel tables stacked, see
        ``label_offsets``).

    Args:
        in_channels: input width, ``-1`` for lazy initialisation, or a ``(source,
            target)`` pair for bipartite graphs.
        out_channels: width per head ``d_h``.
        heads: number of heads ``H``.
        concat: concatenate the heads (output ``H*d_h``) or average them (``d_h``); the fourth
            positional argument, as in PyG's ``GATConv`` / ``TransformerConv``. Everything after it is
            keyword-only.
        num_edge_labels: label-table size ``L`` (``edge_type [E]`` in ``[0, L)``), or a
            sequence of ``C`` sizes, one per channel (``edge_type [E, C]``); ``0`` /
            ``None`` / ``[]`` for no labels (plain dot-product graph attention).
        value_labels: also add the label embeddings to the values.
        dropout: dropout on the attention weights (training only).
        root_weight: add the skip term ``x_i W_R`` (``lin_skip``), as TransformerConv.
        bias: biases in the projections.
        shared_labels: one ``[L, d_h]`` table shared by the heads (as GraphAttention);
            ``False`` gives one table per head, ``[L, H*d_h]``.
        fused: use the chunked O(E·H)-memory kernels (default) instead of
            :meth:`propagate` / :meth:`message`.
        **kwargs: passed to :class:`~torch_geometric.nn.MessagePassing` (e.g. ``flow``).
    """

    def __init__(
        self,
        in_channels: int | tuple[int, int],
        out_channels: int,
        heads: int = 1,
        concat: bool = True,
        *,
        num_edge_labels: int | Sequence[int] | None = 0,
        value_labels: bool = True,
        dropout: float = 0.0,
        root_weight: bool = True,
        bias: bool = True,
        shared_labels: bool = True,
        fused: bool = True,
        **kwargs,
    ) -> None:
        kwargs.setdefault("aggr", "add")
        super().__init__(node_dim=0, **kwargs)
        if heads < 1 or out_channels < 1:
            raise ValueError(f"heads and out_channels must be >= 1, got heads={heads}, out_channels={out_channels}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.heads = heads
        self.concat = concat
        self.dropout = dropout
        self.root_weight = root_weight
        self.shared_labels = shared_labels
        self.fused = fused
        #: fused label terms: "auto" (default), "dense" ([N, L, H] products) or "edge" (per-edge gathers)
        self.label_path = "auto"
        self._alpha: Tensor | None = None
        sizes = label_table_sizes(num_edge_labels)
        if any(s < 1 for s in sizes):
            raise ValueError(f"num_edge_labels must be positive, got {list(num_edge_labels)}")
        self.multi_channel = not isinstance(num_edge_labels, int) and num_edge_labels is not None
        self.label_sizes = sizes
        self.register_buffer("label_offsets", label_offsets(sizes), persistent=False)
        total = sum(sizes)
        self.value_labels = bool(value_labels) and total > 0

        src_in, dst_in = (in_channels, in_channels) if isinstance(in_channels, int) else in_channels
        hd = heads * out_channels
        init = dict(weight_initializer="glorot", bias_initializer="zeros")
        self.q_proj = Linear(dst_in, hd, bias=bias, **init)
        self.k_proj = Linear(src_in, hd, bias=bias, **init)
        self.v_proj = Linear(src_in, hd, bias=bias, **init)
        self.lin_skip = Linear(dst_in, hd if concat else out_channels, bias=bias, **init) if root_weight else None
        width = out_channels if shared_labels else hd
        self.label_key = nn.Parameter(torch.empty(total, width)) if total else None
        self.label_value = nn.Parameter(torch.empty(total, width)) if self.value_labels else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.lin_skip):
            if lin is not None:
                lin.reset_parameters()
        std = self.out_channels**-0.5
        for table in (self.label_key, self.label_value):
            if table is not None:
                nn.init.normal_(table, std=std)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, heads={self.heads}, "
            f"num_edge_labels={self.label_sizes}, concat={self.concat}, value_labels={self.value_labels}, "
            f"root_weight={self.root_weight}, shared_labels={self.shared_labels}, dropout={self.dropout})"
        )

    # ------------------------------------------------------------------ helpers
    def _types(self, edge_type: Tensor | None, E: int) -> Tensor | None:
        """``[E, C]`` long indices into the stacked tables (channel offsets added)."""
        if self.label_key is None:
            if edge_type is not None and edge_type.numel():
                raise ValueError("G2GConv was built with num_edge_labels=0 but got edge_type; "
                                 "pass num_edge_labels=<table size> to use edge labels")
            return None
        if edge_type is None:
            raise ValueError(f"G2GConv has label tables {self.label_sizes}; pass edge_type [E] or [E, C]")
        C = len(self.label_sizes)
        if edge_type.dim() == 1:
            if C != 1:
                raise ValueError(f"edge_type must be [E, {C}] (one column per channel), got [E]")
            edge_type = edge_type.unsqueeze(1)
        if edge_type.dim() != 2 or edge_type.shape != (E, C):
            raise ValueError(f"edge_type of shape {tuple(edge_type.shape)} does not match [E={E}, C={C}]")
        edge_type = edge_type.long()
        if E:
            lo = edge_type.min(0).values
            hi = edge_type.max(0).values
            sizes = torch.tensor(self.label_sizes, device=edge_type.device)
            bad = (lo < 0) | (hi >= sizes)
            if bool(bad.any()):
                c = int(bad.nonzero()[0])
                raise ValueError(
                    f"edge_type channel {c} has labels in [{int(lo[c])}, {int(hi[c])}] "
                    f"but its table has {self.label_sizes[c]} entries (expected 0 <= label < {self.label_sizes[c]})"
                )
        return edge_type + self.label_offsets.to(edge_type.device)

    def _table(self, table: Tensor | None, dtype: torch.dtype) -> Tensor | None:
        """``[L, 1|H, d_h]`` view of a label table."""
        if table is None:
            return None
        return table.to(dtype).view(table.shape[0], 1 if self.shared_labels else self.heads, self.out_channels)

    def _per_label(self, q: Tensor, table: Tensor) -> Tensor:
        """``[N * L, H]``: ``q_i · a[l]`` for every node and label (``q [N, H, d]``, table ``[L, 1|H, d]``)."""
        N, H, _ = q.shape
        if table.shape[1] == 1:
            out = torch.matmul(table[:, 0], q.transpose(1, 2))  # [N, L, H]
        else:
            out = torch.einsum("nhd,lhd->nlh", q, table)
        return out.reshape(N * table.shape[0], H)

    def _label_sum(self, per_label: Tensor, table: Tensor) -> Tensor:
        """``[N, H, d]``: ``sum_l w[n, l, h] a[l]`` (``per_label [N, L, H]``, table ``[L, 1|H, d]``)."""
        if table.shape[1] == 1:
            return torch.matmul(per_label.transpose(1, 2), table[:, 0])
        return torch.einsum("nlh,lhd->nhd", per_label, table)

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        x: Tensor | tuple[Tensor, Tensor],
        edge_index: Tensor,
        edge_type: Tensor | None = None,
        return_attention_weights: bool | None = None,
    ) -> Tensor | tuple[Tensor, tuple[Tensor, Tensor]]:
        """Attention over the edges: new node features (see the class docstring for shapes).

        ``return_attention_weights`` set to any bool also returns ``(edge_index, alpha [E, H])``.

        Args:
            x: node features ``[N, in]``, or ``(x_src, x_dst)`` for a bipartite graph.
            edge_index: ``[2, E]`` long (source, target).
            edge_type: ``[E]`` or ``[E, C]`` long labels (``None``: no labels).
            return_attention_weights: any bool: also return the attention weights; ``None``: do not.

        Returns:
            ``[N_dst, H*d_h]`` (``concat``) or ``[N_dst, d_h]``; with ``return_attention_weights`` ``(output,
                (edge_index, alpha [E, H]))``.
        """
        if not isinstance(edge_index, Tensor) or edge_index.dim() != 2 or edge_index.shape[0] != 2:
            raise ValueError(
                "G2GConv expects edge_index as a [2, E] long tensor (SparseTensor adjacency is not supported), "
                f"got {type(edge_index).__name__} {tuple(getattr(edge_index, 'shape', ()))}"
            )
        x_src, x_dst = (x, x) if isinstance(x, Tensor) else x
        H, d = self.heads, self.out_channels
        E = edge_index.shape[1]
        n_src, n_dst = x_src.shape[0], x_dst.shape[0]
        edge_index = edge_index.long()
        if E and (int(edge_index.min()) < 0 or int(edge_index[0].max()) >= n_src or int(edge_index[1].max()) >= n_dst):
            raise ValueError(f"edge_index refers to nodes outside [0, {n_src}) x [0, {n_dst})")
        types = self._types(edge_type, E)
        if self.flow == "target_to_source":
            j_idx, i_idx = edge_index[1], edge_index[0]
            if not isinstance(x, Tensor):
                raise ValueError("flow='target_to_source' is only supported for a single node set x")
        else:
            j_idx, i_idx = edge_index[0], edge_index[1]

        q = self.q_proj(x_dst).view(-1, H, d) * (d**-0.5)
        k = self.k_proj(x_src).view(-1, H, d)
        v = self.v_proj(x_src).view(-1, H, d)
        ak = self._table(self.label_key, q.dtype)
        av = self._table(self.label_value, q.dtype)

        if self.fused:
            # label terms: dense per-(node, label) products when that tensor is no larger than an
            # [E, d] edge tensor (cheap matmuls + [E, H] gathers), else per-edge table gathers
            if types is None:
                dense = False
            elif self.label_path == "auto":
                dense = n_dst * ak.shape[0] <= E * d
            else:
                dense = self.label_path == "dense"
            if dense:
                flat = [i_idx * ak.shape[0] + types[:, c] for c in range(types.shape[1])]  # [E] each
                score = _EdgeScore.apply(q, k, None, i_idx, j_idx, None)  # [E, H]
                qa = self._per_label(q, ak)  # [N_dst * L, H]
                for f in flat:
                    score = score + qa.index_select(0, f)
            else:
                score = _EdgeScore.apply(q, k, ak, i_idx, j_idx, types)  # [E, H]
            alpha = softmax(score, i_idx, num_nodes=n_dst)
            w = F.dropout(alpha, p=self.dropout, training=self.training)
            if dense:
                out = _EdgeAggregate.apply(w, v, None, i_idx, j_idx, None, n_dst)
                if av is not None:
                    per_label = w.new_zeros(n_dst * av.shape[0], H)
                    for f in flat:
                        per_label = per_label.index_add(0, f, w)
                    out = out + self._label_sum(per_label.view(n_dst, av.shape[0], H), av)
            else:
                out = _EdgeAggregate.apply(w, v, av, i_idx, j_idx, types if av is not None else None, n_dst)
        else:
            out = self.propagate(edge_index, q=q, k=k, v=v, types=types, ak=ak, av=av, size=(n_src, n_dst)
                                 if self.flow == "source_to_target" else None)
            alpha = self._alpha
            self._alpha = None

        out = out.reshape(-1, H * d) if self.concat else out.mean(1)
        if self.lin_skip is not None:
            out = out + self.lin_skip(x_dst)
        if isinstance(return_attention_weights, bool):
            return out, (edge_index, alpha)
        return out

    def message(self, q_i: Tensor, k_j: Tensor, v_j: Tensor, types: Tensor | None, ak: Tensor | None,
                av: Tensor | None, index: Tensor, ptr: Tensor | None, size_i: int | None) -> Tensor:
        """Unfused reference path: ``[E, H, d_h]`` messages ``α_ij (v_j + a^V[t_ij])``.

        Args:
            q_i: target queries ``[E, H, d_h]``.
            k_j: source keys ``[E, H, d_h]``.
            v_j: source values ``[E, H, d_h]``.
            types: edge labels ``[E, C]`` (offset into the stacked tables), or ``None``.
            ak: key label table ``a^K``, or ``None``.
            av: value label table ``a^V``, or ``None`` (no value labels).
            index: target node of each edge ``[E]`` (the softmax groups).
            ptr: CSR pointers of the targets, or ``None``.
            size_i: number of target nodes, or ``None``.

        Returns:
            The messages ``[E, H, d_h]``.
        """
        if ak is not None:
            for c in range(types.shape[1]):
                k_j = k_j + ak[types[:, c]]
        alpha = softmax((q_i * k_j).sum(-1), index, ptr, size_i)
        self._alpha = alpha
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        if av is not None:
            for c in range(types.shape[1]):
                v_j = v_j + av[types[:, c]]
        return v_j * alpha.unsqueeze(-1)

    # ------------------------------------------------------------------ interop
    @classmethod
    def from_transformer_conv(cls, conv, num_edge_labels: int | None = None, **kwargs) -> "G2GConv":
        """A G2GConv computing the same function as a :class:`torch_geometric.nn.TransformerConv`.

        The ``TransformerConv`` has ``beta=False`` and is fed one-hot ``edge_attr`` of the edge types.

        Mapping: ``lin_query/lin_key/lin_value/lin_skip -> q_proj/k_proj/v_proj/lin_skip``;
        ``lin_edge.weight`` ``[H*d, L]`` transposed is the per-head label table
        ``[L, H*d]``, used for both keys and values (``shared_labels=False``).

        Args:
            conv: the ``TransformerConv`` to copy (``beta=False``).
            num_edge_labels: number of edge types ``L``; ``None`` (default): ``conv.edge_dim``, which it must equal.
            **kwargs: passed to the :class:`G2GConv` constructor.

        Returns:
            The new layer.

        Raises:
            ValueError: ``conv`` has ``beta=True``, or ``num_edge_labels`` differs from ``conv.edge_dim``.
        """
        if getattr(conv, "beta", False):
            raise ValueError("TransformerConv(beta=True) has no G2GConv equivalent")
        L = conv.edge_dim if num_edge_labels is None else num_edge_labels
        if conv.edge_dim is not None and L != conv.edge_dim:
            raise ValueError(f"num_edge_labels={L} must equal TransformerConv.edge_dim={conv.edge_dim}")
        bias = conv.lin_query.bias is not None
        new = cls(conv.in_channels, conv.out_channels, heads=conv.heads, num_edge_labels=L or 0,
                  concat=conv.concat, value_labels=True, dropout=conv.dropout, root_weight=conv.root_weight,
                  bias=bias, shared_labels=False, **kwargs)
        new = new.to(conv.lin_query.weight.dtype)
        with torch.no_grad():
            pairs = [(new.q_proj, conv.lin_query), (new.k_proj, conv.lin_key), (new.v_proj, conv.lin_value)]
            if conv.root_weight:
                pairs.append((new.lin_skip, conv.lin_skip))
            for ours, theirs in pairs:
                ours.weight.copy_(theirs.weight)
                if theirs.bias is not None:
                    ours.bias.copy_(theirs.bias)
            if conv.lin_edge is not None:
                new.label_key.copy_(conv.lin_edge.weight.t())
                new.label_value.copy_(conv.lin_edge.weight.t())
        return new
