"""The parser recipe, importable without torch: :class:`ParserConfig` (the model's hyper-parameters) and
:func:`parser_train_config` (its optimisation settings). These are the one source of the parser's defaults:
``g2gt train parser`` (and ``--help``) builds its options from them, :func:`g2gt.ud.parse.train_parser` and
``g2gt train pipeline`` use them, so Python and the command line train the same model."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...core.config import DictConfig, Preset, TrainConfig

__all__ = ["ParserConfig", "parser_train_config", "PARSER_TRAIN", "DATA_FIELDS", "PARSER_GPU", "PARSER_PRESETS"]

#: the :class:`ParserConfig` fields a training run sets from its data (vocabulary sizes, treebank names)
DATA_FIELDS = ("num_words", "num_chars", "num_upos", "num_rels", "num_xpos", "num_feats", "num_lemma_rules",
               "treebanks")

#: the parser recipe's optimisation settings (tuned on UD EWT with the model defaults below): a high learning
#: rate with loose clipping, frequent dev evaluations, model selection on dev LAS
PARSER_TRAIN = TrainConfig(lr=1.5e-3, grad_clip=5.0, eval_every=200, metric="las", metric_mode="max")


def parser_train_config(**fields) -> TrainConfig:
    """The parser recipe's :class:`TrainConfig` (a copy of :data:`PARSER_TRAIN`); ``fields`` override any field
    (``parser_train_config(max_minutes=40)``)."""
    return replace(PARSER_TRAIN, **fields)




@dataclass
class ParserConfig(DictConfig):
    """Hyper-parameters of :class:`g2gt.ud.parse.ParserModel`, saved in checkpoints as ``model_config``.

    The vocabulary sizes come first (:data:`DATA_FIELDS`, set from :class:`g2gt.ud.parse.ParserVocab` by
    :func:`g2gt.ud.parse.train_parser`); a size of 0 means the model has no such head (XPOS, UFeats, lemma
    rules). The field names are the checkpoint format:
    renaming one breaks loading of existing models. The defaults are the recipe of ``g2gt train parser`` and
    of the shipped parsers (d_model 256, 4 layers, 8 heads, FFN 512, dropout 0.15); every checkpoint stores
    all fields, so a model trained with other values loads with its own.

    ``treebanks``: names of the training treebanks when the model was trained on several (one learned vector
    per treebank is added to every word's input vector, :class:`g2gt.ud.parse.ParserModel`); the first is the
    default at parse time. Empty (the default, and every checkpoint written before the field existed): no
    treebank vectors, so such checkpoints load strictly and unchanged.

    :meth:`from_dict` is :class:`g2gt.core.config.DictConfig`'s: keys of other versions are ignored, missing
    ones take their defaults.
    """

    num_words: int = 0  # the sizes are set from the training data (train_parser)
    num_chars: int = 0
    num_upos: int = 0
    num_rels: int = 0
    num_xpos: int = 0  # 0 = no XPOS head (likewise UFeats and lemma rules)
    num_feats: int = 0
    num_lemma_rules: int = 0
    d_model: int = 256
    num_heads: int = 8
    num_layers: int = 4
    ffn_dim: int = 512
    dropout: float = 0.15
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


#: ``g2gt train parser --preset gpu``: a parser twice as wide and deep (d_model 512, 8 layers, FFN 2048, 8 heads of
#: 64) under bfloat16 autocast, 2,000 updates of the device-sized batches (12,000 words on an H200, ~120 epochs
#: of UD EWT) at most 10 minutes, for one H200. The step count is an estimate: its speed and LAS are to be
#: measured on a GPU (benchmarks/gpu_check.py).
PARSER_GPU = Preset(
    "gpu", "a bigger parser (d_model 512, 8 layers, FFN 2048) for ~10 minutes of one H200: bf16 autocast, "
    "the device-sized --batch-tokens, 2000 updates (at most 10 minutes), lr 1e-3, a dev evaluation every 200",
    ParserConfig(d_model=512, num_layers=8, ffn_dim=2048, arc_dim=512, label_dim=128),
    replace(PARSER_TRAIN, lr=1e-3, amp="bf16", max_steps=2000, max_minutes=10.0, eval_every=200))
#: the presets of ``g2gt train parser --preset NAME``
PARSER_PRESETS = {p.name: p for p in (PARSER_GPU,)}
