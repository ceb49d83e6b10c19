"""g2gt: Graph-to-Graph Transformers.

Nodes are tokens; every ordered pair of nodes carries a label whose embedding
enters the attention score like a relative position. Sequences are chain
graphs, parses are dependency graphs, and PyG users get a MessagePassing layer.
"""

from .batch import BucketBatchSampler, GraphBatch, collate
from .graph import (
    ChainChannel,
    EdgeChannel,
    Graph,
    LabelVocab,
    chain_graph,
    edges_from_heads,
    num_chain_labels,
    relative_position_labels,
)

__version__ = "0.1.0"

__all__ = [
    "Graph",
    "EdgeChannel",
    "ChainChannel",
    "LabelVocab",
    "chain_graph",
    "edges_from_heads",
    "num_chain_labels",
    "relative_position_labels",
    "GraphBatch",
    "collate",
    "BucketBatchSampler",
]
