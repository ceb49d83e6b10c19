"""Neural modules: graph attention, encoder/decoder stacks, scorers, PyG layer."""

from .._lazy import lazy_exports
from .attention import GraphAttention, KVCache, MultiheadGraphAttention
from .layers import DecoderLayer, EncoderLayer, FeedForward, GraphDecoder, GraphEncoder
from .transformer import G2GTConfig, G2GTransformer

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

# G2GConv pulls in torch_geometric: it loads on first use
__getattr__, __dir__ = lazy_exports(__name__, {"G2GConv": "conv"}, globals())
