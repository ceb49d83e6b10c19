"""Hyper-parameters of the parser model, importable without torch (``g2gt train parser --help`` builds its
model options from these fields)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core.config import DictConfig

__all__ = ["ParserConfig"]


@dataclass
class ParserConfig(DictConfig):
    """Hyper-parameters of :class:`g2gt.ud.parse.ParserModel`, saved in checkpoints as ``model_config``.

    The vocabulary sizes come first (from :class:`g2gt.ud.parse.ParserVocab`); a size of 0 means the
    model has no such head (XPOS, UFeats, lemma rules). The field names are the checkpoint format:
    renaming one breaks loading of existing models.

    ``treebanks``: names of the training treebanks when the model was trained on several (one learned vector
    per treebank is added to every word's input vector, :class:`g2gt.ud.parse.ParserModel`); the first is the
    default at parse time. Empty (the default, and every checkpoint written before the field existed): no
    treebank vectors, so such checkpoints load strictly and unchanged.

    :meth:`from_dict` is :class:`g2gt.core.config.DictConfig`'s: keys of other versions are ignored, missing
    ones take their defaults.
    """

    num_words: int
    num_chars: int
    num_upos: int
    num_rels: int
    num_xpos: int = 0  # 0 = no XPOS head (likewise UFeats and lemma rules)
    num_feats: int = 0
    num_lemma_rules: int = 0
    d_model: int = 256
    num_heads: int = 8
    num_layers: int = 6
    ffn_dim: int = 1024
    dropout: float = 0.2
    attention_dropout: float = 0.0
    max_distance: int = 8  # clip distance of the relative-position channel
    value_labels: bool = True  # label embeddings in attention values too (else keys only)
    graph_channel: bool = True  # the dependency-graph channel (False: positions only, no refinement)
    arc_dim: int = 256
    label_dim: int = 64
    char_dim: int = 64
    char_filters: int = 192
    head_dropout: float = 0.25  # dropout before the arc / relation / tag scorers
    activation: str = "gelu"
    treebanks: list[str] = field(default_factory=list)  # [] = one treebank, no treebank vectors

    def to_dict(self) -> dict:
        """The fields as a dict (the checkpoint's ``model_config``); ``treebanks`` only when it is not empty,
        so a one-treebank model's record is exactly that of the versions before the field existed."""
        d = super().to_dict()
        if not d["treebanks"]:
            del d["treebanks"]
        return d
