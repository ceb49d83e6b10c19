"""The enhanced-UD model's hyper-parameters and the enhancer recipe's optimisation settings, importable without
torch (``g2gt train enhancer --help`` reads them)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...core.config import DictConfig, TrainConfig

__all__ = ["EnhancerConfig", "ENHANCER_TRAIN", "enhancer_train_config", "DATA_FIELDS"]


#: the :class:`EnhancerConfig` fields a training run sets from its data (vocabulary sizes)
DATA_FIELDS = ("num_words", "num_chars", "num_upos", "num_rels", "num_labels")


@dataclass
class EnhancerConfig(DictConfig):
    """Hyper-parameters of :class:`EnhancerModel` (saved in checkpoints as ``model_config``)."""

    num_words: int = 0  # the sizes (DATA_FIELDS) are set from the training data (train_enhancer)
    num_chars: int = 0
    num_upos: int = 0
    num_rels: int = 0
    num_labels: int = 0
    d_model: int = 256
    num_heads: int = 8
    num_layers: int = 4
    ffn_dim: int = 512
    dropout: float = 0.15
    attention_dropout: float = 0.0
    max_distance: int = 8
    value_labels: bool = True
    edge_dim: int = 256
    label_dim: int = 96
    path_rank: int = 32
    char_dim: int = 48
    char_filters: int = 128
    head_dropout: float = 0.2
    activation: str = "gelu"
    label_weight: float = 1.0


#: the enhancer recipe's optimisation settings, model selection on dev ELAS
ENHANCER_TRAIN = TrainConfig(lr=1.5e-3, grad_clip=5.0, eval_every=250, cooldown=0.3, metric="elas", metric_mode="max")


def enhancer_train_config(**fields) -> TrainConfig:
    """The enhancer recipe's :class:`TrainConfig` (a copy of :data:`ENHANCER_TRAIN`): the defaults of
    ``g2gt train enhancer``, :func:`train_enhancer` and ``g2gt train pipeline``; ``fields`` override any field."""
    return replace(ENHANCER_TRAIN, **fields)


