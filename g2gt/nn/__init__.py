"""Neural modules: graph attention, encoder/decoder stacks, scorers, PyG layer."""

from .attention import GraphAttention, KVCache, MultiheadGraphAttention
from .transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    G2GTConfig,
    G2GTransformer,
    GraphDecoder,
    GraphEncoder,
)

__all__ = [
    "GraphAttention",
    "KVCache",
    "MultiheadGraphAttention",
    "G2GTConfig",
    "G2GTransformer",
    "GraphEncoder",
    "GraphDecoder",
    "EncoderLayer",
    "DecoderLayer",
    "FeedForward",
    "G2GConv",
]


def __getattr__(name):  # G2GConv pulls in torch_geometric: import it lazily
    if name == "G2GConv":
        from .conv import G2GConv

        return G2GConv
    raise AttributeError(name)
