"""Settings of the learned segmenter, importable without torch (the CLI builds options from them).

* :class:`SegmenterConfig`: the character model and its windows (saved inside checkpoints);
* :class:`SegmentDataConfig`: how training documents are rendered into raw text and cut into windows;
* :class:`ExpanderConfig`: the learned multiword-token expander (saved inside segmenter checkpoints).

Each is a :class:`g2gt.core.config.DictConfig`: ``to_dict`` (tuples as lists, JSON-ready) and ``from_dict``
(keys of other versions ignored, missing ones at their defaults, lists back to tuples).

The defaults are the recipe of ``g2gt train segmenter``: a 3-layer, d_model 64, 2-head chain-graph
encoder over characters (about 0.11 M parameters, keys-only chain labels), on windows of 96 non-space
characters read with 12 characters of context on each side. It is sized for speed: the whole raw text ->
CoNLL-U pipeline must stay above 2,000 words/s on one CPU thread, so the segmenter aims at ten times that
(the sizes tried and their speeds are in the README, "Train a pipeline for any treebank").
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.config import DictConfig, option

__all__ = ["SegmenterConfig", "SegmentDataConfig", "ExpanderConfig", "NUM_LABELS", "LABEL_NAMES"]

#: per-character labels (as Stanza's tokenizer): 0 inside a token or whitespace, 1 token end,
#: 2 token end that ends a sentence, 3 end of a multiword token, 4 multiword token + sentence end
LABEL_NAMES = ("inside", "token_end", "sentence_end", "mwt_end", "mwt_sentence_end")
NUM_LABELS = len(LABEL_NAMES)
#: characters per window of the default model (SegmenterConfig.window)
DEFAULT_WINDOW = 96


@dataclass
class SegmenterConfig(DictConfig):
    """The character tagger: embeddings of lowercased characters plus a character-class feature, a
    :class:`g2gt.nn.GraphEncoder` whose only channel is the chain graph of the window (label = relative
    distance clipped at ``max_distance``), and a linear classifier over :data:`LABEL_NAMES`.

    ``vocab_size`` is set from the training data. ``window`` is the number of characters the model sees at
    once (training and inference); at inference windows overlap by ``2 * context`` characters and each
    character's label comes from the window where it is furthest from the edge.
    """

    vocab_size: int = option(0, "character vocabulary size (set from the training data)", "model")
    d_model: int = option(64, "width of the character encoder", "model")
    num_layers: int = option(3, "encoder layers", "model")
    num_heads: int = option(2, "attention heads", "model")
    ffn_dim: int = option(128, "feed-forward width", "model")
    max_distance: int = option(16, "clip distance of the chain labels (relative positions)", "model")
    value_labels: bool = option(False, "chain-label embeddings on the values too (not only the keys)", "model")
    dropout: float = option(0.1, "dropout", "model")
    window: int = option(DEFAULT_WINDOW, "characters per window (training and inference)", "model")
    context: int = option(12, "inference: characters of overlap on each side of a window", "model")
    spaces_in_tokens: bool = option(False, "a single space may be inside a token (Vietnamese words: 'chủ tịch'); "
                                    "else whitespace always ends a token", "model")
    space_words: tuple[str, ...] = option((), "with spaces_in_tokens: the training data's lowercased tokens of "
                                          "several pieces, a dictionary feature (g2gt.ud.tokenize.words; set "
                                          "from the training data)", "model")


@dataclass
class SegmentDataConfig(DictConfig):
    """How EWT-style documents become training text (:func:`g2gt.ud.tokenize.data.render_document`).

    Each document is rendered in one *style*, drawn with these weights: ``para`` (sentences joined by a
    space, paragraphs by a newline), ``blank`` (paragraphs separated by a blank line), ``flat`` (no newlines
    at all), ``lines`` (one sentence per line) and ``wrap`` (blank lines between paragraphs and lines
    wrapped at 60-100 characters, as UD's ``conllu_to_text`` writes raw text). ``double_space``: chance that
    a space between two sentences is doubled. ``batch_tokens``: characters per training batch, padding
    included, as every other ``batch_tokens`` counts padded tokens: every training window holds ``window``
    characters (a short-text window is padded to it), so a batch is ``batch_tokens // window`` windows
    (:meth:`windows_per_batch`; the default 6144 is 64 windows of 96 characters, and also the segmenter's
    inference budget).
    ``space_word_dropout``: see :mod:`g2gt.ud.tokenize.words`. ``utterances`` adds windows that each hold one
    short text alone, its edges inside the window (:func:`g2gt.ud.tokenize.data.render_utterance`): a
    treebank's documents are long, so without them the model never sees a text of one short sentence.
    """

    style_para: float = option(0.4, "weight of the 'para' rendering (paragraphs on lines)", "data")
    style_blank: float = option(0.15, "weight of the 'blank' rendering (blank line between paragraphs)", "data")
    style_flat: float = option(0.15, "weight of the 'flat' rendering (no newlines)", "data")
    style_lines: float = option(0.15, "weight of the 'lines' rendering (one sentence per line)", "data")
    style_wrap: float = option(0.15, "weight of the 'wrap' rendering (lines wrapped at 60-100 chars)", "data")
    double_space: float = option(0.05, "chance that two sentences are separated by two spaces", "data")
    batch_tokens: int = option(6144, "characters per training batch, padding included: batch_tokens // window "
                               "windows (6144 = 64 windows of 96 characters)", "data")
    eval_style: str = option("para", "rendering of the dev documents for evaluation", "data")
    min_char_count: int = option(2, "characters seen fewer times in training share the unknown id", "data")
    mwt_weight: float = option(1.0, "loss weight of the multiword-token end labels (rare in most treebanks)", "data")
    space_word_dropout: float = option(0.15, "with spaces_in_tokens: chance that a dictionary word is left out "
                                       "of the dictionary feature in a training epoch", "data")
    utterances: float = option(0.1, "extra training windows, as a share of an epoch's windows, that each hold a "
                               "short text alone (1-3 sentences, short ones preferred; 0 = none): what users "
                               "type first, e.g. 'Hi.' (g2gt.ud.tokenize.data.render_utterance)", "data")
    capitalize: float = option(0.5, "chance that such a short text's sentences start with a capital letter "
                               "(when they start with a lowercase one)", "data")

    def windows_per_batch(self, window: int) -> int:
        """Training windows of ``window`` characters per batch: ``batch_tokens // window`` (at least 1)."""
        return max(1, self.batch_tokens // window)

    def style_weights(self) -> dict[str, float]:
        w = {"para": self.style_para, "blank": self.style_blank, "flat": self.style_flat,
             "lines": self.style_lines, "wrap": self.style_wrap}
        if any(v < 0 for v in w.values()) or sum(w.values()) <= 0:
            raise ValueError(f"style weights must be >= 0 and not all 0, got {w}")
        return w




@dataclass
class ExpanderConfig(DictConfig):
    """The learned multiword-token expander (:mod:`g2gt.ud.tokenize.expander`): a character encoder-decoder
    (:class:`g2gt.nn.G2GTransformer`, relative chain labels only, shared character embeddings) from a
    lowercased token surface to its lowercased words joined by a separator symbol. About 0.1 M parameters
    with the defaults; ``vocab_size`` is set from the training pairs."""

    vocab_size: int = option(0, "expander characters + 8 specials (set from the training pairs)", "expander")
    d_model: int = option(64, "width of the expander", "expander")
    num_heads: int = option(4, "expander attention heads", "expander")
    num_layers: int = option(2, "expander encoder layers (and as many decoder layers)", "expander")
    ffn_dim: int = option(128, "expander feed-forward width", "expander")
    dropout: float = option(0.1, "expander dropout", "expander")
    max_distance: int = option(8, "clip distance of the expander's chain labels", "expander")
    label_smoothing: float = option(0.05, "label smoothing of the expander's loss", "expander")
    batch_tokens: int = option(1024, "padded symbols per expander training batch (length-bucketed (surface, "
                               "words) pairs)", "expander")
    copy_ratio: float = option(1.0, "one-word tokens (copied, to learn copying) per multiword token in an "
                               "expander epoch", "expander")
    decide_ratio: float = option(9.0, "decide mode: one-word tokens per multiword token in an expander epoch "
                                 "(0 = no decide mode)", "expander")
