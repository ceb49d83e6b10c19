"""The segmenter as a :class:`g2gt.core.train.Trainer` task.

* ``train_batches``: every epoch renders all training documents into one stream of raw text in random
  styles and order (:func:`g2gt.ud.tokenize.data.render_stream`, seeded by ``(seed, epoch)``), keeps its
  non-space characters with their gap features (:meth:`g2gt.ud.tokenize.chars.CharVocab.compact`), cuts them
  into windows of ``window`` characters from a random offset, shuffles the windows and groups
  ``batch_tokens // window`` of them per batch; each rank takes its :func:`g2gt.core.batch.shard` of them. ``utterances`` (a
  share of those windows) more windows each hold a short text alone, padded (``padding_mask``).
* ``loss``: cross entropy of the 5 character labels, summed over the characters
  (``num_tokens`` = characters); the two multiword-token labels weigh ``mwt_weight``.
* ``evaluate``: segments every dev document rendered in ``eval_style`` with overlapping windows, exactly
  as :class:`g2gt.ud.tokenize.Segmenter` does, and scores tokens, sentences and words by character spans
  (:mod:`g2gt.ud.tokenize.metrics`); also the dev ``loss`` per character. ``score`` = tokens F1 +
  sentences F1 + words F1 selects ``best.pt``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ...core.batch import shard
from .chars import CharVocab
from .config import SegmentDataConfig, SegmenterConfig
from .data import Document, pick_utterance, render_document, render_stream, render_utterance
from .infer import decode_text, predict_probs
from .metrics import SpanScorer
from .mwt import MWTLexicon

__all__ = ["SegmentBatch", "SegmentTask", "METRICS"]

METRICS = ("score", "tokens_f1", "sentences_f1", "words_f1", "loss")


@dataclass
class SegmentBatch:
    """``chars``, ``classes``, ``before``, ``after``, ``labels``: ``[B, n]`` long; ``padding_mask``:
    ``[B, n]`` bool or None."""

    chars: Tensor
    classes: Tensor
    before: Tensor
    after: Tensor
    labels: Tensor
    padding_mask: Tensor | None = None

    def to(self, device, non_blocking: bool = False) -> SegmentBatch:
        mv = (lambda t: None if t is None else t.to(device, non_blocking=non_blocking))
        return SegmentBatch(mv(self.chars), mv(self.classes), mv(self.before), mv(self.after), mv(self.labels),
                            mv(self.padding_mask))


class SegmentTask:
    """Training windows and evaluation of a :class:`g2gt.ud.tokenize.SegmenterModel` (module docstring)."""

    def __init__(self, train_docs: Sequence[Document], dev_docs: Sequence[Document], vocab: CharVocab,
                 lexicon: MWTLexicon, config: SegmenterConfig, data: SegmentDataConfig | None = None,
                 seed: int = 1) -> None:
        if not train_docs:
            raise ValueError("no training documents (the training file has no sentences with tokens)")
        self.train_docs = list(train_docs)
        self.vocab = vocab
        self.lexicon = lexicon
        self.config = config
        self.data = data or SegmentDataConfig()
        self.data.style_weights()  # validate
        self.seed = seed
        self.dev = [render_document(d, self.data.eval_style, random.Random(i)) for i, d in enumerate(dev_docs)]

    # ------------------------------------------------------------------ training
    def _columns(self, text: str, labels: np.ndarray, rng: random.Random) -> list[np.ndarray]:
        """``[ids, classes, before, after, labels]`` (each ``[K]`` int64) of the non-space characters."""
        c = self.vocab.compact(text)
        if self.config.space_words:
            from .words import WordMatcher, mark_word_spaces

            c = mark_word_spaces(text, c, WordMatcher(self.config.space_words).drop(self.data.space_word_dropout, rng))
        return [c.ids, c.classes, c.before, c.after, labels[c.keep].astype(np.int64)]

    def _utterance_windows(self, m: int, rng: random.Random) -> tuple[list[np.ndarray], np.ndarray]:
        """``m`` windows, each one short text alone (:func:`g2gt.ud.tokenize.data.render_utterance`), padded
        to ``window``: the last sentences of a text longer than the window are left out, a single sentence
        longer than it is cut. ``[ids, classes, before, after, labels]`` ``[m, window]`` and the real lengths
        ``[m]``."""
        W = self.config.window
        out = [np.zeros((m, W), dtype=np.int64) for _ in range(5)]
        lengths = np.zeros(m, dtype=np.int64)
        for r in range(m):
            sents = pick_utterance(self.train_docs, rng)
            u = render_utterance(sents, rng, self.data.capitalize)
            while len(sents) > 1 and len(u.text) - sum(c.isspace() for c in u.text) > W:  # keep whole sentences
                sents = sents[:-1]
                u = render_utterance(sents, rng, self.data.capitalize)
            cols = self._columns(u.text, u.labels, rng)
            k = min(len(cols[0]), W)
            for x, col in zip(out, cols):
                x[r, :k] = col[:k]
            lengths[r] = k
        keep = lengths > 0
        return [x[keep] for x in out], lengths[keep]

    def _windows(self, epoch: int) -> tuple[list[np.ndarray], np.ndarray]:
        """All windows of the epoch, shuffled: ``[ids, classes, before, after, labels]`` (each
        ``[N, window]`` int64) and the real length of each window ``[N]``. The stream's windows come first,
        then ``utterances`` times as many short-text windows (:meth:`_utterance_windows`)."""
        rng = random.Random(self.seed * 1_000_003 + epoch)
        text, labels = render_stream(self.train_docs, rng, self.data)
        cols = self._columns(text, labels, rng)
        W, K = self.config.window, len(cols[0])
        off = rng.randrange(W) if K > 2 * W else 0
        n = max(1, (K - off) // W)
        short = off + n * W > K  # the stream holds less than one window: pad it
        if short:
            cols = [np.pad(x, (0, off + n * W - K)) for x in cols]
        cols = [x[off:off + n * W].reshape(n, W) for x in cols]
        lengths = np.full(n, K - off if short else W)
        m = int(round(self.data.utterances * n))
        if m > 0:
            extra, extra_lengths = self._utterance_windows(m, rng)
            cols = [np.concatenate([x, e]) for x, e in zip(cols, extra)]
            lengths = np.concatenate([lengths, extra_lengths])
        order = np.random.default_rng(self.seed * 7_919 + epoch).permutation(len(lengths))
        return [x[order] for x in cols], lengths[order]

    def train_batches(self, epoch: int, rank: int = 0, world_size: int = 1, skip: int = 0) -> Iterator[SegmentBatch]:
        cols, lengths = self._windows(epoch)
        W = cols[0].shape[1]
        B = self.data.windows_per_batch(W)
        for s in shard(range(0, len(lengths), B), rank, world_size)[skip:]:
            sl = slice(s, s + B)
            mask = None
            if (lengths[sl] < W).any():
                mask = torch.from_numpy(np.arange(W)[None, :] >= lengths[sl][:, None])
            yield SegmentBatch(*(torch.from_numpy(np.ascontiguousarray(x[sl])) for x in cols), mask)

    def num_tokens(self, batch: SegmentBatch) -> int:
        if batch.padding_mask is None:
            return batch.chars.numel()
        return int((~batch.padding_mask).sum())

    def loss(self, model, batch: SegmentBatch) -> Tensor:
        logits = model(batch.chars, batch.classes, batch.before, batch.after, batch.padding_mask)
        target = batch.labels
        if batch.padding_mask is not None:
            target = target.masked_fill(batch.padding_mask, -100)
        weight = None
        if self.data.mwt_weight != 1.0:  # multiword-token ends are rare: weigh their labels up
            weight = torch.ones(logits.shape[-1], device=logits.device)
            weight[3:] = self.data.mwt_weight
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), target.reshape(-1), weight=weight,
                               reduction="sum", ignore_index=-100)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, model) -> dict[str, float]:
        scorer = SpanScorer()
        texts = [r.text for r in self.dev]
        outs = predict_probs(model, self.vocab, texts)
        nll, chars = 0.0, 0
        for r, cp in zip(self.dev, outs):
            sp = decode_text(r.text, *cp, final_tokens=self.lexicon.final_tokens)
            probs = cp.probs
            s, e = sp.starts.tolist(), sp.ends.tolist()
            mwt = sp.mwt.tolist()
            score = sp.mwt_score.tolist()
            self.lexicon.prepare([r.text[s[k]:e[k]] for k in range(len(s)) if mwt[k]],
                                 [r.text[s[k]:e[k]] for k in range(len(s)) if self.lexicon.is_candidate(score[k])])
            pred_tokens = [(s[k], e[k], self.lexicon.words(r.text[s[k]:e[k]], mwt[k], score[k]))
                           for k in range(len(s))]
            pred_sents = [(s[a], e[b - 1]) for a, b in sp.sentences]
            scorer.add(r.tokens, r.sentences, pred_tokens, pred_sents)
            if len(r.labels):
                p = probs[np.arange(len(r.labels)), r.labels.astype(np.int64)]
                nll -= float(np.log(np.clip(p, 1e-12, 1.0)).sum())
                chars += len(r.labels)
        out = scorer.scores()
        out["loss"] = nll / max(chars, 1)
        return out

    def checkpoint_extra(self) -> dict:
        from .segmenter import CHECKPOINT_KIND

        return {"kind": CHECKPOINT_KIND, "vocab": self.vocab.to_list(), **self.lexicon.checkpoint_entries(),
                "data_config": self.data.to_dict()}
