"""Graphs whose every ordered node pair carries a label.

A :class:`Graph` is a list of tokens (the nodes) plus one or more *label
channels*.  Each channel assigns an integer label to every ordered pair
``(i, j)`` of nodes, ``0`` meaning "no relation".  Two kinds of channels exist:

* :class:`EdgeChannel` -- a sparse set of labelled directed edges
  (``edge_index [2, E]``, ``edge_label [E]``), e.g. a dependency tree where the
  dependent -> head pair carries ``nsubj↑`` and head -> dependent ``nsubj↓``.
* :class:`ChainChannel` -- the dense relative-position labels of a sequence,
  ``l_ij = clip(j - i, -k, k) + k + 1`` (ids ``1 .. 2k+1``), computed on demand.

Graphs convert to and from :class:`networkx.DiGraph` and
:class:`torch_geometric.data.Data` without loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import torch
from torch import Tensor

__all__ = [
    "LabelVocab",
    "EdgeChannel",
    "ChainChannel",
    "Graph",
    "chain_graph",
    "relative_position_labels",
    "chain_labels",
    "num_chain_labels",
    "UP",
    "DOWN",
]

UP = "\u2191"  # dependent -> head
DOWN = "\u2193"  # head -> dependent
NONE_LABEL = "<none>"


class LabelVocab:
    """Maps relation names to integer ids; id 0 is always "no relation".

    >>> v = LabelVocab.for_dependencies(["nsubj", "obj"])
    >>> v["nsubj↑"], v["nsubj↓"], len(v)
    (1, 2, 5)

    Args:
        names: relation names given ids ``1, 2, ...`` in order (default: none).
    """

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.itos: list[str] = [NONE_LABEL]
        self.stoi: dict[str, int] = {NONE_LABEL: 0}
        for name in names:
            self.add(name)

    @classmethod
    def for_dependencies(cls, relations: Iterable[str]) -> "LabelVocab":
        """Vocabulary with ``rel↑`` (dependent -> head) and ``rel↓`` (head -> dependent).

        Args:
            relations: dependency relation names (``nsubj``, ``obj`` ...).

        Returns:
            A :class:`LabelVocab` with ``rel↑`` and ``rel↓`` of every relation, in order.
        """
        vocab = cls()
        for rel in relations:
            vocab.add(rel + UP)
            vocab.add(rel + DOWN)
        return vocab

    def add(self, name: str) -> int:
        """The id of ``name``, added at the end when it is new.

        Args:
            name: a relation name.

        Returns:
            Its id.
        """
        if name not in self.stoi:
            self.stoi[name] = len(self.itos)
            self.itos.append(name)
        return self.stoi[name]

    def __getitem__(self, name: str) -> int:
        try:
            return self.stoi[name]
        except KeyError:
            raise KeyError(f"unknown relation label {name!r} (vocabulary has {len(self)} labels)") from None

    def get(self, name: str, default: int = 0) -> int:
        """The id of ``name``, or ``default`` when it is not in the vocabulary.

        Args:
            name: a relation name.
            default: the id returned for an unknown name (``0``: no relation).

        Returns:
            The id.
        """
        return self.stoi.get(name, default)

    def name(self, idx: int) -> str:
        """The relation name of an id.

        Args:
            idx: a label id.

        Returns:
            Its name (``"<none>"`` for 0).
        """
        return self.itos[idx]

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, name: object) -> bool:
        return name in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelVocab) and other.itos == self.itos

    def __repr__(self) -> str:
        return f"LabelVocab({len(self)} labels)"

    def to_list(self) -> list[str]:
        """Every name in id order, ``"<none>"`` first (what :meth:`from_list` reads).

        Returns:
            The names.
        """
        return list(self.itos)

    @classmethod
    def from_list(cls, names: Sequence[str]) -> "LabelVocab":
        """The vocabulary :meth:`to_list` wrote.

        Args:
            names: the names in id order, starting with ``"<none>"``.

        Returns:
            The :class:`LabelVocab`.

        Raises:
            ValueError: ``names`` does not start with ``"<none>"``.
        """
        if not names or names[0] != NONE_LABEL:
            raise ValueError(f"a saved LabelVocab must start with {NONE_LABEL!r}")
        return cls(names[1:])


def num_chain_labels(max_distance: int) -> int:
    """Number of label ids a chain channel with clip distance ``k`` uses (incl. 0).

    Args:
        max_distance: clip distance ``k``.

    Returns:
        ``2k + 2``.
    """
    return 2 * max_distance + 2


def relative_position_labels(
    n: int, max_distance: int, device: torch.device | str | None = None, n_keys: int | None = None,
    query_offset: int = 0,
) -> Tensor:
    """Chain labels ``clip(j - i, -k, k) + k + 1`` as a ``[n, n_keys]`` long tensor.

    ``query_offset`` shifts the query positions (rows are positions
    ``query_offset .. query_offset + n - 1``), which incremental decoding uses.

    Args:
        n: number of queries (rows).
        max_distance: clip distance ``k``.
        device: where the tensor is made (``None``: torch's default device).
        n_keys: number of keys (columns); ``None``, the default: ``n``.
        query_offset: position of the first query.

    Returns:
        ``[n, n_keys]`` long labels.
    """
    n_keys = n if n_keys is None else n_keys
    i = torch.arange(query_offset, query_offset + n, device=device)
    j = torch.arange(n_keys, device=device)
    rel = (j[None, :] - i[:, None]).clamp(-max_distance, max_distance)
    return rel + max_distance + 1


def chain_labels(n: int, max_distance: int, device: torch.device | str | None = None) -> Tensor:
    """:func:`relative_position_labels` of one ``n``-node chain as a ``[1, 1, n, n]`` uint8 tensor: one label
    channel that broadcasts over a batch whose rows share the chain (windows, words of one length)."""
    return relative_position_labels(n, max_distance, device).to(torch.uint8)[None, None]


@dataclass
class EdgeChannel:
    """Sparse labelled edges: ``edge_index [2, E]`` (source, target) and ``edge_label [E]`` (ids >= 1).

    Args:
        edge_index: ``[2, E]`` long, (source, target) node pairs.
        edge_label: ``[E]`` long label ids, each ``>= 1``.
        num_labels: size of the label table the ids index, 0 included (``None``: not given).

    Raises:
        ValueError: the edge counts of ``edge_index`` and ``edge_label`` differ, or a label is below 1.
    """

    edge_index: Tensor
    edge_label: Tensor
    num_labels: int | None = None

    def __post_init__(self) -> None:
        self.edge_index = torch.as_tensor(self.edge_index, dtype=torch.long).reshape(2, -1)
        self.edge_label = torch.as_tensor(self.edge_label, dtype=torch.long).reshape(-1)
        if self.edge_index.shape[1] != self.edge_label.numel():
            raise ValueError(
                f"edge_index has {self.edge_index.shape[1]} edges but edge_label has {self.edge_label.numel()}"
            )
        if self.edge_label.numel() and int(self.edge_label.min()) < 1:
            raise ValueError("edge labels must be >= 1 (0 means 'no relation')")

    def dense(self, n: int) -> Tensor:
        """``[n, n]`` long label matrix (0 where there is no edge).

        Args:
            n: number of nodes.

        Returns:
            ``[n, n]`` long labels.
        """
        out = torch.zeros(n, n, dtype=torch.long)
        if self.edge_label.numel():
            out[self.edge_index[0], self.edge_index[1]] = self.edge_label
        return out

    def canonical(self) -> Tensor:
        """``[E, 3]`` rows ``(source, target, label)`` sorted, the order-free form of the edge set.

        Returns:
            ``[E, 3]`` long ``(source, target, label)`` rows in sorted order.
        """
        rows = torch.cat([self.edge_index.t(), self.edge_label[:, None]], 1)
        if rows.shape[0] == 0:
            return rows
        key = (rows[:, 0] * (int(rows[:, 1].max()) + 1) + rows[:, 1]) * (int(rows[:, 2].max()) + 1) + rows[:, 2]
        return rows[key.argsort()]

    def __eq__(self, other: object) -> bool:
        """Equal edge *sets* (order of edges does not matter) and equal ``num_labels``."""
        return (
            isinstance(other, EdgeChannel)
            and self.num_labels == other.num_labels
            and self.edge_label.numel() == other.edge_label.numel()
            and torch.equal(self.canonical(), other.canonical())
        )


@dataclass
class ChainChannel:
    """Relative-position labels of a sequence, clipped at ``max_distance``.

    Args:
        max_distance: clip distance ``k`` of the relative positions.
    """

    max_distance: int

    @property
    def num_labels(self) -> int:
        return num_chain_labels(self.max_distance)

    def dense(self, n: int) -> Tensor:
        """Dense chain labels ``clip(j - i, -k, k) + k + 1`` of ``n`` positions.

        Args:
            n: number of nodes.

        Returns:
            ``[n, n]`` long labels.
        """
        return relative_position_labels(n, self.max_distance)


Channel = EdgeChannel | ChainChannel


@dataclass
class Graph:
    """Tokens plus labelled node pairs.

    Args:
        tokens: node tokens, strings or integer ids (length ``n``).
        channels: ordered mapping ``name -> EdgeChannel | ChainChannel``.
        node_features: optional per-node attributes, ``name -> list`` of length ``n``
            (e.g. ``{"upos": [...]}``) or tensors ``[n, ...]``.
        meta: free-form graph attributes (sentence id, text, ...), kept by conversions.
    """

    tokens: list[Any]
    channels: dict[str, Channel] = field(default_factory=dict)
    node_features: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.tokens, Tensor):
            self.tokens = self.tokens.tolist()
        self.tokens = list(self.tokens)
        n = len(self.tokens)
        for name, feat in self.node_features.items():
            if len(feat) != n:
                raise ValueError(f"node feature {name!r} has {len(feat)} entries for {n} nodes")
        for name, ch in self.channels.items():
            if isinstance(ch, EdgeChannel) and ch.edge_index.numel():
                lo, hi = int(ch.edge_index.min()), int(ch.edge_index.max())
                if lo < 0 or hi >= n:
                    raise ValueError(f"channel {name!r} has an edge to node {hi if hi >= n else lo}, graph has {n} nodes")

    @property
    def num_nodes(self) -> int:
        return len(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def label_matrix(self, channel: str) -> Tensor:
        """Dense ``[n, n]`` long label matrix of one channel.

        Args:
            channel: the channel's name.

        Returns:
            ``[n, n]`` long labels, 0 where the channel has no relation.
        """
        return self.channels[channel].dense(self.num_nodes)

    def labels(self, channels: Sequence[str] | None = None) -> Tensor:
        """Dense ``[C, n, n]`` labels of the given (default: all) channels.

        Args:
            channels: channel names, in the order of the ``C`` axis (``None``, the default: every channel, in the
                graph's order).

        Returns:
            ``[C, n, n]`` long labels.
        """
        names = list(self.channels) if channels is None else list(channels)
        n = self.num_nodes
        if not names:
            return torch.zeros(0, n, n, dtype=torch.long)
        return torch.stack([self.label_matrix(c) for c in names])

    def with_channel(self, name: str, channel: Channel) -> "Graph":
        """A copy with one channel added or replaced.

        Args:
            name: the channel's name (an existing one is replaced).
            channel: an :class:`EdgeChannel` or :class:`ChainChannel`.

        Returns:
            A new :class:`Graph`; this one is unchanged.
        """
        channels = dict(self.channels)
        channels[name] = channel
        return Graph(list(self.tokens), channels, dict(self.node_features), dict(self.meta))

    # ------------------------------------------------------------------ networkx
    def to_networkx(self):
        """The graph as a ``networkx.DiGraph``.

        ``networkx.DiGraph``: node ``i`` has ``token`` and feature attributes; an
        edge ``(i, j)`` has one integer attribute per edge channel that labels it.
        Chain channels are stored as graph attributes (``G.graph["chains"]``), and
        ``meta`` as ``G.graph["meta"]``; a tensor feature ``[n, ...]`` gives each node
        its row and is stacked back by :meth:`from_networkx`.

        Returns:
            The ``networkx.DiGraph``.
        """
        import networkx as nx

        G = nx.DiGraph()
        G.graph["chains"] = {k: ch.max_distance for k, ch in self.channels.items() if isinstance(ch, ChainChannel)}
        G.graph["channels"] = list(self.channels)
        G.graph["num_labels"] = {
            k: ch.num_labels for k, ch in self.channels.items() if isinstance(ch, EdgeChannel)
        }
        G.graph["meta"] = dict(self.meta)
        G.graph["feature_names"] = list(self.node_features)
        for i, tok in enumerate(self.tokens):
            attrs = {name: _item(feat[i]) for name, feat in self.node_features.items()}
            G.add_node(i, token=tok, **attrs)
        for name, ch in self.channels.items():
            if isinstance(ch, EdgeChannel):
                for (s, t), lab in zip(ch.edge_index.t().tolist(), ch.edge_label.tolist()):
                    G.add_edge(s, t)
                    G.edges[s, t][name] = lab
        return G

    @classmethod
    def from_networkx(cls, G, channels: Sequence[str] | None = None) -> "Graph":
        """Inverse of :meth:`to_networkx`.

        Nodes must be ``0 .. n-1``; edge attributes named in ``channels`` (default: ``G.graph["channels"]`` or every
        edge attribute) become edge channels with their integer values as labels.

        Args:
            G: a ``networkx`` graph with nodes ``0 .. n-1``.
            channels: edge attributes that become edge channels (``None``, the default: ``G.graph["channels"]`` or every
                edge attribute).

        Returns:
            The :class:`Graph`.
        """
        n = G.number_of_nodes()
        if sorted(G.nodes) != list(range(n)):
            raise ValueError("from_networkx expects nodes numbered 0..n-1 (use nx.convert_node_labels_to_integers)")
        tokens = [G.nodes[i].get("token", i) for i in range(n)]
        feat_names = G.graph.get("feature_names")
        if feat_names is None:
            feat_names = sorted({k for i in range(n) for k in G.nodes[i] if k != "token"})
        node_features: dict[str, Any] = {}
        for k in feat_names:
            vals = [G.nodes[i].get(k) for i in range(n)]
            if vals and all(isinstance(v, Tensor) and v.shape == vals[0].shape for v in vals):
                node_features[k] = torch.stack(vals)  # a [n, ...] tensor feature was split per node
            else:
                node_features[k] = vals
        chains = dict(G.graph.get("chains", {}))
        if channels is None:
            channels = G.graph.get("channels")
        if channels is None:
            channels = sorted({k for _, _, d in G.edges(data=True) for k in d})
        nums = G.graph.get("num_labels", {})
        out: dict[str, Channel] = {}
        for name in channels:
            if name in chains:
                out[name] = ChainChannel(chains[name])
                continue
            src, dst, lab = [], [], []
            for s, t, d in G.edges(data=True):
                if name in d and d[name]:
                    src.append(s)
                    dst.append(t)
                    lab.append(int(d[name]))
            out[name] = EdgeChannel(torch.tensor([src, dst], dtype=torch.long), torch.tensor(lab), nums.get(name))
        return cls(tokens, out, node_features, dict(G.graph.get("meta", {})))

    # ------------------------------------------------------------------ PyG
    def to_pyg(self):
        """The graph as a PyTorch Geometric ``Data``.

        ``torch_geometric.data.Data`` with, for each edge channel ``c``,
        ``edge_index`` / ``edge_type`` when there is exactly one edge channel, and
        ``edge_index_<c>`` / ``edge_type_<c>`` otherwise. Token ids go to ``x`` (long)
        when tokens are integers, else to ``tokens`` (list of str). Node features
        become attributes ``<name>``; chain channels ``chain_<c> = k``.

        Returns:
            The ``torch_geometric.data.Data``.
        """
        from torch_geometric.data import Data

        data = Data(num_nodes=self.num_nodes)
        if all(isinstance(t, int) for t in self.tokens):
            data.x = torch.tensor(self.tokens, dtype=torch.long)
        else:
            data.tokens = list(self.tokens)
        edge_channels = [k for k, ch in self.channels.items() if isinstance(ch, EdgeChannel)]
        single = len(edge_channels) == 1
        for name, ch in self.channels.items():
            if isinstance(ch, ChainChannel):
                data[f"chain_{name}"] = ch.max_distance
            elif single:
                data.edge_index, data.edge_type = ch.edge_index.clone(), ch.edge_label.clone()
                data.edge_channel = name
            else:
                data[f"edge_index_{name}"], data[f"edge_type_{name}"] = ch.edge_index.clone(), ch.edge_label.clone()
        data.channel_names = list(self.channels)
        data.channel_num_labels = [
            ch.num_labels if isinstance(ch, EdgeChannel) else None for ch in self.channels.values()
        ]
        for name, feat in self.node_features.items():
            data[name] = feat.clone() if isinstance(feat, Tensor) else list(feat)
        data.feature_names = list(self.node_features)
        data.meta = dict(self.meta)
        return data

    @classmethod
    def from_pyg(cls, data) -> "Graph":
        """Inverse of :meth:`to_pyg`.

        A plain ``Data(edge_index, edge_type)`` also works (one channel named ``"edges"``; ``x`` becomes the tokens when
        it is 1-D long).

        Args:
            data: a ``torch_geometric.data.Data`` (as :meth:`to_pyg` writes it, or a plain ``Data(edge_index,
                edge_type)``).

        Returns:
            The :class:`Graph`.
        """
        n = int(data.num_nodes)
        if "tokens" in data:
            tokens = list(data.tokens)
        elif data.x is not None and data.x.dim() == 1:
            tokens = data.x.tolist()
        else:
            tokens = list(range(n))
        names = list(data.channel_names) if "channel_names" in data else ["edges"]
        nums = list(data.channel_num_labels) if "channel_num_labels" in data else [None] * len(names)
        channels: dict[str, Channel] = {}
        for name, num in zip(names, nums):
            if f"chain_{name}" in data:
                channels[name] = ChainChannel(int(data[f"chain_{name}"]))
            elif f"edge_index_{name}" in data:
                channels[name] = EdgeChannel(data[f"edge_index_{name}"].clone(), data[f"edge_type_{name}"].clone(), num)
            else:
                etype = data.edge_type if "edge_type" in data else torch.ones(data.edge_index.shape[1], dtype=torch.long)
                channels[name] = EdgeChannel(data.edge_index.clone(), etype.clone(), num)
        feats = list(data.feature_names) if "feature_names" in data else []
        node_features = {k: (data[k].clone() if isinstance(data[k], Tensor) else list(data[k])) for k in feats}
        meta = dict(data.meta) if "meta" in data else {}
        return cls(tokens, channels, node_features, meta)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        if self.tokens != other.tokens or list(self.channels) != list(other.channels) or self.meta != other.meta:
            return False
        if any(self.channels[k] != other.channels[k] for k in self.channels):
            return False
        if list(self.node_features) != list(other.node_features):
            return False
        for k, a in self.node_features.items():
            b = other.node_features[k]
            if isinstance(a, Tensor) or isinstance(b, Tensor):
                if not (isinstance(a, Tensor) and isinstance(b, Tensor) and torch.equal(a, b)):
                    return False
            elif list(a) != list(b):
                return False
        return True

    def __repr__(self) -> str:
        chans = ", ".join(
            f"{k}=chain(k={ch.max_distance})" if isinstance(ch, ChainChannel) else f"{k}=edges({ch.edge_label.numel()})"
            for k, ch in self.channels.items()
        )
        return f"Graph(n={self.num_nodes}, channels=[{chans}])"


def _item(v: Any) -> Any:
    return v.item() if isinstance(v, Tensor) and v.dim() == 0 else v


def chain_graph(n: int | Sequence[Any], max_distance: int, name: str = "position") -> Graph:
    """A sequence as a graph.

    ``n`` tokens (or the given tokens) and one chain channel whose label for the pair ``(i, j)`` is ``clip(j - i, -k, k)
    + k + 1``.

    Args:
        n: the number of tokens, or the tokens themselves.
        max_distance: clip distance ``k``.
        name: the chain channel's name.

    Returns:
        A :class:`Graph` with one :class:`ChainChannel`.
    """
    tokens = list(range(n)) if isinstance(n, int) else list(n)
    if max_distance < 1:
        raise ValueError(f"max_distance must be >= 1, got {max_distance}")
    return Graph(tokens, {name: ChainChannel(max_distance)})


def edges_from_heads(heads: Sequence[int], rels: Sequence[str], vocab: LabelVocab) -> EdgeChannel:
    """Dependency tree -> edge channel.

    ``heads[i]`` is the 1-based head of word ``i+1`` (0 = root, which gets no edge); word ``i`` -> head gets ``rel↑``
    and head -> word gets ``rel↓``.

    Args:
        heads: 1-based head of each word (0 = root).
        rels: dependency relation of each word.
        vocab: a :meth:`LabelVocab.for_dependencies` vocabulary holding ``rel↑`` / ``rel↓`` of every relation.

    Returns:
        An :class:`EdgeChannel` with two edges per non-root word.
    """
    src, dst, lab = [], [], []
    for i, (h, r) in enumerate(zip(heads, rels)):
        if h <= 0:
            continue
        src += [i, h - 1]
        dst += [h - 1, i]
        lab += [vocab.get(r + UP, vocab.get(NONE_LABEL + UP, 0)), vocab.get(r + DOWN, 0)]
    keep = [k for k, lbl in enumerate(lab) if lbl > 0]
    return EdgeChannel(
        torch.tensor([[src[k] for k in keep], [dst[k] for k in keep]], dtype=torch.long).reshape(2, -1),
        torch.tensor([lab[k] for k in keep], dtype=torch.long),
        len(vocab),
    )


def merge_label_sizes(channels: Mapping[str, Channel]) -> list[int]:
    """Label-table sizes of each channel (for ``GraphAttention(num_labels=...)``)."""
    sizes = []
    for name, ch in channels.items():
        if ch.num_labels is None:
            raise ValueError(f"channel {name!r} does not declare num_labels")
        sizes.append(int(ch.num_labels))
    return sizes
