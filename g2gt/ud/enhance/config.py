"""The enhanced-UD model's hyper-parameters and the enhancer recipe's optimisation settings, importable without
torch (``g2gt train enhancer --help`` reads them)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...core.config import DictConfig, TrainConfig, old_recipe_dict

__all__ = ["EnhancedConfig", "ENHANCER_TRAIN", "enhancer_train_config"]


@dataclass
class EnhancedConfig(DictConfig):
    """Hyper-parameters of :class:`EnhancedModel` (saved in checkpoints as ``model_config``)."""

    num_words: int
    num_chars: int
    num_upos: int
    num_rels: int
    num_labels: int
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
    ``g2gt train enhancer``, :func:`train_enhanced` and ``g2gt train pipeline``; ``fields`` override any field."""
    return replace(ENHANCER_TRAIN, **fields)


def __getattr__(name: str):
    if name == "ENHANCER_TRAIN_DEFAULTS":  # the recipe's old spelling: a dict of the fields that differ
        return old_recipe_dict(ENHANCER_TRAIN, f"{__name__}.ENHANCER_TRAIN_DEFAULTS", f"{__name__}.ENHANCER_TRAIN")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
