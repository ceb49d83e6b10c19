"""``Enhancer.load(model_dir).enhance(sentences)``: add the enhanced graph (DEPS) to parsed sentences.

The input's basic tree (HEAD / DEPREL, from any parser or gold) is checked -- one single-rooted tree per
sentence, else :class:`g2gt.ud.io.CoNLLUError` naming ``FILE:LINE`` -- and never changed: the output sentences
are copies whose DEPS column of the words is replaced, every other column and line being kept byte for byte
when written with :func:`g2gt.ud.io.write_conllu`.

Empty nodes are **kept, not predicted**: the input's empty nodes stay as they are (their own DEPS
included), and so do the words' DEPS edges to them; every word also gets the predicted edges between
words. An input without empty nodes gives an output without them. ``goeswith`` dependents get exactly
their basic edge, as the UD validator requires.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Sequence

import torch

from ...core.batch import inference_batch_tokens, token_budget_batches
from ..io.conllu import CoNLLUError
from ..limits import CHUNK_SENTENCES, CHUNK_WORDS, iter_chunks, over_limit
from ..stage import checkpoint_record, prepare_for_inference, read_stage, save_stage
from .data import EnhancerVocab, check_input_tree, deps_sort_key, make_batch, make_example, sentence_edges
from .decode import choose_labels, decode_edges
from .labels import MARKED_RELATIONS, PLACEHOLDER, TreeView, fill_template, sentence_markers
from .model import EnhancerConfig, EnhancerModel
from ...core.registry import DEFAULT_MODEL

__all__ = ["Enhancer", "copy_basic", "basic_edges", "enhance_stream"]

Edge = tuple[int, int | str, str]  # (dependent word, head word or empty node "8.1", relation)


def _empty_ids(sent) -> list[str]:
    return ["".join(str(x) for x in t["id"]) for t in sent.rows if isinstance(t["id"], tuple) and t["id"][1] == "."]


def _kept_edges(sent) -> list[Edge]:
    """The input's DEPS edges from words to empty nodes (kept as they are); none without empty nodes."""
    if not _empty_ids(sent):
        return []
    try:
        return [(d, h, lab) for d, h, lab in sentence_edges(sent, required=False) if isinstance(h, str)]
    except CoNLLUError:
        return []


def _conllu_head(h: int | str):
    if isinstance(h, int):
        return h
    a, _, b = h.partition(".")
    return (int(a), ".", int(b))


def _set_deps(sent, edges: Sequence[Edge]):
    """A copy of ``sent`` whose words' DEPS are ``edges`` (sorted by head, then relation)."""
    c = sent.copy()
    words = c.word_rows
    per: list[list[tuple[str, int | str]]] = [[] for _ in words]
    for d, h, lab in edges:
        per[d - 1].append((lab, h))
    for tok, deps in zip(words, per):
        deps.sort(key=lambda x: (deps_sort_key(x[1]), x[0]))
        tok["deps"] = [(lab, _conllu_head(h)) for lab, h in deps]
    return c


def basic_edges(sent) -> list[Edge]:
    """The baseline enhanced graph: the basic tree itself, with a case-marked relation (``obl`` ->
    ``obl:in``) wherever the relation has no subtype and the dependent has a marker
    (:func:`g2gt.ud.enhance.labels.sentence_markers`), plus the input's edges to empty nodes."""
    check_input_tree(sent)
    markers = sentence_markers(TreeView.of(sent))
    out: list[Edge] = []
    for d, (h, r) in enumerate(zip(sent.heads, sent.deprels), 1):
        lab = fill_template(f"{r}:{PLACEHOLDER}", d, markers) if r in MARKED_RELATIONS else r
        out.append((d, int(h), lab))
    return sorted(out + _kept_edges(sent), key=lambda e: (e[0], deps_sort_key(e[1]), e[2]))


def copy_basic(sentences: Sequence) -> list:
    """Copies of ``sentences`` whose DEPS is :func:`basic_edges` (the copy-the-tree baseline)."""
    return [_set_deps(s, basic_edges(s)) for s in sentences]


def enhance_stream(enhance, sentences: Iterable, chunk_sentences: int | None = CHUNK_SENTENCES,
                   chunk_words: int | None = CHUNK_WORDS, stats: dict | None = None) -> Iterator:
    """``enhance(chunk)`` (a function of a list of sentences: :meth:`Enhancer.enhance`, :func:`copy_basic`) over a
    stream of sentences, one chunk at a time: a chunk holds ``chunk_sentences`` sentences, fewer once it holds
    ``chunk_words`` words (:func:`g2gt.ud.limits.iter_chunks`, as ``Pipeline.stream`` and ``g2gt parse`` cut
    theirs), so memory does not grow with the input. Each chunk's trees are checked before its work
    (:class:`CoNLLUError` naming ``FILE:LINE``). An input of one chunk gives what ``enhance(list(sentences))``
    gives; a longer one, each chunk's.

    Args:
        enhance: the function applied to each chunk (a list of sentences -> their enhanced copies, in order).
        sentences: parsed sentences, any iterable (e.g. :func:`g2gt.ud.io.iter_conllu`); consumed a chunk at a time.
        chunk_sentences: sentences per chunk at most (``None``: no bound).
        chunk_words: words per chunk at most (``None``: no bound).
        stats: a dict that the ``sentences`` and ``words`` read are counted into (``None``: no counts).

    Yields:
        The enhanced copies, in input order.
    """
    for part in iter_chunks(sentences, chunk_sentences, chunk_words):
        for s in part:
            check_input_tree(s)
        if stats is not None:
            stats["sentences"] = stats.get("sentences", 0) + len(part)
            stats["words"] = stats.get("words", 0) + sum(len(s) for s in part)
        yield from enhance(part)


