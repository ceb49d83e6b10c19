"""The coreference model's hyper-parameters, importable without torch (the CLI builds its options from them)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.config import DictConfig

__all__ = ["CorefConfig", "DATA_FIELDS"]

#: the :class:`CorefConfig` fields a training run sets from its data (vocabulary sizes)
DATA_FIELDS = ("num_words", "num_chars", "num_upos", "num_rels", "num_morph", "num_tree_labels", "num_tags")


@dataclass
class CorefConfig(DictConfig):
    """Hyper-parameters of :class:`CorefModel` (saved in checkpoints as ``model_config``)."""

    num_words: int = 0  # the sizes (DATA_FIELDS) are set from the training data (train_coref)
    num_chars: int = 0
    num_upos: int = 0
    num_rels: int = 0
    num_morph: int = 0
    num_tree_labels: int = 0
    num_tags: int = 0
    d_model: int = 192
    num_heads: int = 6
    num_layers: int = 3
    ffn_dim: int = 384
    dropout: float = 0.15
    attention_dropout: float = 0.0
    max_distance: int = 16
    max_sentences: int = 4
    value_labels: bool = True
    char_dim: int = 32
    char_filters: int = 96
    span_dim: int = 96
    antecedent_dim: int = 192
    head_dropout: float = 0.2
    activation: str = "gelu"
