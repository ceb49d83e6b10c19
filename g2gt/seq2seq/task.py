"""Sequence-to-sequence (and graph-to-sequence) translation on the G2GT core.

A source sentence is a *chain graph*: its subword tokens are the nodes and every
pair ``(i, j)`` carries the clipped relative distance ``clip(j - i, -k, k)``
(:func:`g2gt.chain_graph`), which the encoder's graph attention reads like
Shaw et al.'s relative positions. The decoder is causal with its own chain
labels, plus cross-attention (:class:`g2gt.nn.G2GTransformer`).

**Graph-to-sequence.** With source parses (CoNLL-U, one sentence per source
line) the source nodes are the subwords of the CoNLL-U words and the encoder
gets a second channel, the dependency graph. The parse is over *words*, the
model over *subwords*; we bridge them like this:

* every word is BPE'd on its own (:meth:`SubwordTokenizer.encode_words`), so
  each subword ``t`` belongs to exactly one word ``w(t)``;
* the pair of subwords ``(s, t)`` of different words gets the label of the word
  pair ``(w(s), w(t))`` in :meth:`Sentence.to_graph`'s ``deps`` channel
  (``rel↑`` dependent -> head, ``rel↓`` head -> dependent, 0 otherwise), so all
  pieces of a dependent see all pieces of its head;
* two different subwords of the same word get the extra label ``<subword>``;
* the chain channel runs over subwords, as in the plain model.

Training objective: label-smoothed cross entropy, summed over target tokens
(the :class:`g2gt.core.train.Trainer` divides by :meth:`Seq2SeqTask.num_tokens`).
Evaluation: greedy decoding of (a subset of) the dev set, detokenized, scored
with sacreBLEU (BLEU and chrF, cased); the metric to maximise is ``"bleu"``.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from ..core.batch import BucketBatchSampler, GraphBatch, collate, pad_sequences, token_budget_batches
from ..core.graph import EdgeChannel, Graph, LabelVocab, chain_graph, num_chain_labels
from ..nn.transformer import G2GTConfig, G2GTransformer
from .subword import SubwordTokenizer
from .config import Seq2SeqSettings
from .data import check_aligned
from .metrics import mt_scores

__all__ = ["SUBWORD_LABEL", "ParallelData", "Seq2SeqBatch", "Seq2SeqSettings", "Seq2SeqTask", "load_seq2seq",
           "subword_dependency_channel"]

SUBWORD_LABEL = "<subword>"


# ---------------------------------------------------------------------------- settings / data
@dataclass
class ParallelData:
    """Encoded sentence pairs.

    ``src[i]`` / ``tgt[i]`` subword ids (no BOS/EOS), ``deps[i]`` the source dependency channel over subwords (graph
    mode), ``refs`` the raw target sentences (for BLEU).

    Args:
        src: source subword ids of each pair.
        tgt: target subword ids of each pair.
        refs: the raw target sentences (default: none).
        deps: the source dependency channels (graph mode; ``None``: none).
    """

    src: list[list[int]]
    tgt: list[list[int]]
    refs: list[str] = field(default_factory=list)
    deps: list[EdgeChannel] | None = None

    def __len__(self) -> int:
        return len(self.src)


@dataclass
class Seq2SeqBatch:
    """A training batch of sentence pairs.

    Args:
        src: the padded source graphs.
        tgt_in: ``[B, m]`` BOS + target (``pad_id`` where padded).
        tgt_out: ``[B, m]`` target + EOS (``pad_id`` where padded).
        pad_id: id of padding in ``tgt_in`` / ``tgt_out``.
    """

    src: GraphBatch
    tgt_in: Tensor
    tgt_out: Tensor
    pad_id: int = 0

    def to(self, device, non_blocking: bool = False) -> "Seq2SeqBatch":
        """The batch with every tensor moved to ``device``.

        Args:
            device: the target device.
            non_blocking: as in ``Tensor.to``.

        Returns:
            A new :class:`Seq2SeqBatch`.
        """
        return Seq2SeqBatch(self.src.to(device, non_blocking=non_blocking),
                            self.tgt_in.to(device, non_blocking=non_blocking),
                            self.tgt_out.to(device, non_blocking=non_blocking), self.pad_id)

    def __len__(self) -> int:
        return self.tgt_in.shape[0]


def subword_dependency_channel(word_labels: Tensor, word_index: Sequence[int], subword_label: int,
                               num_labels: int) -> EdgeChannel:
    """Lift a word-level label matrix to subwords (see the module docstring).

    Args:
        word_labels: ``[n_words, n_words]`` long, the word graph (0 = no relation).
        word_index: ``word_index[t]`` = word of subword ``t`` (length ``n_sub``).
        subword_label: id for two different subwords of the same word.
        num_labels: size of the label set.

    Returns:
        an :class:`EdgeChannel` over ``n_sub`` nodes.
    """
    w = torch.as_tensor(list(word_index), dtype=torch.long)
    if w.numel() == 0:
        return EdgeChannel(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long), num_labels)
    dense = word_labels[w][:, w].clone()  # [n_sub, n_sub]
    same = (w[:, None] == w[None, :]) & ~torch.eye(w.numel(), dtype=torch.bool)
    dense[same] = subword_label
    idx = dense.nonzero(as_tuple=False).t()
    return EdgeChannel(idx, dense[idx[0], idx[1]], num_labels)


def _truncate(seqs: list[list[int]], limit: int, what: str) -> int:
    """Cut every sequence to ``limit`` in place; warn with the count. Returns the count."""
    n = 0
    for i, s in enumerate(seqs):
        if len(s) > limit:
            seqs[i] = s[:limit]
            n += 1
    if n:
        warnings.warn(f"{what}: truncated {n} of {len(seqs)} sentence(s) longer than {limit} subwords "
                      "(raise --max-len to keep them)", stacklevel=3)
    return n


# ---------------------------------------------------------------------------- the task
class Seq2SeqTask:
    """Translation task for :class:`g2gt.core.train.Trainer` (see its module docstring).

    Args:
        src_tok: the source subword tokenizer (the same object as ``tgt_tok`` with a joint vocabulary).
        tgt_tok: the target subword tokenizer.
        settings: :class:`Seq2SeqSettings`.
        train: encoded training data (``None`` for a model used only to translate).
        dev: encoded dev data (``None`` for a model used only to translate).
        rel_vocab: dependency label vocabulary of the source channel (graph mode).
        seed: data-order seed.
    """

    def __init__(self, src_tok: SubwordTokenizer, tgt_tok: SubwordTokenizer, settings: Seq2SeqSettings,
                 train: ParallelData | None = None, dev: ParallelData | None = None,
                 rel_vocab: LabelVocab | None = None, seed: int = 1) -> None:
        self.src_tok, self.tgt_tok = src_tok, tgt_tok
        self.settings = settings
        self.train, self.dev = train, dev
        self.rel_vocab = rel_vocab
        self.seed = seed
        if settings.graph and rel_vocab is None:
            raise ValueError("graph mode needs a dependency label vocabulary (rel_vocab)")
        self.pad_id, self.bos_id, self.eos_id = tgt_tok.pad_id, tgt_tok.bos_id, tgt_tok.eos_id
        self._train_lengths: list[int] | None = None

    # ---- construction helpers
    @property
    def channels(self) -> list[str]:
        ch = ["position"] if self.settings.max_distance > 0 else []
        return ch + (["deps"] if self.settings.graph else [])

    def encoder_label_sizes(self) -> list[int]:
        """Label-table sizes of the encoder's channels.

        The chain channel (when ``max_distance > 0``), then the dependency channel (graph mode).

        Returns:
            The sizes, one per channel.
        """
        sizes = [num_chain_labels(self.settings.max_distance)] if self.settings.max_distance > 0 else []
        if self.settings.graph:
            sizes.append(len(self.rel_vocab))
        return sizes

    def model_config(self, **kw) -> G2GTConfig:
        """A :class:`G2GTConfig` matching this task's vocabularies and label channels.

        Args:
            **kw: :class:`G2GTConfig` fields (model size, dropout ...).

        Returns:
            The :class:`G2GTConfig`.
        """
        joint = self.src_tok is self.tgt_tok or self.settings.joint_vocab
        base = dict(src_vocab_size=self.src_tok.vocab_size, tgt_vocab_size=self.tgt_tok.vocab_size,
                    num_labels=self.encoder_label_sizes(), share_embeddings=bool(joint),
                    pad_id=self.pad_id, bos_id=self.bos_id, eos_id=self.eos_id)
        base.update(kw)
        return G2GTConfig(**base)

    def build_model(self, **kw) -> G2GTransformer:
        """A new :class:`G2GTransformer` for this task.

        Args:
            **kw: :class:`G2GTConfig` fields, as for :meth:`model_config`.

        Returns:
            The model.
        """
        return G2GTransformer(self.model_config(**kw))

    def checkpoint_extra(self) -> dict:
        """Tokenizers (JSON strings), settings and label vocabulary: ``weights_only``-safe.

        Returns:
            A dict of plain data.
        """
        joint = self.src_tok is self.tgt_tok
        return {
            "kind": "seq2seq",
            "src_tokenizer": self.src_tok.to_str(),
            "tgt_tokenizer": None if joint else self.tgt_tok.to_str(),
            "settings": self.settings.to_dict(),
            "rel_vocab": self.rel_vocab.to_list() if self.rel_vocab is not None else None,
        }

    @classmethod
    def from_checkpoint_extra(cls, extra: dict) -> "Seq2SeqTask":
        """The task :meth:`checkpoint_extra` saved (without data).

        Args:
            extra: what :meth:`checkpoint_extra` returned.

        Returns:
            The :class:`Seq2SeqTask`.

        Raises:
            ValueError: ``extra`` is not from a seq2seq checkpoint.
        """
        if extra.get("kind") != "seq2seq":
            raise ValueError(f"not a seq2seq checkpoint (task kind {extra.get('kind')!r})")
        src = SubwordTokenizer.from_str(extra["src_tokenizer"])
        tgt = src if extra.get("tgt_tokenizer") is None else SubwordTokenizer.from_str(extra["tgt_tokenizer"])
        rv = LabelVocab.from_list(extra["rel_vocab"]) if extra.get("rel_vocab") else None
        return cls(src, tgt, Seq2SeqSettings.from_dict(extra["settings"]), rel_vocab=rv)

    # ---- encoding
    def encode_sources(self, sentences: Sequence[str], what: str = "source") -> list[list[int]]:
        """Source sentences -> subword ids, truncated to ``max_src_len``.

        Args:
            sentences: raw source sentences.
            what: what they are, in the truncation warning.

        Returns:
            The ids of each sentence.
        """
        ids = self.src_tok.encode_batch(list(sentences))
        _truncate(ids, self.settings.max_src_len, what)
        return ids

    def encode_graph_sources(self, parsed: Sequence, what: str = "source") -> tuple[list[list[int]], list[EdgeChannel]]:
        """CoNLL-U sentences (:class:`g2gt.ud.io.sentence.Sentence`) -> subword ids + dependency channels.

        Args:
            parsed: the parsed source sentences.
            what: what they are, in the truncation warning.

        Returns:
            ``(ids, channels)``, one of each per sentence.
        """
        rv = self.rel_vocab
        sub_label = rv.get(SUBWORD_LABEL)
        words = [list(s.forms) for s in parsed]
        enc = self.src_tok.encode_words_batch(words)
        ids, deps, n_cut = [], [], 0
        for sent, (tok_ids, widx) in zip(parsed, enc, strict=True):
            g = sent.to_graph(rel_vocab=rv, max_distance=max(1, self.settings.max_distance))
            n = len(sent)
            wl = g.label_matrix("deps") if "deps" in g.channels else torch.zeros(n, n, dtype=torch.long)
            if len(tok_ids) > self.settings.max_src_len:
                tok_ids, widx = tok_ids[: self.settings.max_src_len], widx[: self.settings.max_src_len]
                n_cut += 1
            ids.append(tok_ids)
            deps.append(subword_dependency_channel(wl, widx, sub_label, len(rv)))
        if n_cut:
            warnings.warn(f"{what}: truncated {n_cut} of {len(ids)} sentence(s) longer than "
                          f"{self.settings.max_src_len} subwords", stacklevel=2)
        return ids, deps

    def encode_targets(self, sentences: Sequence[str], what: str = "target") -> list[list[int]]:
        """Target sentences -> subword ids, truncated to ``max_tgt_len - 1`` (room for EOS).

        Args:
            sentences: raw target sentences.
            what: what they are, in the truncation warning.

        Returns:
            The ids of each sentence.
        """
        ids = self.tgt_tok.encode_batch(list(sentences))
        _truncate(ids, self.settings.max_tgt_len - 1, what)  # room for EOS
        return ids

    def encode_pairs(self, src: Sequence[str] | Sequence, tgt: Sequence[str], name: str = "data") -> ParallelData:
        """Raw sentence pairs (or CoNLL-U sentences + targets in graph mode) -> :class:`ParallelData`.

        Args:
            src: the sources.
            tgt: the targets, one per source.
            name: the data's name, in messages.

        Returns:
            The :class:`ParallelData`.

        Raises:
            MisalignedError: the two sides have different lengths.
        """
        check_aligned(len(src), f"{name} source", len(tgt), f"{name} target")
        if self.settings.graph:
            s, deps = self.encode_graph_sources(src, f"{name} source")
        else:
            s, deps = self.encode_sources(src, f"{name} source"), None
        return ParallelData(s, self.encode_targets(tgt, f"{name} target"), list(tgt), deps)

    # ---- batching
    def source_graph(self, ids: list[int], deps: EdgeChannel | None = None) -> Graph:
        """One source sentence as a graph: chain channel over its subwords (+ dependency channel).

        Args:
            ids: the subword ids.
            deps: the dependency channel (graph mode; ``None``: none).

        Returns:
            The :class:`Graph`.
        """
        if self.settings.max_distance > 0:
            g = chain_graph(ids, self.settings.max_distance)
        else:
            g = Graph(list(ids))
        if self.settings.graph:
            if deps is None:
                raise ValueError("this model reads source parses (graph mode); none were given")
            g = g.with_channel("deps", deps)
        return g

    def collate_sources(self, ids: Sequence[list[int]], deps: Sequence[EdgeChannel] | None = None) -> GraphBatch:
        """Encoded sources -> a padded :class:`GraphBatch` of their graphs.

        Args:
            ids: the subword ids of each source.
            deps: their dependency channels (``None``: none).

        Returns:
            The :class:`GraphBatch`.
        """
        graphs = [self.source_graph(s, None if deps is None else deps[i]) for i, s in enumerate(ids)]
        return collate(graphs, channels=self.channels, pad_id=self.pad_id)

    def make_batch(self, data: ParallelData, indices: Sequence[int]) -> Seq2SeqBatch:
        """A training batch of some pairs of ``data``.

        Args:
            data: the encoded pairs.
            indices: the pairs to take.

        Returns:
            The :class:`Seq2SeqBatch`.
        """
        src = self.collate_sources([data.src[i] for i in indices],
                                   None if data.deps is None else [data.deps[i] for i in indices])
        tgt_in = pad_sequences([[self.bos_id] + data.tgt[i] for i in indices], self.pad_id)
        tgt_out = pad_sequences([data.tgt[i] + [self.eos_id] for i in indices], self.pad_id)
        return Seq2SeqBatch(src, tgt_in, tgt_out, self.pad_id)

    def _sampler(self, data: ParallelData, shuffle: bool, epoch: int = 0, rank: int = 0, world: int = 1,
                 skip: int = 0) -> BucketBatchSampler:
        lengths = [max(len(s), len(t) + 1, 1) for s, t in zip(data.src, data.tgt, strict=True)]
        budget = max(self.settings.batch_tokens, max(lengths, default=1))
        sampler = BucketBatchSampler(lengths, budget, shuffle=shuffle, seed=self.seed, num_replicas=world,
                                     rank=rank)
        sampler.set_epoch(epoch, skip)
        return sampler

    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> Iterator[Seq2SeqBatch]:
        """This rank's training batches of ``epoch`` (token-budget buckets).

        Args:
            epoch: the epoch.
            rank: this process's rank.
            world_size: number of processes.
            skip: batches to leave out at the start.

        Yields:
            Seq2SeqBatch objects.

        Raises:
            RuntimeError: the task has no training data.
        """
        if self.train is None:
            raise RuntimeError("this Seq2SeqTask has no training data")
        for idx in self._sampler(self.train, True, epoch, rank, world_size, skip):
            yield self.make_batch(self.train, idx)

    def num_tokens(self, batch: Seq2SeqBatch) -> int:
        """The non-pad target tokens of ``batch`` (what :meth:`loss` sums over).

        Args:
            batch: a training batch.

        Returns:
            The count.
        """
        return int((batch.tgt_out != batch.pad_id).sum())

    def loss(self, model, batch: Seq2SeqBatch) -> Tensor:
        """Label-smoothed cross entropy, **summed** over the non-pad target tokens.

        Args:
            model: the :class:`G2GTransformer`.
            batch: a training batch.

        Returns:
            A scalar tensor.
        """
        logits = model(batch.src.tokens, batch.src.labels if batch.src.labels.shape[1] else None,
                       batch.src.padding_mask, batch.tgt_in)
        return F.cross_entropy(logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=batch.pad_id,
                               label_smoothing=self.settings.label_smoothing, reduction="sum")

    # ---- decoding
    def _max_len(self, src_len: int) -> int:
        s = self.settings
        return max(1, min(s.max_tgt_len, int(math.ceil(s.max_len_a * src_len + s.max_len_b))))

    @torch.no_grad()
    def translate_ids(self, model, src: Sequence[list[int]], deps: Sequence[EdgeChannel] | None = None,
                      beam: int = 1, length_penalty: float | None = None, batch_size: int = 64,
                      progress: bool = False, batch_tokens: int | None = None) -> list[list[int]]:
        """Decode encoded sources (greedy for ``beam = 1``, else beam search).

        Returns target ids in input order. Empty sources give empty outputs without running the model.

        Sources are decoded shortest first, in batches of at most ``batch_size`` sentences and, when
        ``batch_tokens`` is given, at most ``batch_tokens`` padded source subwords (a longer sentence is decoded
        alone).

        Args:
            model: the :class:`G2GTransformer`.
            src: the encoded sources.
            deps: their dependency channels (graph mode; ``None``: none).
            beam: beam size (1: greedy).
            length_penalty: length penalty exponent (``None``: the settings').
            batch_size: most sentences per batch.
            progress: show a progress bar.
            batch_tokens: most padded source subwords per batch (``None``: no limit).

        Returns:
            The target ids of each source.

        Raises:
            ValueError: ``beam``, ``batch_size`` or ``batch_tokens`` is not an integer >= 1.
        """
        _check_positive_int("beam", beam, "1 = greedy search")
        _check_positive_int("batch_size", batch_size, "sentences decoded together")
        if batch_tokens is not None:
            _check_positive_int("batch_tokens", batch_tokens, "padded source subwords per batch")
        lp = self.settings.length_penalty if length_penalty is None else length_penalty
        device = next(model.parameters()).device
        was = model.training
        model.eval()
        out: list[list[int]] = [[] for _ in src]
        todo = [i for i in range(len(src)) if len(src[i])]
        batches = token_budget_batches([len(src[i]) for i in todo], batch_tokens or sys.maxsize, max_items=batch_size)
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="translate", disable=not progress, dynamic_ncols=True, file=sys.stderr)
        try:
            for batch in batches:
                idx = [todo[j] for j in batch]
                gb = self.collate_sources([src[i] for i in idx], None if deps is None else [deps[i] for i in idx])
                gb = gb.to(device)
                labels = gb.labels if gb.labels.shape[1] else None
                hyps = model.generate(gb.tokens, labels, gb.padding_mask, beam=beam, length_penalty=lp,
                                      max_new_tokens=self._max_len(int(gb.lengths.max())))
                for i, h in zip(idx, hyps, strict=True):
                    out[i] = h
                bar.update(len(idx))
        finally:
            bar.close()
            model.train(was)
        return out

    def translate(self, model, sentences: Sequence[str] | Sequence, beam: int = 1,
                  length_penalty: float | None = None, batch_size: int = 64, progress: bool = False,
                  batch_tokens: int | None = None) -> list[str]:
        """Raw sentences (or CoNLL-U sentences in graph mode) -> detokenized translations.

        One per input, ``""`` for an empty input (batching as in :meth:`translate_ids`).

        Args:
            model: the :class:`G2GTransformer`.
            sentences: raw sentences, or parsed ones in graph mode.
            beam: beam size (1: greedy).
            length_penalty: length penalty exponent (``None``: the settings').
            batch_size: most sentences per batch.
            progress: show a progress bar.
            batch_tokens: most padded source subwords per batch (``None``: no limit).

        Returns:
            One translation per input.
        """
        if self.settings.graph:
            ids, deps = self.encode_graph_sources(sentences, "input")
        else:
            ids, deps = self.encode_sources(sentences, "input"), None
        hyps = self.translate_ids(model, ids, deps, beam, length_penalty, batch_size, progress, batch_tokens)
        return self.tgt_tok.decode_batch(hyps)

    # ---- evaluation
    @torch.no_grad()
    def dev_loss(self, model, data: ParallelData) -> float:
        """Mean label-smoothed loss per target token on ``data``.

        Args:
            model: the :class:`G2GTransformer`.
            data: the encoded pairs.

        Returns:
            The mean loss.
        """
        total, n = 0.0, 0
        device = next(model.parameters()).device
        for idx in self._sampler(data, False):
            b = self.make_batch(data, idx).to(device)
            total += float(self.loss(model, b))
            n += self.num_tokens(b)
        return total / max(n, 1)

    def evaluate(self, model) -> dict[str, float]:
        """Dev scores: ``{"bleu", "chrf", "dev_loss"}``.

        From a greedy (or ``eval_beam``) translation of the first ``eval_sentences`` dev pairs.

        Args:
            model: the :class:`G2GTransformer`.

        Returns:
            ``{"bleu", "chrf", "dev_loss"}``.
        """
        if self.dev is None:
            raise RuntimeError("this Seq2SeqTask has no dev data")
        k = self.settings.eval_sentences or len(self.dev)
        sub = ParallelData(self.dev.src[:k], self.dev.tgt[:k], self.dev.refs[:k],
                           None if self.dev.deps is None else self.dev.deps[:k])
        hyps = self.tgt_tok.decode_batch(self.translate_ids(model, sub.src, sub.deps, beam=self.settings.eval_beam))
        scores = mt_scores(sub.refs, hyps)
        return {"bleu": scores["bleu"], "chrf": scores["chrf"], "dev_loss": self.dev_loss(model, self.dev)}


def _check_positive_int(name: str, value, meaning: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1 ({meaning}), got {value!r}")


def load_seq2seq(path: str | os.PathLike, device: str | torch.device = "auto",
                 dtype: str | torch.dtype | None = "auto") -> tuple[G2GTransformer, Seq2SeqTask]:
    """Load a trained model and its task.

    Uses ``weights_only=True`` and ``strict=True``.

    Args:
        path: a checkpoint file or a training folder (``best.pt``, else ``last.pt``).
        device: as every loader: ``"auto"`` (default: CUDA when available), ``"cpu"``, ``"cuda:1"`` ...
        dtype: as every loader: ``"auto"`` (default: :func:`g2gt.core.runtime.resolve_dtype`'s choice for the
            device), ``"float32"``, ``"bfloat16"``, ``"float16"`` or a ``torch.dtype``.

    Returns:
        ``(model, task)``, the model in eval mode.
    """
    from ..core.checkpoint import load_checkpoint, resolve_checkpoint
    from ..core.runtime import resolve_device, resolve_dtype

    device = resolve_device(device)
    dt = resolve_dtype(dtype, device)
    state = load_checkpoint(resolve_checkpoint(path), device)
    task = Seq2SeqTask.from_checkpoint_extra(state.get("task", {}))
    model = G2GTransformer(G2GTConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"], strict=True)
    model.to(device=device, dtype=dt).eval()
    return model, task
