"""The settings of translation models and of their training, importable without torch.

* :class:`Seq2SeqSettings`: data and decoding settings of one model (saved inside its checkpoint);
* :class:`TranslateConfig`: how a :class:`g2gt.seq2seq.Translator` (and ``g2gt translate``) decodes: beam
  size, length penalty, batch sizes, the longest piece of a line translated at once;
* :class:`Seq2SeqConfig` (the model, subwords, data and evaluation settings) and :func:`seq2seq_train_config`
  (its :class:`g2gt.core.config.TrainConfig`): the training recipe (:func:`g2gt.seq2seq.train_seq2seq`), whose
  defaults are the ones measured on Multi30k En->De on one CPU thread: d_model 256, 3+3 layers, 4 heads, FFN
  1024, dropout 0.1, label smoothing 0.1, joint byte-level BPE with 8k merges, relative chain labels clipped at
  16, batches of 2,048 padded tokens, AdamW at lr 1e-3. Warmup and cooldown are fractions of the budget
  (:mod:`g2gt.core.schedule`), so one recipe serves 10 minutes and 3 hours. ``g2gt train seq2seq`` and
  ``benchmarks/seq2seq.py`` take their defaults from them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..core.config import DictConfig, Preset, TrainConfig, option
from ..errors import Error

__all__ = ["DEFAULT_BEAM", "SEQ2SEQ_GPU", "SEQ2SEQ_PRESETS", "SEQ2SEQ_TRAIN", "Seq2SeqConfig", "Seq2SeqSettings", "SELECT_MODES", "TranslateConfig",
           "check_metric", "seq2seq_train_config"]

#: The beam size of translation everywhere: Translator, ``g2gt translate`` and the final dev translation.
DEFAULT_BEAM = 5

#: The dev metrics that can select ``best.pt`` and whether lower or higher is better.
SELECT_MODES = {"dev_loss": "min", "bleu": "max"}


@dataclass
class Seq2SeqSettings(DictConfig):
    """Data and decoding settings of a seq2seq model (saved inside its checkpoint).

    Args:
        max_distance: clip distance ``k`` of the source chain labels (0: no chain channel, e.g. absolute positions
            only).
        graph: the encoder also gets the source dependency channel.
        joint_vocab: one subword vocabulary for both sides.
        max_src_len: source subwords kept per sentence (longer ones are truncated, with a warning counting them).
        max_tgt_len: target subwords kept per sentence, EOS included (longer ones are truncated, with a warning
            counting them).
        label_smoothing: label smoothing of the cross entropy.
        batch_tokens: padded tokens per training batch (``max_tokens`` before; checkpoints that say so still load).
        eval_sentences: dev sentences translated at each evaluation (0: the whole dev set).
        eval_beam: beam size of those evaluations (1: greedy).
        length_penalty: length penalty exponent of beam search.
        max_len_a: ``a`` of the decoding limit: decoding stops after ``a * source_len + b`` tokens.
        max_len_b: ``b`` of the decoding limit ``a * source_len + b``.
    """

    max_distance: int = 16
    graph: bool = False
    joint_vocab: bool = True
    max_src_len: int = 256
    max_tgt_len: int = 256
    label_smoothing: float = 0.1
    batch_tokens: int = 2048
    eval_sentences: int = 0  # 0 = the whole dev set
    eval_beam: int = 1
    length_penalty: float = 1.0
    max_len_a: float = 1.5
    max_len_b: int = 10


@dataclass
class TranslateConfig(DictConfig):
    """How a :class:`g2gt.seq2seq.Translator` decodes; ``g2gt translate`` reads its option defaults here.

    Sources are decoded shortest first in batches of at most ``batch_size`` sentences and ``batch_tokens``
    padded source subwords (``B * n_max``; a longer sentence is decoded alone), so a batch's memory is
    bounded by ``beam * batch_tokens`` decoder states. A line longer than ``max_input_subwords`` (the model's
    own limit ``max_src_len`` when 0) is split at word boundaries, preferably after a sentence-final
    punctuation mark, into pieces translated one by one and joined with a space (with a warning).

    Args:
        beam: beam size (1 = greedy search).
        length_penalty: length penalty of beam search: score / length ** X (default: the model's, saved at training).
        batch_tokens: padded source subwords decoded together at most.
        batch_size: sentences decoded together at most.
        max_input_subwords: longer lines are split into pieces of at most this many subwords (0 = the model's limit).
    """

    beam: int = option(DEFAULT_BEAM, "beam size (1 = greedy search)", "decoding")
    length_penalty: float | None = option(None, "length penalty of beam search: score / length ** X (default: "
                                          "the model's, saved at training)", "decoding")
    batch_tokens: int = option(4096, "padded source subwords decoded together at most", "decoding")
    batch_size: int = option(64, "sentences decoded together at most", "decoding")
    max_input_subwords: int = option(0, "longer lines are split into pieces of at most this many subwords "
                                     "(0 = the model's limit)", "decoding")

    def check(self) -> "TranslateConfig":
        """``self`` when every field is in range, else :class:`g2gt.Error` naming the field and what it accepts.

        Returns:
            ``self``.

        Raises:
            g2gt.Error: a field out of range, naming it and what it accepts.
        """
        for name, least in (("beam", 1), ("batch_tokens", 1), ("batch_size", 1), ("max_input_subwords", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise Error(f"{name} must be an integer >= {least}, got {v!r}")
        lp = self.length_penalty
        if lp is not None and (isinstance(lp, bool) or not isinstance(lp, (int, float))):
            raise Error(f"length_penalty must be a number (or None for the model's), got {lp!r}")
        return self


#: the translation recipe's optimisation settings: AdamW at lr 1e-3, 10 % warmup, a dev evaluation every 400
#: updates keeping the lowest dev loss (as fairseq does by default)
SEQ2SEQ_TRAIN = TrainConfig(lr=1e-3, warmup=0.1, eval_every=400, metric="dev_loss", metric_mode="min")


def seq2seq_train_config(**fields) -> TrainConfig:
    """The translation recipe's :class:`TrainConfig` (a copy of :data:`SEQ2SEQ_TRAIN`).

    ``fields`` override any field. ``metric`` (one of :data:`SELECT_MODES`: ``dev_loss`` or ``bleu``) also sets
    ``metric_mode``.

    Args:
        **fields: :class:`TrainConfig` fields to override.

    Returns:
        The :class:`TrainConfig`.

    Raises:
        g2gt.Error: a ``metric`` that is not one of :data:`SELECT_MODES`.
    """
    if "metric" in fields and "metric_mode" not in fields:
        fields["metric_mode"] = SELECT_MODES.get(fields["metric"], SEQ2SEQ_TRAIN.metric_mode)
    return check_metric(replace(SEQ2SEQ_TRAIN, **fields))


def check_metric(tc: TrainConfig) -> TrainConfig:
    """``tc`` when its ``metric`` is a translation metric (:data:`SELECT_MODES`) with its own ``metric_mode``,
    else :class:`g2gt.Error` saying what is expected."""
    if tc.metric not in SELECT_MODES:
        raise Error(f"TrainConfig.metric={tc.metric!r} cannot select a translation model; expected one of "
                    f"{', '.join(SELECT_MODES)} (e.g. seq2seq_train_config(metric='bleu'))")
    if tc.metric_mode != SELECT_MODES[tc.metric]:
        raise Error(f"TrainConfig.metric_mode={tc.metric_mode!r} does not fit metric {tc.metric!r}, whose better "
                    f"values are the {'lower' if SELECT_MODES[tc.metric] == 'min' else 'higher'} ones (metric_mode="
                    f"{SELECT_MODES[tc.metric]!r}; seq2seq_train_config(metric=...) sets it)")
    return tc


@dataclass
class Seq2SeqConfig(DictConfig):
    """The translation model, its subwords and its data / evaluation settings.

    What :func:`train_seq2seq` takes besides the data and its :class:`TrainConfig` (:func:`seq2seq_train_config`); the
    defaults are the project's recipe.

    Field metadata ``{"help", "group"}`` documents each field; ``g2gt train seq2seq`` builds its options
    from these fields and from :class:`TrainConfig`'s (``--d-model`` for ``d_model`` ...), so the CLI and Python
    share one set of defaults. Sizes are named as in :class:`g2gt.nn.G2GTConfig` (``num_layers``,
    ``num_heads``, ``num_encoder_layers``, ``num_decoder_layers``).

    Args:
        bpe_vocab: bPE vocabulary size (per side when not joint).
        joint_vocab: one BPE vocabulary for both sides, with shared embeddings.
        max_len: subwords kept per sentence (longer ones are truncated, with a warning that counts them).
        d_model: model width.
        num_layers: encoder and decoder layers (each).
        num_encoder_layers: encoder layers (default: num_layers).
        num_decoder_layers: decoder layers (default: num_layers).
        num_heads: attention heads.
        ffn_dim: feed-forward width.
        dropout: dropout.
        attention_dropout: dropout on attention probabilities.
        positions: absolute position embeddings: none (relative labels only), sinusoidal or learned.
        max_distance: clip distance k of the relative-position labels (encoder chain channel and decoder); 0 = none (use
            with positions=sinusoidal).
        value_labels: also add label embeddings to the attention values (keys only is faster).
        label_smoothing: label smoothing of the cross entropy.
        batch_tokens: padded tokens per training batch.
        eval_sentences: dev sentences translated at each evaluation (0 = all).
        final_beam: beam size of the final translation of the whole dev set (0 = skip).
        length_penalty: length penalty exponent of beam search.
    """

    # subwords
    bpe_vocab: int = option(8000, "BPE vocabulary size (per side when not joint)", "subwords")
    joint_vocab: bool = option(True, "one BPE vocabulary for both sides, with shared embeddings", "subwords")
    max_len: int = option(256, "subwords kept per sentence (longer ones are truncated, with a warning that counts "
                          "them)", "subwords")
    # model
    d_model: int = option(256, "model width", "model")
    num_layers: int = option(3, "encoder and decoder layers (each)", "model")
    num_encoder_layers: int | None = option(None, "encoder layers (default: num_layers)", "model")
    num_decoder_layers: int | None = option(None, "decoder layers (default: num_layers)", "model")
    num_heads: int = option(4, "attention heads", "model")
    ffn_dim: int = option(1024, "feed-forward width", "model")
    dropout: float = option(0.1, "dropout", "model")
    attention_dropout: float = option(0.0, "dropout on attention probabilities", "model")
    positions: str = option("none", "absolute position embeddings: none (relative labels only), sinusoidal or "
                            "learned", "model")
    max_distance: int = option(16, "clip distance k of the relative-position labels (encoder chain channel and "
                               "decoder); 0 = none (use with positions=sinusoidal)", "model")
    value_labels: bool = option(False, "also add label embeddings to the attention values (keys only is faster)",
                                "model")
    label_smoothing: float = option(0.1, "label smoothing of the cross entropy", "task")
    batch_tokens: int = option(2048, "padded tokens per training batch", "task")
    # evaluation
    eval_sentences: int = option(300, "dev sentences translated at each evaluation (0 = all)", "evaluation")
    final_beam: int = option(DEFAULT_BEAM, "beam size of the final translation of the whole dev set (0 = skip)",
                             "evaluation")
    length_penalty: float = option(1.0, "length penalty exponent of beam search", "evaluation")

    def settings(self, graph: bool = False) -> Seq2SeqSettings:
        """The data / decoding :class:`Seq2SeqSettings` of this recipe.

        Args:
            graph: graph to sequence (a source dependency channel).

        Returns:
            The :class:`Seq2SeqSettings`.
        """
        return Seq2SeqSettings(
            max_distance=self.max_distance, graph=graph, joint_vocab=self.joint_vocab, max_src_len=self.max_len,
            max_tgt_len=self.max_len, label_smoothing=self.label_smoothing, batch_tokens=self.batch_tokens,
            eval_sentences=self.eval_sentences, length_penalty=self.length_penalty)

    def model_kwargs(self) -> dict:
        """Keyword arguments of :meth:`Seq2SeqTask.model_config` for this recipe's model size.

        Returns:
            Keyword arguments, as a dict.
        """
        return dict(d_model=self.d_model, num_heads=self.num_heads,
                    num_encoder_layers=self.num_encoder_layers or self.num_layers,
                    num_decoder_layers=self.num_decoder_layers or self.num_layers, ffn_dim=self.ffn_dim,
                    dropout=self.dropout,
                    attention_dropout=self.attention_dropout, decoder_max_distance=self.max_distance,
                    value_labels=self.value_labels, positions=self.positions,
                    max_positions=max(1024, self.max_len + 2))


#: ``g2gt train seq2seq --preset gpu``: a Transformer-base-sized model (d_model 512, 6 + 6 layers, 8 heads, FFN
#: 2048, dropout 0.2) under bfloat16 autocast, 3,000 updates of the device-sized batches (16,384 tokens on an H200,
#: ~120 epochs of Multi30k) at most 10 minutes, for one H200. The step count is an estimate: its speed and BLEU are
#: to be measured on a GPU (benchmarks/gpu_check.py).
SEQ2SEQ_GPU = Preset(
    "gpu", "a Transformer-base-sized model (d_model 512, 6+6 layers, 8 heads, FFN 2048, dropout 0.2) for ~10 "
    "minutes of one H200: bf16 autocast, the device-sized --batch-tokens, 3000 updates (at most 10 minutes), a dev "
    "evaluation every 300",
    Seq2SeqConfig(d_model=512, num_layers=6, num_heads=8, ffn_dim=2048, dropout=0.2),
    replace(SEQ2SEQ_TRAIN, amp="bf16", max_steps=3000, max_minutes=10.0, eval_every=300))
#: the presets of ``g2gt train seq2seq --preset NAME``
SEQ2SEQ_PRESETS = {p.name: p for p in (SEQ2SEQ_GPU,)}