class Enhancer:
    """A trained enhanced-graph model (see the module docstring).

    Args:
        model: the trained network.
        vocab: its vocabularies.
        threshold: edge logit above which a pair is an edge (0: probability 0.5).
    """

    def __init__(self, model: EnhancerModel, vocab: EnhancerVocab, threshold: float = 0.0) -> None:
        self.record: dict = {}  # the checkpoint's config / vocabularies / training record, for save()
        self.file: Path | None = None
        self.dtype: torch.dtype = torch.float32
        self.model = model
        self.vocab = vocab
        self.threshold = threshold
        if "root" not in vocab.label_index:
            raise ValueError("the label vocabulary has no 'root' label")
        self.root_label = vocab.label_index["root"]

    kind = "enhancer"  # the checkpoint's task kind

    @classmethod
    def load(cls, name_or_path: str | Path = DEFAULT_MODEL, device: str | torch.device = "auto",
             dtype: torch.dtype | str | None = "auto") -> "Enhancer":
        """Load the enhance stage.

        Of a shipped model by name (``"en_combined"``), a model folder's ``enhancer.pt``, or ``best.pt`` (else
        ``last.pt``) of a folder written by ``g2gt train enhancer`` (or that file), with ``weights_only=True`` and
        ``strict=True``.

        Args:
            name_or_path: a shipped model's name (default ``"en_combined"``), a model folder, a training folder or a
                checkpoint file.
            device: ``"auto"`` (default: a GPU when there is one, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
            dtype: ``"auto"`` (default: :func:`g2gt.core.runtime.resolve_dtype`'s choice for the device; never int8
                here: its accuracy with int8 is unmeasured), ``"float32"``, ``"bfloat16"``, ``"float16"`` or a
                ``torch.dtype``.

        Returns:
            The :class:`Enhancer`.
        """
        path = name_or_path
        file, ck, device, dt = read_stage(path, "enhancer", cls.kind, device, dtype)
        extra = ck.get("task", {})
        model = EnhancerModel(EnhancerConfig.from_dict(ck["model_config"]))
        model.load_state_dict(ck["model"], strict=True)
        out = cls(prepare_for_inference(model, dt, device), EnhancerVocab.from_dict(extra["vocab"]),
                  float(extra.get("threshold", 0.0)))
        out.record, out.file, out.dtype = checkpoint_record(ck), file, dt
        return out

    def save(self, path: str | Path, storage_dtype: str | torch.dtype = "float16") -> Path:
        """Write this stage as one checkpoint file that :meth:`load` reads.

        Args:
            path: the file to write.
            storage_dtype: dtype of the floating-point weights in the file (default ``"float16"``).

        Returns:
            The path.
        """
        record = self.record or {"model_config": self.model.config.to_dict(),
                                 "task": {"vocab": self.vocab.to_dict(), "threshold": self.threshold}}
        record = {**record, "task": {**record["task"], "kind": self.kind}}
        return save_stage(path, self.model, record, self.file, self.dtype is torch.qint8, storage_dtype)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @staticmethod
    def _batches(lengths: list[int], batch_tokens: int) -> list[list[int]]:
        """Inference batches: :func:`g2gt.core.batch.token_budget_batches` without a cap on node pairs."""
        return token_budget_batches(lengths, batch_tokens)

    def predict(self, sentences: Sequence, batch_tokens: int | None = None, progress: bool = False,
                check: bool = True) -> list[list[Edge]]:
        """The enhanced edges ``(d, h, relation)`` of every sentence, in input order.

        Sorted by dependent, then head; heads are words (0 = ROOT) or, for edges kept from the input, empty-node ids.
        A sentence over the word limit (:mod:`g2gt.ud.limits`) gets its basic tree (:func:`basic_edges`) with one
        warning line, so that memory stays bounded and the output valid.

        Args:
            sentences: parsed sentences (:class:`Sentence`).
            batch_tokens: padded words per batch (``None``: the device's default,
                :func:`g2gt.core.batch.inference_batch_tokens`: 1000 on the CPU, more on a GPU).
            progress: show a progress bar.
            check: verify each basic tree first (:class:`CoNLLUError` with ``FILE:LINE`` otherwise).

        Returns:
            The edges of each sentence.

        Raises:
            CoNLLUError: with ``check``, a sentence whose basic tree is broken (``FILE:LINE``).
        """
        if check:
            for s in sentences:
                check_input_tree(s)
        long = over_limit(sentences, "the enhanced graph (DEPS)", "DEPS is its basic tree (as --copy-basic)")
        if long:  # bounded memory: a long sentence's DEPS is its basic tree, the others are predicted
            keep = [i for i in range(len(sentences)) if i not in long]
            preds = self.predict([sentences[i] for i in keep], batch_tokens, progress, check=False) if keep else []
            out: list[list[Edge]] = [basic_edges(s) if i in long else [] for i, s in enumerate(sentences)]
            for i, edges in zip(keep, preds):
                out[i] = edges
            return out
        model, vocab = self.model, self.vocab
        was = model.training
        model.eval()
        examples = [make_example(s, vocab, targets=False) for s in sentences]
        results: list[list[Edge]] = [[] for _ in sentences]
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(sentences), desc="enhance", unit="sent", leave=False)
        dev = self.device
        with torch.inference_mode():
            for idx in self._batches([len(ex.words) for ex in examples], inference_batch_tokens(dev, batch_tokens)):
                batch = make_batch([examples[i] for i in idx], idx, vocab).to(dev)
                labels, tree, path = model.pair_labels(batch.heads, batch.rels, batch.padding_mask)
                h = model.encode(batch.words, batch.char_ids, batch.word_types, batch.upos, batch.rels,
                                 batch.padding_mask, labels)
                scores = model.edge_scores(h, tree, path, batch.padding_mask).float().cpu()
                eb, ed, eh, fixed_out = [], [], [], {}
                for b, i in enumerate(idx):
                    edges, fixed = self._structure(sentences[i], scores[b])
                    fixed_out[b] = fixed
                    for d, hd in edges:
                        eb.append(b)
                        ed.append(d)
                        eh.append(hd)
                tb, td, th = (torch.tensor(x, dtype=torch.long, device=dev) for x in (eb, ed, eh))
                ls = model.label_scores(model.label.project(h), tree, path, tb, td, th)
                lab = choose_labels(ls, eh, self.root_label)
                per: dict[int, list[tuple[int, int, int]]] = {}
                for b, d, hd, k in zip(eb, ed, eh, lab):
                    per.setdefault(b, []).append((d, hd, k))
                for b, i in enumerate(idx):
                    s = sentences[i]
                    markers = sentence_markers(TreeView.of(s))
                    out: list[Edge] = [(d, hd, fill_template(vocab.labels[k], d, markers)) for d, hd, k in per.get(b, [])]
                    out += fixed_out[b] + _kept_edges(s)
                    results[i] = sorted(out, key=lambda e: (e[0], deps_sort_key(e[1]), e[2]))
                if bar is not None:
                    bar.update(len(idx))
        if bar is not None:
            bar.close()
        model.train(was)
        return results

    def _structure(self, sent, scores: torch.Tensor) -> tuple[list[tuple[int, int]], list[Edge]]:
        """Decoded word-to-word edges of one sentence, and the fixed (``goeswith``) edges with labels."""
        n = len(sent)
        heads = [int(h) for h in sent.heads]
        fixed = [(i, heads[i - 1], r) for i, r in enumerate(sent.deprels, 1) if r == "goeswith"]
        extra: list[tuple[int, int]] = [(d, h) for d, h, _ in fixed]
        empties = _empty_ids(sent)
        if empties:
            index = {e: n + 1 + k for k, e in enumerate(empties)}
            for d, h, _ in _kept_edges(sent):
                extra.append((d, index[h]))
            for t in sent.rows:
                tid = t["id"]
                if isinstance(tid, tuple) and tid[1] == "." and isinstance(t["deps"], list):
                    me = index["".join(str(x) for x in tid)]
                    for _, h in t["deps"]:
                        hid = "".join(str(x) for x in h) if isinstance(h, tuple) else h
                        if isinstance(hid, int) and 0 <= hid <= n:
                            extra.append((me, hid))
                        elif hid in index:
                            extra.append((me, index[hid]))
        edges = decode_edges(scores[: n + 1, : n + 1], self.threshold, extra, [d for d, _, _ in fixed])
        return edges, fixed

    def enhance(self, sentences: Sequence, batch_tokens: int | None = None, progress: bool = False) -> list:
        """Copies of ``sentences`` with the words' DEPS replaced by the predicted enhanced graph.

        The DEPS are sorted by head, then relation; nothing else changes (see the module docstring).

        Args:
            sentences: parsed sentences (:class:`Sentence`).
            batch_tokens: padded words per batch (``None``: the device's default,
                :func:`g2gt.core.batch.inference_batch_tokens`: 1000 on the CPU, more on a GPU).
            progress: show a progress bar.

        Returns:
            The enhanced copies, in order.
        """
        preds = self.predict(sentences, batch_tokens, progress)
        return [_set_deps(s, edges) for s, edges in zip(sentences, preds)]

    __call__ = enhance
