"""The user-facing parser: ``Parser.load(model_dir)("Some text.")``.

:meth:`Parser.parse` takes raw text, tokenized sentences or :class:`g2gt.ud.io.Sentence` objects and
returns parsed copies; :meth:`Parser.predict` returns the bare predictions (:class:`ParseResult`).
Both go through :func:`g2gt.ud.parse.decode.decode_sentences`, the path dev evaluation uses.

Columns of the output (CoNLL-U names):

* predicted: HEAD, DEPREL, UPOS, and XPOS, FEATS, LEMMA when the model has those heads;
* ``keep``: columns named there are copied from the input instead of being predicted (e.g.
  ``keep=("upos", "lemma")``); HEAD / DEPREL are always predicted;
* DEPS: the enhanced graph of the input no longer matches a new tree, so it is written ``_`` unless
  ``keep`` names ``"deps"``; empty nodes (``8.1`` lines) exist only for the enhanced graph, so they are
  dropped together with DEPS, and kept with it;
* everything else (ID, FORM, MISC, comments, multiword-token lines) passes through unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

import torch
from torch import Tensor

from ..io import Sentence, parse_conllu_string, sentence_from_words
from .columns import KEEPABLE_COLUMNS, check_keep
from .batching import dependency_labels, make_batch, make_example
from .config import ParserConfig
from .decode import ParseResult, decode_sentences
from .model import ParserModel
from .vocab import ParserVocab

__all__ = ["Parser", "rule_segmenter", "fast_inference_dtype", "inference_dtype", "KEEPABLE_COLUMNS"]

Segmenter = Callable[[str], "list[Sentence]"]


def rule_segmenter(text: str) -> list[Sentence]:
    """The default ``segmenter``: the rule tokenizer and sentence splitter of :mod:`g2gt.ud.tokenize.text`."""
    from ..tokenize.text import text_to_sentences

    return text_to_sentences(text, tokenizer="rule")


class Parser:
    """A trained parser (model + vocabulary): ``Parser.load(model_dir).parse(x)``, or ``parser(x)``.

    Args:
        model: the :class:`ParserModel`.
        vocab: its :class:`ParserVocab`.
        max_distance: clip distance of the position channel (default: the model's).
        refine_steps: default refinement iterations after iteration 0.
        segmenter: ``text -> list[Sentence]`` used for raw-text input (tokenization and sentence
            splitting); default: the rule tokenizer (:func:`rule_segmenter`).

    Every output is exactly one single-rooted tree per sentence (MST / Eisner), in input order.
    """

    def __init__(self, model: ParserModel, vocab: ParserVocab, max_distance: int | None = None,
                 refine_steps: int = 2, segmenter: Segmenter | None = None) -> None:
        self.model = model
        self.vocab = vocab
        self.max_distance = model.config.max_distance if max_distance is None else max_distance
        self.refine_steps = refine_steps
        self.segmenter: Segmenter = segmenter or rule_segmenter
        self.enhancer_path: Path | None = None  # set by load() for a model folder with enhancer.pt
        self._enhancer = None
        self.source: str | None = None  # what load() was given, for messages

    @classmethod
    def load(cls, path: str | Path = "en_ewt", device: str | torch.device = "cpu",
             dtype: torch.dtype | str | None = None, segmenter: Segmenter | None = None) -> "Parser":
        """Load a shipped model by name (default ``"en_ewt"``, see :mod:`g2gt.ud.models`), a model folder
        (``parser.pt`` and optional ``segmenter.pt`` / ``enhancer.pt``), a training folder (its ``best.pt``,
        else ``last.pt``) or a checkpoint file, with ``weights_only=True`` and ``strict=True``.

        A model folder's learned segmenter becomes the raw-text ``segmenter`` unless one is given, and its
        enhanced-UD model is used by ``parse(..., enhanced=True)`` (loaded on first use).

        ``dtype``: cast the weights for inference, e.g. ``torch.bfloat16`` or ``"bfloat16"`` (faster on
        GPUs and on CPUs with AMX matrix units), or ``"int8"`` (CPU only: the linear layers run as int8
        dynamic quantization, ~1.25x faster on an AVX2 core with the same EWT dev scores within 0.05, see
        the README); ``"auto"`` picks the fast one for the device (:func:`fast_inference_dtype`). Arc scores
        are decoded in float32 either way.
        """
        from ...core.checkpoint import load_checkpoint
        from ..models import PART_FILES, find_model, is_model_folder, part_checkpoint

        where = find_model(path)
        folder = where if is_model_folder(where) else None
        file = part_checkpoint(where, "parser")
        ck = load_checkpoint(file, device)
        extra = ck.get("task", {})
        if "vocab" not in extra or "model_config" not in ck:
            raise ValueError(f"{file}: not a parser checkpoint (no parser vocabulary inside; is it from "
                             "'g2gt train parser'?)")
        cfg = ParserConfig.from_dict(ck["model_config"])
        model = ParserModel(cfg)
        model.load_state_dict(ck["model"], strict=True)  # float16 weights of a shipped model are cast here
        dt = inference_dtype(dtype, device)
        if dt is torch.qint8:
            model = _quantize_int8(model.to(device=device).eval())
        else:
            model.to(device=device, dtype=dt).eval()
        if folder is not None and segmenter is None and (folder / PART_FILES["segmenter"]).is_file():
            from ..tokenize import Segmenter as LearnedSegmenter

            segmenter = LearnedSegmenter.load(folder / PART_FILES["segmenter"], device)
        parser = cls(model, ParserVocab.from_dict(extra["vocab"]), int(extra.get("max_distance", cfg.max_distance)),
                     int(extra.get("refine_steps", 2)), segmenter)
        if folder is not None and (folder / PART_FILES["enhancer"]).is_file():
            parser.enhancer_path = folder / PART_FILES["enhancer"]
        parser.source = str(where)
        return parser

    @property
    def enhancer(self):
        """The enhanced-UD model shipped with this parser (:class:`g2gt.ud.enhance.Enhancer`, loaded on first
        use), or ``None``."""
        if self._enhancer is None and self.enhancer_path is not None:
            from ..enhance import Enhancer

            self._enhancer = Enhancer.load(self.enhancer_path, self.device)
        return self._enhancer

    @enhancer.setter
    def enhancer(self, value) -> None:
        self._enhancer = value

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def columns(self) -> tuple[str, ...]:
        """The CoNLL-U columns this parser predicts (lowercase names)."""
        return ("head", "deprel", "upos") + tuple(self.model.taggers)  # tagger names are column names

    # ------------------------------------------------------------------ parsing
    def predict(self, sentences: Sequence, refine_steps: int | None = None, algorithm: str = "mst",
                use_input_graph: bool = False, max_tokens: int = 3000, progress: bool = False,
                record_iterations: bool = False) -> ParseResult:
        """The predictions for ``sentences`` (objects with ``forms``, e.g. :class:`Sentence`), in order.

        ``refine_steps``: refinement iterations (default: the model's). ``algorithm``: ``"mst"``
        (non-projective) or ``"eisner"`` (projective). ``use_input_graph``: the sentences' own
        HEAD / DEPREL are iteration 0's graph (a :class:`ValueError` naming ``file:line`` if one is not a
        single-rooted tree). ``max_tokens``: padded nodes per batch. ``record_iterations``: keep every
        iteration's trees (:attr:`SentenceParse.iterations`).
        """
        T = self.refine_steps if refine_steps is None else refine_steps
        return decode_sentences(self.model, self.vocab, sentences, self.max_distance, T, algorithm, use_input_graph,
                                max_tokens, progress, record_iterations)

    def parse(self, x: str | Iterable, refine_steps: int | None = None, algorithm: str = "mst",
              use_input_graph: bool = False, max_tokens: int = 3000, progress: bool = False,
              keep: Iterable[str] | str = (), enhanced: bool = False) -> list[Sentence]:
        """Parsed copies of the input (see the module docstring for the columns).

        ``x``: raw text (one string: tokenized and split into sentences by ``self.segmenter``), one
        tokenized sentence (a list of strings), several (a list of lists of strings), or
        :class:`Sentence` objects (e.g. from :func:`g2gt.ud.io.read_conllu`). ``keep``: input columns to keep
        instead of predicting them, among ``upos``, ``xpos``, ``feats``, ``lemma``, ``deps``. ``enhanced``:
        also predict DEPS (the enhanced UD graph) with :attr:`enhancer`, from the new tree; the input's
        empty nodes are dropped first, as without it. The other arguments are :meth:`predict`'s.
        """
        kept = check_keep(keep)
        if enhanced and "deps" in kept:
            raise ValueError("enhanced=True predicts DEPS; it cannot also keep the input's DEPS (keep='deps')")
        if enhanced and self.enhancer is None:
            raise ValueError(f"this parser ({self.source or 'in memory'}) has no enhanced-UD model; load a model "
                             "folder with enhancer.pt (e.g. the shipped 'en_ewt') or set parser.enhancer")
        sentences = self.to_sentences(x)
        pred = self.predict(sentences, refine_steps, algorithm, use_input_graph, max_tokens, progress)
        out = [_apply(s, p, kept) for s, p in zip(sentences, pred)]
        if enhanced:
            out = self.enhancer.enhance(out, max_tokens=max_tokens, progress=progress)
        return out

    __call__ = parse

    def to_sentences(self, x: str | Iterable) -> list[Sentence]:
        """The input forms :meth:`parse` accepts, as a list of sentences (see :meth:`parse`)."""
        if isinstance(x, str):
            out = list(self.segmenter(x)) if x.strip() else []
            if not all(isinstance(s, Sentence) for s in out):
                raise TypeError(f"the segmenter {self.segmenter!r} must return a list of g2gt.ud.io.Sentence")
            return out
        if isinstance(x, Sentence):
            return [x]
        items = list(x)
        if all(isinstance(i, Sentence) for i in items):
            return items
        if all(isinstance(i, str) for i in items):
            return [sentence_from_words(items, sent_id="1")]
        if all(isinstance(i, (list, tuple)) and all(isinstance(w, str) for w in i) for i in items):
            return [sentence_from_words(list(words), sent_id=str(k)) for k, words in enumerate(items, start=1)]
        kinds = sorted({type(i).__name__ for i in items})
        raise TypeError(f"parse() expects raw text (a str), one tokenized sentence (a list of str), several "
                        f"(a list of lists of str) or g2gt.ud.io.Sentence objects; got a list of {', '.join(kinds)}")

    # ------------------------------------------------------------------ attention
    def attention(self, sentence, refine_steps: int = 0, algorithm: str = "mst") -> tuple[list[str], list[Tensor]]:
        """Tokens (with ``<root>``) and per-layer attention weights ``[H, n, n]`` of the pass that reads the
        graph after ``refine_steps`` passes (0 = iteration 0, from the empty graph)."""
        graph = None
        if refine_steps > 0:
            p = self.predict([sentence], refine_steps=refine_steps - 1, algorithm=algorithm)[0]
            heads = torch.tensor([[0] + p.heads])
            rels = torch.tensor([[0] + [self.vocab.rel_index.get(x, 0) for x in p.deprels]])
            valid = torch.ones_like(heads, dtype=torch.bool)
            valid[0, 0] = False
            graph = dependency_labels(heads, rels, valid).to(self.device)
        ex = make_example(sentence, self.vocab)
        batch = make_batch([ex], [0], self.vocab, self.max_distance).to(self.device)
        g = batch.graph
        self.model.eval()
        lab = self.model.labels(batch.position, graph)
        ws = self.model.attention_weights(g.tokens, batch.char_ids, batch.word_types, g.padding_mask, lab)
        return ex.forms, [w[0].cpu() for w in ws]


# --------------------------------------------------------------------------- output columns
def _apply(sent: Sentence, p, kept: set[str]) -> Sentence:
    """A copy of ``sent`` with the predicted columns of ``p`` (a :class:`SentenceParse`) written in."""
    out = sent.with_parse(p.heads, p.deprels, None if "upos" in kept else p.upos)
    xpos = None if "xpos" in kept else p.xpos
    feats = None if "feats" in kept else p.feats
    lemmas = None if "lemma" in kept else p.lemmas
    clear_deps = "deps" not in kept
    for k, tok in enumerate(out.words):
        if xpos is not None:
            tok["xpos"] = xpos[k]
        if feats is not None:
            f = feats[k]
            tok["feats"] = None if f == "_" else dict(kv.split("=", 1) for kv in f.split("|"))
        if lemmas is not None:
            tok["lemma"] = lemmas[k]
        if clear_deps:
            tok["deps"] = None
    return _without_empty_nodes(out) if clear_deps else out


def _without_empty_nodes(sent: Sentence) -> Sentence:
    """``sent`` without its empty-node lines (ids ``N.M``); every other line stays as it is written."""
    if not any(isinstance(t["id"], tuple) and t["id"][1] == "." for t in sent.tokens):
        return sent
    lines = [line for line in sent.serialize().split("\n")
             if not (line and not line.startswith("#") and "." in line.split("\t", 1)[0])]
    (out,) = parse_conllu_string("\n".join(lines), name=sent.path)
    out.path, out.line = sent.path, sent.line
    return out


# --------------------------------------------------------------------------- inference dtype
def fast_inference_dtype(device: str | torch.device = "cpu") -> torch.dtype:
    """The fastest inference precision for ``device`` with the same accuracy in our measurements:
    ``torch.bfloat16`` where bfloat16 matrix products are fast (CUDA with bf16 support, CPUs with AMX
    tiles), ``torch.qint8`` (int8 dynamic quantization of the linear layers) on other CPUs where torch
    provides it (:func:`g2gt.core._compat.int8_linear_quantizer`), else ``torch.float32``."""
    from ...core._compat import amx_tile_supported, int8_linear_quantizer  # private-torch-API probes live there

    dev = torch.device(device)
    if dev.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    if dev.type != "cpu":
        return torch.float32
    if amx_tile_supported():
        return torch.bfloat16
    return torch.qint8 if int8_linear_quantizer() is not None else torch.float32


def inference_dtype(dtype: torch.dtype | str | None, device: str | torch.device = "cpu") -> torch.dtype | None:
    """``None`` / a ``torch.dtype`` / a name such as ``"bfloat16"`` / ``"int8"`` / ``"auto"`` (see
    :func:`fast_inference_dtype`) -> a floating ``torch.dtype``, ``torch.qint8`` (int8 dynamic
    quantization, CPU only) or None (keep the weights' dtype)."""
    if dtype is None:
        return None
    if dtype == "auto":
        return fast_inference_dtype(device)
    name = "qint8" if dtype == "int8" else str(dtype)  # int8 inference = dynamic quantization (qint8)
    dt = dtype if isinstance(dtype, torch.dtype) else getattr(torch, name, None)
    if dt is torch.qint8:
        if torch.device(device).type != "cpu":
            raise ValueError(f"dtype='int8' (dynamic int8 quantization) runs on the CPU only, not on {device}; "
                             "use bfloat16 on a GPU")
        return dt
    if not isinstance(dt, torch.dtype) or not dt.is_floating_point:
        raise ValueError(f"dtype must be float32, bfloat16, int8 or auto, got {dtype!r}")
    return dt


def _quantize_int8(model: ParserModel) -> ParserModel:
    """``model`` with int8 dynamic-quantized linear layers (:func:`g2gt.core._compat.int8_linear_quantizer`)."""
    from ...core._compat import int8_linear_quantizer

    quantize = int8_linear_quantizer()
    if quantize is None:
        raise ValueError(f"dtype='int8' needs torch's dynamic int8 quantization, which torch {torch.__version__} "
                         "does not provide on this machine; use float32")
    return quantize(model)
