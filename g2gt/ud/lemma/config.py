"""The character lemmatizer's settings and the rule that says when the parser asks it; no torch here (the CLI
reads these for its help)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.config import DictConfig, TrainConfig, option

__all__ = ["USE_WHEN", "LemmaConfig", "needs_fallback", "lemma_train_config"]

#: when the parser asks the character model instead of its edit scripts (see :func:`needs_fallback`)
USE_WHEN = ("rare", "unseen", "not-in-lexicon")


@dataclass
class LemmaConfig(DictConfig):
    """The character lemmatizer (:mod:`g2gt.ud.lemma.model`): a character encoder-decoder
    (:class:`g2gt.nn.G2GTransformer`, relative chain labels, one symbol table for source and target). About
    0.7 M parameters with the defaults; ``vocab_size`` is set from the training data."""

    vocab_size: int = option(0, "lemmatizer symbols: 5 specials + tags + characters (set from the data)", "lemmatizer")
    d_model: int = option(128, "width of the lemmatizer", "lemmatizer")
    num_heads: int = option(4, "lemmatizer attention heads", "lemmatizer")
    num_layers: int = option(2, "lemmatizer encoder layers (and as many decoder layers)", "lemmatizer")
    ffn_dim: int = option(256, "lemmatizer feed-forward width", "lemmatizer")
    dropout: float = option(0.15, "lemmatizer dropout", "lemmatizer")
    max_distance: int = option(8, "clip distance of the lemmatizer's chain labels", "lemmatizer")
    label_smoothing: float = option(0.05, "label smoothing of the lemmatizer's loss", "lemmatizer")
    batch_tokens: int = option(1280, "padded symbols per lemmatizer training batch (length-bucketed (form, tags, "
                               "lemma) examples)", "lemmatizer")
    tag_dropout: float = option(0.1, "probability of hiding each tag symbol of a training example (the parser's "
                                "tags are predicted, hence sometimes wrong)", "lemmatizer")
    use_when: str = option("unseen", "when the parser asks the lemmatizer about a word its lexicon does not know: "
                           "'rare' (its edit-script head found no frequent rule that applies), 'unseen' (that, or "
                           "the lemmatizer's training data never had the form) or 'not-in-lexicon' (always)",
                           "lemmatizer")


def needs_fallback(use_when: str, in_lexicon: bool, rare: bool, seen_form: bool = True) -> bool:
    """Whether the parser takes a word's lemma from the character model.

    ``in_lexicon``: the training data always gave this (form, predicted UPOS) one lemma (the parser's lexicon
    answers); ``rare``: the edit-script head's best class is ``<unk>`` (a rule seen fewer than twice in
    training) or none of its best rules applies to the form; ``seen_form``: the lemmatizer's training data has
    the form (with any tags). Outside the lexicon, ``use_when="rare"`` asks exactly the rare words, ``"unseen"``
    the rare words and those with an unseen form (a seen form whose lemma depends on context is better left to
    the parser, which sees the sentence), ``"not-in-lexicon"`` every word.
    """
    if use_when not in USE_WHEN:
        raise ValueError(f"use_when must be one of {', '.join(USE_WHEN)}, got {use_when!r}")
    if in_lexicon:
        return False
    return rare or use_when == "not-in-lexicon" or (use_when == "unseen" and not seen_form)


def lemma_train_config(**overrides) -> TrainConfig:
    """The lemmatizer's :class:`TrainConfig`: lr 2e-3, 4 % warmup, 25 % cooldown, an evaluation every 500
    updates keeping the best dev ``accuracy`` (on dev words unseen in training)."""
    base = dict(lr=2e-3, warmup=0.04, cooldown=0.25, weight_decay=0.01, grad_clip=1.0, eval_every=500,
                log_every=100, metric="accuracy", metric_mode="max")
    base.update(overrides)
    return TrainConfig(**base)
