"""The parse stage: tagger, lemmatizer and parser in one model. ``Parser.load("en_combined")(sentences)``.

A stage of :class:`g2gt.ud.pipeline.Pipeline` (protocol in :mod:`g2gt.ud.stage`): :meth:`Parser.parse` takes
tokenized sentences or :class:`g2gt.ud.io.Sentence` objects (raw text only through the rule tokenizer: for
the learned tokenizer and enhanced graphs use the pipeline, ``g2gt.load()``) and returns parsed copies;
:meth:`Parser.predict` returns the bare predictions (:class:`ParseResult`).
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
from typing import Iterable, Sequence

import torch
from torch import Tensor

from ..io import Sentence, parse_conllu_string, sentence_from_words
from ..stage import (
    checkpoint_record, prepare_for_inference, read_stage, save_stage,
)
from .columns import KEEPABLE_COLUMNS, check_keep
from .batching import dependency_labels, make_batch, make_example
from .config import ParserConfig
from .decode import REFINE_CONFIDENCE, ParseResult, decode_sentences
from .model import ParserModel
from .vocab import ParserVocab
from ...core.registry import DEFAULT_MODEL

__all__ = ["Parser", "rule_segmenter", "KEEPABLE_COLUMNS"]


def rule_segmenter(text: str) -> list[Sentence]:
    """The rule tokenizer and sentence splitter of :mod:`g2gt.ud.tokenize.text` (raw text given to a parser)."""
    from ..tokenize.text import text_to_sentences

    return text_to_sentences(text, tokenizer="rule")


class Parser:
    """A trained parser (model + vocabulary): ``Parser.load(name_or_path).parse(x)``, or ``parser(x)``.

    Every output is exactly one single-rooted tree per sentence (MST / Eisner), in input order.

    Args:
        model: the :class:`ParserModel`.
        vocab: its :class:`ParserVocab`.
        max_distance: clip distance of the position channel (default: the model's).
        refine_steps: default refinement iterations after iteration 0.
            Sentences whose first tree is confident (every word's best head at probability
            :attr:`refine_confidence` or more, default 0.7; None = refine all) are not refined:
            1.4-1.5 instead of 2.1-2.2 encoder passes per sentence for at most 0.03 LAS on UD English dev
            sets (``benchmarks/refine_confidence.py``).
        treebank: for a model trained on several treebanks (``model.config.treebanks``), the one whose
            annotation conventions to follow (default: the first, e.g. ``en_ewt``); see :attr:`treebank`.
    """

    kind = "parser"

    def __init__(self, model: ParserModel, vocab: ParserVocab, max_distance: int | None = None,
                 refine_steps: int = 2, treebank: str | None = None) -> None:
        self.model = model
        self.vocab = vocab
        self.max_distance = model.config.max_distance if max_distance is None else max_distance
        self.refine_steps = refine_steps
        self._treebank = 0
        self.treebank = treebank
        self.record: dict = {}  # the checkpoint's config / vocabularies / training record, for save()
        self.file: Path | None = None  # the checkpoint it was loaded from
        self.dtype: torch.dtype = torch.float32
        self.source: str | None = None  # what load() was given, for messages
        self.lemmatizer = None  # a g2gt.ud.lemma.CharLemmatizer for the words its edit scripts are unsure of
        # sentences whose first tree is this confident are not refined (ParserModel.decode; None = all are)
        self.refine_confidence: float | None = REFINE_CONFIDENCE

    @property
    def treebanks(self) -> list[str]:
        """The treebanks the model was trained on when it has treebank vectors (the first is the default),
        else ``[]``."""
        return list(self.model.config.treebanks)

    @property
    def treebank(self) -> str | None:
        """The treebank whose conventions the parser follows (``"en_gum"``...), None for a model without
        treebank vectors. Set it to a name of :attr:`treebanks`, or None for the default (the first)."""
        names = self.model.config.treebanks
        return names[self._treebank] if names else None

    @treebank.setter
    def treebank(self, name: str | None) -> None:
        self._treebank = 0 if name is None else self._treebank_index(name)

    def _treebank_index(self, name: str) -> int:
        """The index of treebank ``name`` in the model's list; ``ValueError`` naming the known ones."""
        names = self.model.config.treebanks
        if name in names:
            return names.index(name)
        if names:
            raise ValueError(f"treebank {name!r}: this parser was trained on {', '.join(names)}; choose one of "
                             f"them (the default is the first, {names[0]})")
        raise ValueError(f"treebank {name!r}: this parser was trained on one treebank and has no treebank "
                         "choice (drop the treebank setting)")

    @classmethod
    def load(cls, name_or_path: str | Path = DEFAULT_MODEL, device: str | torch.device = "auto",
             dtype: torch.dtype | str | None = "auto", treebank: str | None = None) -> "Parser":
        """Load the parse stage.

        Of a shipped model by name (default ``"en_combined"``, see :mod:`g2gt.core.registry`), of a model folder
        (``parser.pt``), a training folder (its ``best.pt``, else ``last.pt``) or a checkpoint file, with
        ``weights_only=True`` and ``strict=True``.

        Arc scores are decoded in float32 whatever the precision. A ``lemmatizer.pt`` beside ``parser.pt`` (a
        character lemmatizer, ``g2gt train lemmatizer``) is loaded as :attr:`lemmatizer` (float32).

        Args:
            name_or_path: a shipped model's name (default ``"en_combined"``), a model folder, a training folder or a
                checkpoint file.
            device: as every loader: ``"auto"`` (default: a GPU when there is one, else the CPU), ``"cpu"``,
                ``"cuda"``, ``"cuda:N"``.
            dtype: as every loader (:func:`g2gt.core.runtime.resolve_dtype`): ``"auto"`` (default) picks the fast
                precision for the device with the same accuracy: bfloat16 on GPUs and AMX CPUs, int8 dynamic
                quantization of the linear layers on other CPUs (its scores and speed: the README's precision table);
                ``"float32"`` (or ``None``), ``"bfloat16"``, ``"int8"`` force one.
            treebank: the treebank whose conventions to follow, see :attr:`treebank` (``None``: the model's first).

        Returns:
            The :class:`Parser`.
        """
        path = name_or_path
        file, ck, device, dt = read_stage(path, "parser", cls.kind, device, dtype, int8=True)
        extra = ck.get("task", {})
        cfg = ParserConfig.from_dict(ck["model_config"])
        model = ParserModel(cfg)
        model.load_state_dict(ck["model"], strict=True)  # float16 weights of a shipped model are cast here
        model = prepare_for_inference(model, dt, device)
        parser = cls(model, ParserVocab.from_dict(extra["vocab"]), int(extra.get("max_distance", cfg.max_distance)),
                     int(extra.get("refine_steps", 2)), treebank)
        parser.record, parser.file, parser.dtype, parser.source = checkpoint_record(ck), file, dt, str(path)
        from ..lemma.model import LEMMATIZER_FILE, CharLemmatizer

        if file.name == "parser.pt" and (file.parent / LEMMATIZER_FILE).is_file():
            parser.lemmatizer = CharLemmatizer.load(file.parent / LEMMATIZER_FILE, device, "float32")
        return parser

    def save(self, path: str | Path, storage_dtype: str | torch.dtype = "float16") -> Path:
        """Write this stage as one checkpoint file that :meth:`load` reads.

        Floating weights are stored as ``storage_dtype``; with a :attr:`lemmatizer`, a ``parser.pt`` gets
        ``lemmatizer.pt`` beside it.

        Args:
            path: the file to write.
            storage_dtype: dtype of the floating-point weights in the file (default ``"float16"``).

        Returns:
            The path.
        """
        record = self.record or {"model_config": self.model.config.to_dict(),
                                 "task": {"vocab": self.vocab.to_dict(), "max_distance": self.max_distance,
                                          "refine_steps": self.refine_steps}}
        record = {**record, "task": {**record["task"], "kind": self.kind}}  # also for a checkpoint without one
        out = save_stage(path, self.model, record, self.file, self.dtype is torch.qint8, storage_dtype)
        if self.lemmatizer is not None and out.name == "parser.pt":
            from ..lemma.model import LEMMATIZER_FILE

            self.lemmatizer.save(out.parent / LEMMATIZER_FILE, getattr(torch, str(storage_dtype).removeprefix("torch.")))
        return out

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def columns(self) -> tuple[str, ...]:
        """The CoNLL-U columns this parser predicts (lowercase names)."""
        return ("head", "deprel", "upos") + tuple(self.model.taggers)  # tagger names are column names

    # ------------------------------------------------------------------ parsing
    def predict(self, sentences: Sequence, refine_steps: int | None = None, algorithm: str = "mst",
                use_input_graph: bool = False, batch_tokens: int | None = None, progress: bool = False,
                record_iterations: bool = False, treebank: str | None = None) -> ParseResult:
        """The predictions for ``sentences`` (objects with ``forms``, e.g. :class:`Sentence`), in order.

        Args:
            sentences: objects with ``forms``, e.g. :class:`Sentence`.
            refine_steps: refinement iterations (``None``: the model's).
            algorithm: ``"mst"`` (non-projective, default) or ``"eisner"`` (projective).
            use_input_graph: the sentences' own HEAD / DEPREL are iteration 0's graph.
            batch_tokens: padded nodes per batch (``None``: the device's default,
                :func:`g2gt.core.batch.inference_batch_tokens`: 1000 on the CPU, more on a GPU).
            progress: show a progress bar.
            record_iterations: keep every iteration's trees (:attr:`SentenceParse.iterations`).
            treebank: for this call instead of :attr:`treebank` (``None``: :attr:`treebank`).

        Returns:
            The :class:`ParseResult`, one :class:`SentenceParse` per sentence.

        Raises:
            ValueError: with ``use_input_graph``, an input that is not a single-rooted tree (naming ``file:line``).
        """
        T = self.refine_steps if refine_steps is None else refine_steps
        if not (isinstance(T, int) and T >= 0):
            raise ValueError(f"refine_steps must be a whole number >= 0 (refinement iterations after the first "
                             f"parse), got {T!r}")
        tb = self._treebank if treebank is None else self._treebank_index(treebank)
        return decode_sentences(self.model, self.vocab, sentences, self.max_distance, T, algorithm, use_input_graph,
                                batch_tokens, progress, record_iterations, tb, self.lemmatizer, self.refine_confidence)

    def parse(self, x: str | Iterable, refine_steps: int | None = None, algorithm: str = "mst",
              use_input_graph: bool = False, batch_tokens: int | None = None, progress: bool = False,
              keep: Iterable[str] | str = (), treebank: str | None = None, copy: bool = True) -> list[Sentence]:
        """Parsed copies of the input (see the module docstring for the columns).

        The arguments but ``x``, ``keep`` and ``copy`` are :meth:`predict`'s.

        Args:
            x: one tokenized sentence (a list of strings), several (a list of lists of strings), :class:`Sentence`
                objects (e.g. from :func:`g2gt.ud.io.read_conllu`), or raw text (tokenized by the rule tokenizer;
                :class:`g2gt.ud.pipeline.Pipeline` uses a model's learned one).
            refine_steps: refinement iterations (``None``: the model's).
            algorithm: ``"mst"`` (non-projective, default) or ``"eisner"`` (projective).
            use_input_graph: the sentences' own HEAD / DEPREL are iteration 0's graph.
            batch_tokens: padded nodes per batch (``None``: the device's default,
                :func:`g2gt.core.batch.inference_batch_tokens`: 1000 on the CPU, more on a GPU).
            progress: show a progress bar.
            keep: input columns to keep instead of predicting them, among ``upos``, ``xpos``, ``feats``, ``lemma``,
                ``deps`` (default: none).
            treebank: for this call instead of :attr:`treebank` (``None``: :attr:`treebank`).
            copy: ``False``: :class:`Sentence` objects given are written into and returned instead of copies (for
                sentences your code made and owns; it saves the copy).

        Returns:
            The parsed sentences, in order.
        """
        kept = check_keep(keep)
        sentences = self.to_sentences(x)
        pred = self.predict(sentences, refine_steps, algorithm, use_input_graph, batch_tokens, progress,
                            treebank=treebank)
        return [_apply(s, p, kept, copy) for s, p in zip(sentences, pred)]

    __call__ = parse

    def to_sentences(self, x: str | Iterable) -> list[Sentence]:
        """The input forms :meth:`parse` accepts, as a list of sentences (see :meth:`parse`).

        Args:
            x: what :meth:`parse` takes.

        Returns:
            The sentences.
        """
        if isinstance(x, str):
            return rule_segmenter(x) if x.strip() else []
        return as_sentences(x)

    # ------------------------------------------------------------------ attention
    def attention(self, sentence, refine_steps: int = 0, algorithm: str = "mst") -> tuple[list[str], list[Tensor]]:
        """Tokens and per-layer attention weights of one pass of the parser.

        The tokens include ``<root>``; the weights ``[H, n, n]`` are those of the pass that reads the graph after
        ``refine_steps`` passes (0 = iteration 0, from the empty graph).

        Args:
            sentence: one sentence (an object with ``forms``).
            refine_steps: passes before the one whose attention is returned.
            algorithm: tree decoding of the earlier passes: ``"mst"`` or ``"eisner"``.

        Returns:
            ``(tokens, weights)``, one ``[H, n, n]`` tensor per layer.
        """
        graph = None
        if refine_steps > 0:
            p = self.predict([sentence], refine_steps=refine_steps - 1, algorithm=algorithm)[0]
            heads = torch.tensor([[0] + p.heads])
            rels = torch.tensor([[0] + [self.vocab.rel_index.get(x, 0) for x in p.deprels]])
            valid = torch.ones_like(heads, dtype=torch.bool)
            valid[0, 0] = False
            graph = dependency_labels(heads, rels, valid).to(self.device)
        ex = make_example(sentence, self.vocab, self._treebank)
        batch = make_batch([ex], [0], self.vocab, self.max_distance).to(self.device)
        g = batch.graph
        self.model.eval()
        lab = self.model.labels(batch.position, graph)
        ws = self.model.attention_weights(g.tokens, batch.char_ids, batch.word_types, g.padding_mask, lab,
                                          batch.treebank)
        return ex.forms, [w[0].cpu() for w in ws]


def as_sentences(x: Iterable) -> list[Sentence]:
    """Sentences from one tokenized sentence (a list of str), several (a list of lists of str) or
    :class:`Sentence` objects; a :class:`TypeError` saying what is accepted otherwise. Words go through the
    control-character filter of raw text (:func:`g2gt.ud.limits.clean_words`)."""
    from ..limits import clean_words

    expected = ("parse() expects raw text (a str), one tokenized sentence (a list of str), several (a list of "
                "lists of str) or g2gt.ud.io.Sentence objects")
    if isinstance(x, Sentence):
        return [x]
    if isinstance(x, (bytes, bytearray)):
        raise TypeError(f"{expected}; got bytes: decode them first, e.g. data.decode('utf-8')")
    try:
        items = list(x)
    except TypeError:
        raise TypeError(f"{expected}; got {type(x).__name__}") from None
    if all(isinstance(i, Sentence) for i in items):
        return items
    if all(isinstance(i, str) for i in items):
        spaced = next((i for i in items if len(i.split()) > 1 and i.rstrip()[-1:] in ".!?"), None)
        if spaced is not None:  # a word may hold a space (Vietnamese), a whole sentence ends as one
            raise TypeError(f"a list of str is one tokenized sentence, one word per item, but {spaced[:40]!r} holds "
                            "several words: for several texts use nlp.pipe(texts), for one text pass one str")
        return [sentence_from_words(clean_words(items), sent_id="1")]
    if all(isinstance(i, (list, tuple)) and all(isinstance(w, str) for w in i) for i in items):
        return [sentence_from_words(clean_words(list(words), f"tokenized sentence {k}"), sent_id=str(k))
                for k, words in enumerate(items, start=1)]
    kinds = sorted({type(i).__name__ for i in items})
    raise TypeError(f"{expected}; got a list of {', '.join(kinds)}")


# --------------------------------------------------------------------------- output columns
def _apply(sent: Sentence, p, kept: set[str], copy: bool = True) -> Sentence:
    """A copy of ``sent`` (or with ``copy=False`` ``sent`` itself) with the predicted columns of ``p`` (a
    :class:`SentenceParse`) written in."""
    upos = None if "upos" in kept else p.upos
    out = sent.with_parse(p.heads, p.deprels, upos) if copy else sent.set_parse(p.heads, p.deprels, upos)
    xpos = None if "xpos" in kept else p.xpos
    feats = None if "feats" in kept else p.feats
    lemmas = None if "lemma" in kept else p.lemmas
    clear_deps = "deps" not in kept
    for k, tok in enumerate(out.word_rows):
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
    if not any(isinstance(t["id"], tuple) and t["id"][1] == "." for t in sent.rows):
        return sent
    lines = [line for line in sent.serialize().split("\n")
             if not (line and not line.startswith("#") and "." in line.split("\t", 1)[0])]
    (out,) = parse_conllu_string("\n".join(lines), name=sent.path)
    out.path, out.line = sent.path, sent.line
    return out
