"""The UD pipeline: ordered, named stages from raw text to every CoNLL-U column (``g2gt.load()`` returns one).

    nlp = g2gt.load()                                   # = Pipeline.load("en_combined", device="auto")
    doc = nlp("He sat. Then he left.")                  # raw text -> Document (a list of Sentence + offsets)
    doc.to_json(); doc.conllu()                         # see g2gt.ud.document
    for doc in nlp.pipe(texts, n_process=2): ...        # many texts, batched together, in order
    nlp([["The", "cat", "sat", "."]])                   # tokenized sentences, or Sentence objects
    nlp.save("my_model")                                # a model folder: one file per stage + model.json

==========  ==============================================  ========================================
stage       default                                          swap in
==========  ==============================================  ========================================
tokenize    the model's learned :class:`Segmenter`           :class:`RuleTokenizer` (``"rule"`` or
            (text -> sentences, words, multiword tokens)     ``"stanza"``), any ``str -> list[Sentence]``
parse       :class:`Parser` (tags, lemmas, features, tree)   any ``list[Sentence] -> list[Sentence]``
enhance     :class:`Enhancer` (DEPS), run with               another parser's trees go in as they are
            ``enhanced=True``, loaded on first use
(yours)     ``nlp.add_stage(name, stage, after=...)`` or     any ``list[Sentence] -> list[Sentence]``
            ``@g2gt.ud.stage.register_stage(name, after=)``
==========  ==============================================  ========================================

The stage protocol (``load`` / ``save`` / call) and the registry of your own stages are in :mod:`g2gt.ud.stage`;
many texts at once (:meth:`Pipeline.pipe`, the server's batches) in :mod:`g2gt.ud.pipe`. The command line
(``g2gt parse``, ``enhance``, ``draw``, ``attention``) goes through this class, so the same input gives the same
bytes from the CLI and the API, sentence ids included.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..core.batch import CPU_BATCH_TOKENS, inference_batch_tokens
from ..core.gc_pause import paused_gc
from .document import Document
from .io import Sentence
from .parse.columns import check_keep
from .limits import (CHUNK_SENTENCES, CHUNK_WORDS, drop_control_characters, iter_chunks, iter_limit_sentence_words,
                     limit_sentence_words, long_sentences)
from ..core.registry import DEFAULT_MODEL
from .stage import BUILTIN_STAGES, LazyStage, StageContext, StageList, configured_stage, registered_stages
from .coref import stage as _coref_stage  # noqa: F401  (registers the optional 'coref' stage)

_log = logging.getLogger("g2gt")

__all__ = ["Pipeline", "RuleTokenizer", "TOKENIZERS", "BATCH_TOKENS", "CHUNK_SENTENCES"]

#: what ``Pipeline.load(tokenizer=...)`` takes
TOKENIZERS = ("auto", "model", "rule", "stanza")
#: padded words per model batch on the CPU (the parser's and the enhancer's), unless ``batch_tokens`` says otherwise;
#: on a GPU the default grows with its memory (:func:`g2gt.core.batch.inference_batch_tokens`)
BATCH_TOKENS = CPU_BATCH_TOKENS


class RuleTokenizer:
    """A tokenize stage without weights.

    The rule-based tokenizer and sentence splitter of :mod:`g2gt.ud.tokenize.text` (English clitic rules), or stanza's
    English tokenizer when its model is installed (``name="stanza"``; ``"auto"``: stanza if installed, else the rules).

    Args:
        name: ``"rule"`` (default), ``"stanza"`` or ``"auto"``.
    """

    kind = "rule_tokenizer"

    def __init__(self, name: str = "rule") -> None:
        if name not in ("rule", "stanza", "auto"):
            raise ValueError(f"RuleTokenizer name must be rule, stanza or auto, got {name!r}")
        self.name = name

    def __call__(self, text: str) -> list[Sentence]:
        """The sentences of a raw text, tokenized and split.

        Args:
            text: the raw text.

        Returns:
            The sentences (forms only, no parse).
        """
        from .tokenize.text import text_to_sentences

        return text_to_sentences(text, tokenizer=self.name)

    def __repr__(self) -> str:
        return f"RuleTokenizer({self.name!r})"


class Pipeline(StageList):
    """Stages ``tokenize`` -> ``parse`` -> ``enhance`` (each optional) and your own, plus the model card.

    Args:
        tokenize: ``str -> list[Sentence]`` (a :class:`~g2gt.ud.tokenize.Segmenter`, a :class:`RuleTokenizer`...).
        parse: ``list[Sentence] -> list[Sentence]`` (a :class:`~g2gt.ud.parse.Parser`).
        enhance: the enhance stage (an :class:`~g2gt.ud.enhance.Enhancer`), or a
            :class:`~g2gt.ud.stage.LazyStage` that loads it on first use.
        card: the model card (``model.json``): language, treebank, commands, scores ...
        source: what it was loaded from (a name or a path), for messages and worker processes.
        enhance_loader: instead of ``enhance``, a zero-argument callable that loads it (called on first use).
    """

    def __init__(self, tokenize: Callable | None = None, parse: Callable | None = None,
                 enhance: Callable | None = None, card: dict | None = None, source: str | None = None,
                 enhance_loader: Callable[[], Callable] | None = None) -> None:
        self._stages: dict[str, Any] = {"tokenize": tokenize if tokenize is not None else RuleTokenizer("rule")}
        if parse is not None:
            self._stages["parse"] = parse
        if enhance is None and enhance_loader is not None:
            enhance = LazyStage(enhance_loader, "Enhancer")
        if enhance is not None:
            self._stages["enhance"] = enhance
        self.card = dict(card or {})
        self.source = source
        self.recipe: dict | None = None  # how load() built it (worker processes build the same)
        self._added: set[str] = set()  # stages given by add_stage (a worker process cannot rebuild them)

    # ------------------------------------------------------------------ loading and saving
    @classmethod
    def load(cls, name_or_path: str | os.PathLike = DEFAULT_MODEL, device: str = "auto", dtype: Any = "auto",
             threads: int | None = None, exclude: Iterable[str] = (), config: dict | None = None,
             tokenizer: str = "auto") -> "Pipeline":
        """Load a pipeline by a model's name or from a folder.

        A shipped or installed model by name (``g2gt models`` lists them), a model folder (from :meth:`save`), or a
        parser's training folder / checkpoint (then the rule tokenizer and no enhancer).

        Args:
            name_or_path: a shipped or installed model's name (default ``"en_combined"``), a model folder, or a parser's
                training folder or checkpoint.
            device: ``"auto"`` (a GPU when there is one, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
            dtype: every stage's precision (:func:`g2gt.core.runtime.resolve_dtype`; ``"auto"``: the fastest one
                with the same accuracy for ``device``).
            threads: torch's CPU threads (``None``: leave torch's setting).
            exclude: stages not to load: ``"enhance"``, ``"parse"``, a registered stage; ``"tokenize"`` uses
                the rule tokenizer instead of the learned one.
            config: options per stage, e.g. ``{"enhance": {"threshold": 0.6}, "parse": {"refine_steps": 1}}``:
                attributes of a built-in stage (set after loading), keyword arguments of a registered one's
                factory.
            tokenizer: ``"auto"`` (the model's learned one, else stanza's if installed, else the rules),
                ``"model"`` (the learned one, an error without), ``"rule"`` or ``"stanza"``.

        Returns:
            The :class:`Pipeline`.
        """
        from ..core.registry import find_model, is_model_folder, model_card
        from .stage import PART_FILES
        from ..core.runtime import resolve_device, resolve_dtype

        if tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {tokenizer!r}")
        exclude = (exclude,) if isinstance(exclude, str) else tuple(exclude)
        config = {k: dict(v) for k, v in (config or {}).items()}
        known = (*BUILTIN_STAGES, *registered_stages())
        for what, names in (("exclude", exclude), ("config", config)):
            unknown = [n for n in names if n not in known]
            if unknown:
                raise ValueError(f"{what}: unknown stage(s) {', '.join(map(repr, unknown))}; the stages are "
                                 f"{', '.join(known)}")
        device = resolve_device(device)  # read once here: every stage gets a torch.device and a torch.dtype
        stage_dtype = resolve_dtype(dtype, device)  # "auto" never picks int8 for a stage other than the parser
        if threads is not None:
            from ..core.runtime import set_threads

            set_threads(threads)
        where = find_model(name_or_path)
        folder = where if is_model_folder(where) else None
        has = (lambda part: folder is not None and (folder / PART_FILES[part]).is_file())
        parser = None
        if "parse" not in exclude:
            from .parse import Parser

            parser = configured_stage(Parser.load(where, device, resolve_dtype(dtype, device, int8=True)),
                                      config.get("parse"), "parse")
        if tokenizer in ("auto", "model") and has("segmenter") and "tokenize" not in exclude:
            from .tokenize import Segmenter

            tok: Callable = Segmenter.load(folder / PART_FILES["segmenter"], device, stage_dtype)
        elif tokenizer == "model":
            raise ValueError(f"tokenizer='model': the model {name_or_path} has no learned tokenizer "
                             f"({PART_FILES['segmenter']}); use tokenizer='rule'")
        else:
            tok = RuleTokenizer("auto" if tokenizer in ("auto", "model") else tokenizer)
        tok = configured_stage(tok, config.get("tokenize"), "tokenize")
        enhance = None
        if has("enhancer") and "enhance" not in exclude:
            file, enhance_options = folder / PART_FILES["enhancer"], config.get("enhance")

            def load_enhancer(file=file, options=enhance_options):
                from .enhance import Enhancer

                return configured_stage(Enhancer.load(file, device, stage_dtype), options, "enhance")

            enhance = LazyStage(load_enhancer, "Enhancer", file)
        card = model_card(folder) if folder is not None else {}
        nlp = cls(tok, parser, enhance, card, str(name_or_path))
        context = StageContext(folder, str(name_or_path), device, stage_dtype, card)
        for name, spec in registered_stages().items():
            if name in exclude:
                continue
            options = config.get(name, {})
            if spec.lazy:
                stage: Any = LazyStage(lambda spec=spec, options=options: spec.factory(context, **options),
                                       spec.cls_name or spec.name, spec.file)
            else:
                stage = spec.factory(context, **options)
            if stage is not None:
                nlp._insert(name, stage, spec.after)
        nlp.recipe = dict(name_or_path=str(name_or_path), device=str(device), dtype=dtype, exclude=exclude,
                          config=config, tokenizer=tokenizer,
                          modules=tuple(sorted({s.factory.__module__ for s in registered_stages().values()})))
        _log.debug("loaded %s from %s (%s)", name_or_path, where, nlp.stages_repr())
        return nlp

    def save(self, path: str | os.PathLike, storage_dtype: str = "float16", card: dict | None = None,
             max_mb: float | None = None) -> Path:
        """Write a model folder that :meth:`load` reads back with the same outputs.

        The folder holds a file per stage that has weights (floating weights stored as ``storage_dtype``) and
        ``model.json`` (this pipeline's card, updated with ``card``, the stage files and their sizes).

        Args:
            path: the folder to write.
            storage_dtype: dtype of the floating-point weights in the files (default ``"float16"``).
            card: facts written over this pipeline's card in ``model.json`` (``None``: none).
            max_mb: refuse a folder larger than this many MB (``None``: no limit).

        Returns:
            The folder.

        Raises:
            ValueError: the stages take more than ``max_mb``; nothing is left behind.
        """
        from .stage import PART_FILES

        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        stages = {"segmenter": self.tokenize if hasattr(self.tokenize, "save") else None,
                  "parser": self.parse_stage, "enhancer": self.enhancer}
        sizes: dict[str, int] = {}
        for part, stage in stages.items():
            dst = out / PART_FILES[part]
            if stage is None:
                dst.unlink(missing_ok=True)  # a stale part of an earlier save must not be shipped
                continue
            sizes[part] = stage.save(dst, storage_dtype).stat().st_size
        total_mb = sum(sizes.values()) / 2**20
        if max_mb is not None and total_mb > max_mb:
            for part in sizes:
                (out / PART_FILES[part]).unlink()
            raise ValueError(f"{out}: the stages take {total_mb:.1f} MB, over the {max_mb:g} MB limit")
        written = {**self.card, **(card or {})}
        written["parts"] = {part: {"file": PART_FILES[part], "bytes": n} for part, n in sizes.items()}
        written["dtype"] = str(storage_dtype)
        from .._version import __version__

        written["library_version"] = __version__
        (out / "model.json").write_text(json.dumps(written, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        self.card = written
        return out

    # ------------------------------------------------------------------ stages
    @property
    def name(self) -> str | None:
        """The model's name (its card's ``name``, else the last part of what it was loaded from)."""
        if self.card.get("name"):
            return str(self.card["name"])
        return Path(str(self.source).rstrip("/\\")).name or None if self.source else None

    @property
    def tokenize(self) -> Callable:
        """The tokenize stage."""
        return self._stages["tokenize"]

    @tokenize.setter
    def tokenize(self, value: Callable) -> None:
        self._stages["tokenize"] = value if value is not None else RuleTokenizer("rule")

    @property
    def parse_stage(self):
        """The parse stage (:class:`~g2gt.ud.parse.Parser`), or None."""
        return self._get("parse")

    @parse_stage.setter
    def parse_stage(self, value) -> None:
        self._set("parse", value)

    parser = parse_stage

    @property
    def enhancer(self):
        """The enhance stage (loaded here on first use), or None."""
        return self._get("enhance")

    @enhancer.setter
    def enhancer(self, value) -> None:
        self._set("enhance", value)

    @property
    def learned_tokenizer(self) -> bool:
        from .tokenize import Segmenter

        return isinstance(self.tokenize, Segmenter)

    # ------------------------------------------------------------------ input
    def text_sentences(self, text: str) -> list[Sentence]:
        """Sentences of a raw-text document (``[]`` for one without words).

        A learned tokenizer reads it one block of paragraphs at a time (memory bounded by the block) with running ids
        ``s1, s2 ...``; another tokenizer reads it whole.

        Args:
            text: the document's raw text.

        Returns:
            The sentences.
        """
        if not text.strip():
            return []
        if not self.learned_tokenizer:
            out = list(self.tokenize(text))
            if not all(isinstance(s, Sentence) for s in out):
                raise TypeError(f"the tokenize stage {self.tokenize!r} must return a list of g2gt.ud.io.Sentence")
            return out
        return self.tokenize.segment_document(text)

    def iter_text_sentences(self, text: str) -> Iterator[Sentence]:
        """:meth:`text_sentences`, made lazily by a learned tokenizer.

        One block of paragraphs at a time, as ``g2gt parse --raw`` reads a document: memory does not grow with it.

        Args:
            text: a raw-text document.

        Returns:
            An iterator over its sentences, in order.
        """
        if self.learned_tokenizer and text.strip():
            return self.tokenize.iter_document(text)
        return iter(self.text_sentences(text))

    def to_sentences(self, x: str | Iterable) -> list[Sentence]:
        """The input forms :meth:`__call__` takes, as sentences.

        Raw text (:meth:`text_sentences`), one tokenized sentence (a list of str), several (a list of lists of str) or
        :class:`Sentence` objects.

        Args:
            x: raw text, one tokenized sentence, several, or :class:`Sentence` objects.

        Returns:
            The sentences.
        """
        if isinstance(x, str):
            return self.text_sentences(x)
        from .parse.parser import as_sentences

        return as_sentences(x)

    # ------------------------------------------------------------------ running
    def __call__(self, x: str | Iterable, *, enhanced: bool = False, keep: Iterable[str] | str = (),
                 refine_steps: int | None = None, algorithm: str = "mst", use_input_graph: bool = False,
                 batch_tokens: int | None = None, progress: bool = False, treebank: str | None = None,
                 coref: bool = False) -> Document:
        """The :class:`~g2gt.ud.document.Document` of ``x``.

        See :meth:`to_sentences` for the forms of ``x``; ``doc.text`` is ``x`` for raw text, less its control characters
        (:func:`g2gt.ud.limits.drop_control_characters`). Every column is predicted by the parse stage (but the
        ``keep`` columns), DEPS by the enhance stage with ``enhanced=True``, coreference (``Entity=`` in MISC) by the
        coref stage with ``coref=True``, then the stages you added. ``refine_steps``, ``algorithm``,
        ``use_input_graph`` and ``treebank`` are the parser's (:meth:`g2gt.ud.parse.Parser.parse`).

        Args:
            x: raw text, one tokenized sentence (a list of str), several (a list of lists of str) or :class:`Sentence`
                objects (see :meth:`to_sentences`).
            enhanced: predict DEPS with the enhance stage.
            keep: input columns kept instead of predicted (``upos``, ``xpos``, ``feats``, ``lemma``, ``deps``; default:
                none); see :meth:`g2gt.ud.parse.Parser.parse`.
            refine_steps: the parser's refinement iterations (``None``: the model's).
            algorithm: ``"mst"`` (non-projective, default) or ``"eisner"`` (projective) tree decoding.
            use_input_graph: the sentences' own HEAD / DEPREL are the parser's iteration 0 graph.
            batch_tokens: padded words per model batch (``None``: the stage's device's default,
                :func:`g2gt.core.batch.inference_batch_tokens`: :data:`BATCH_TOKENS` on the CPU, more on a GPU).
            progress: show a progress bar.
            treebank: for a parser trained on several treebanks, whose conventions to follow (``None``: the parser's
                :attr:`~g2gt.ud.parse.Parser.treebank`).
            coref: annotate coreference (``Entity=`` in MISC) with the coref stage.

        Returns:
            The :class:`~g2gt.ud.document.Document`: every sentence of ``x``, annotated.
        """
        options = dict(enhanced=enhanced, keep=keep, refine_steps=refine_steps, algorithm=algorithm,
                       use_input_graph=use_input_graph, batch_tokens=batch_tokens, progress=progress,
                       treebank=treebank, coref=coref)
        if coref and "coref" not in self._stages:
            raise ValueError(f"this model ({self.source or 'in memory'}) has no coreference stage; load a model "
                             "folder with coref.pt")
        self._check_options(enhanced, keep)
        if isinstance(x, str):
            x = drop_control_characters(x)  # the text the tokenizer reads, which the offsets point into
        with paused_gc():  # no cyclic collections while the results are built (g2gt.core.gc_pause)
            sentences = limit_sentence_words(self.to_sentences(x), **long_sentences(use_input_graph))
            return Document(self.run_stages(sentences, copy=not isinstance(x, str), **options),
                            x if isinstance(x, str) else None, self.name)

    parse = __call__

    def _check_options(self, enhanced: bool, keep: Iterable[str] | str = ()) -> None:
        from .parse.columns import check_keep

        if enhanced:
            if "deps" in check_keep(keep):
                raise ValueError("enhanced=True predicts DEPS; it cannot also keep the input's DEPS (keep='deps')")
            if "enhance" not in self._stages:
                raise ValueError(f"this model ({self.source or 'in memory'}) has no enhanced-UD stage; load a model "
                                 "folder with enhancer.pt (e.g. the shipped 'en_combined') or set pipeline.enhancer")

    def run_stages(self, sentences: list[Sentence], *, enhanced: bool = False, keep: Iterable[str] | str = (),
                   refine_steps: int | None = None, algorithm: str = "mst", use_input_graph: bool = False,
                   batch_tokens: int | None = None, progress: bool = False,
                   treebank: str | None = None, coref: bool = False, copy: bool = True) -> list[Sentence]:
        """Every stage after ``tokenize`` on ``sentences``, in order.

        See :meth:`__call__` for the options. ``copy=False``: the parse stage writes into ``sentences`` instead of
        copies (for sentences made by the caller, e.g. from raw text; saves the copy).

        Args:
            sentences: the tokenized sentences.
            enhanced: predict DEPS with the enhance stage.
            keep: input columns kept instead of predicted (``upos``, ``xpos``, ``feats``, ``lemma``, ``deps``; default:
                none); see :meth:`g2gt.ud.parse.Parser.parse`.
            refine_steps: the parser's refinement iterations (``None``: the model's).
            algorithm: ``"mst"`` (non-projective, default) or ``"eisner"`` (projective) tree decoding.
            use_input_graph: the sentences' own HEAD / DEPREL are the parser's iteration 0 graph.
            batch_tokens: padded words per model batch (``None``: the stage's device's default,
                :func:`g2gt.core.batch.inference_batch_tokens`: :data:`BATCH_TOKENS` on the CPU, more on a GPU).
            progress: show a progress bar.
            treebank: for a parser trained on several treebanks, whose conventions to follow (``None``: the parser's
                :attr:`~g2gt.ud.parse.Parser.treebank`).
            coref: annotate coreference (``Entity=`` in MISC) with the coref stage.
            copy: ``False``: the parse stage writes into ``sentences`` instead of copies.

        Returns:
            The annotated sentences, in order.
        """
        out = sentences
        if "deps" in check_keep(keep):  # kept DEPS are written as they are: they must be an enhanced graph
            from .enhance.data import sentence_edges

            for s in sentences:
                sentence_edges(s, required=False)
        for name in list(self._stages)[1:]:
            if name == "parse":  # trees from elsewhere (another parser, gold) go to the enhancer as they are
                parser = self.parse_stage
                extra = {} if treebank is None else {"treebank": treebank}  # swapped-in stages need not know it
                if not copy:
                    from .parse import Parser

                    if isinstance(parser, Parser):  # a swapped-in stage keeps its own contract
                        extra["copy"] = False
                out = parser.parse(out, refine_steps=refine_steps, algorithm=algorithm,
                                   use_input_graph=use_input_graph, progress=progress, keep=keep,
                                   batch_tokens=_budget(parser, batch_tokens), **extra)
            elif name == "enhance":
                if enhanced:
                    enhancer = self.enhancer
                    out = enhancer.enhance(out, progress=progress, batch_tokens=_budget(enhancer, batch_tokens))
            elif name == "coref":  # on request, like enhance (CorefUD Entity= in MISC)
                if coref:
                    out = list(self._get(name)(out))
            else:
                out = list(self._get(name)(out))
        return out

    def pipe(self, texts: Iterable, *, batch_tokens: int | None = None, n_process: int = 1, **options: Any
             ) -> Iterator[Document]:
        """One :class:`~g2gt.ud.document.Document` per item of ``texts``, in order.

        An item is raw text, or anything :meth:`__call__` takes. Consecutive texts are segmented and parsed in shared
        batches (:func:`g2gt.ud.pipe.text_groups`), so many short texts run much faster than one call each;
        ``n_process`` > 1 runs the groups in that many worker processes (the pipeline must come from :meth:`load`; see
        :mod:`g2gt.ud.scale.parallel`), with the same output.

        Args:
            texts: raw texts, or anything :meth:`__call__` takes.
            batch_tokens: padded words per model batch (``None``: the stage's device's default,
                :func:`g2gt.core.batch.inference_batch_tokens`: :data:`BATCH_TOKENS` on the CPU, more on a GPU).
            n_process: worker processes (``1``: this one).
            **options: :meth:`__call__`'s keyword arguments.

        Yields:
            One :class:`~g2gt.ud.document.Document` per text, in order.
        """
        from .pipe import pipe_documents

        options["batch_tokens"] = batch_tokens
        worker = self._worker() if n_process is not None and int(n_process) > 1 else None
        return pipe_documents(self, texts, n_process, options, worker)

    def _worker(self) -> "PipeWorker":
        """The factory of ``pipe``'s worker processes: this pipeline loaded again as :meth:`load` made it."""
        if self.recipe is None:
            raise ValueError("pipe(n_process > 1) needs a pipeline made by g2gt.load / Pipeline.load (each worker "
                             "process loads it again); this one was built in memory: use n_process=1")
        if self._added:
            raise ValueError(f"pipe(n_process > 1): the stage(s) {', '.join(sorted(self._added))} added with "
                             "add_stage cannot be rebuilt in a worker process; register them with "
                             "g2gt.ud.stage.register_stage in an importable module, or use n_process=1")
        if "__main__" in self.recipe["modules"]:
            raise ValueError("pipe(n_process > 1): a stage registered in the script itself (__main__) cannot be "
                             "rebuilt in a worker process; move its register_stage into an importable module")
        r = self.recipe
        config = tuple((k, tuple(sorted(v.items()))) for k, v in sorted(r["config"].items()))
        return PipeWorker(r["name_or_path"], str(r["device"]), r["dtype"], r["tokenizer"], tuple(r["exclude"]),
                          config, r["modules"])

    def stream(self, sentences: Iterable[Sentence], chunk_sentences: int = CHUNK_SENTENCES,
               stats: dict | None = None, chunk_words: int | None = CHUNK_WORDS, **kwargs) -> Iterator[Sentence]:
        """:meth:`__call__` over a stream of sentences, a chunk at a time.

        A chunk holds ``chunk_sentences`` sentences, fewer once it holds ``chunk_words`` words
        (:data:`g2gt.ud.limits.CHUNK_WORDS`): memory does not grow with the input. A sentence over the word limit is
        cut (:mod:`g2gt.ud.limits`) before the chunks are made, so a chunk is what is written.

        Args:
            sentences: the input sentences, any iterable.
            chunk_sentences: sentences parsed together at most.
            stats: a dict that the ``sentences`` and ``words`` written are counted into (``None``: no counts).
            chunk_words: words per chunk at most (``None``: no word limit).
            **kwargs: :meth:`__call__`'s keyword arguments.

        Yields:
            The annotated sentences, in order.
        """
        it = iter_limit_sentence_words(sentences, **long_sentences(bool(kwargs.get("use_input_graph"))))
        for part in iter_chunks(it, chunk_sentences, chunk_words):  # cut after the length guard: what is written
            if stats is not None:
                stats["sentences"] = stats.get("sentences", 0) + len(part)
                stats["words"] = stats.get("words", 0) + sum(len(s) for s in part)
            yield from self(part, **kwargs)

    def __repr__(self) -> str:
        return f"Pipeline({self.name or 'in memory'}: {self.stages_repr()})"


def _budget(stage: Any, batch_tokens: int | None) -> int:
    """``batch_tokens``, or the default of the device ``stage`` runs on (the CPU's for a stage without one)."""
    try:
        return inference_batch_tokens(getattr(stage, "device", "cpu"), batch_tokens)
    except (TypeError, RuntimeError, ValueError):  # a swapped-in stage whose ``device`` is no device
        return inference_batch_tokens("cpu", batch_tokens)


@dataclass(frozen=True)
class PipeWorker:
    """A worker process of ``pipe(n_process=N)`` (picklable): imports the modules that register stages, loads
    the pipeline with :meth:`Pipeline.load`'s arguments once, then answers ``(inputs, options) -> documents``
    (:func:`g2gt.ud.pipe.parse_many`)."""

    name_or_path: str
    device: str
    dtype: Any
    tokenizer: str
    exclude: tuple[str, ...]
    config: tuple
    modules: tuple[str, ...]

    def __call__(self) -> Callable[[tuple], list[Document]]:
        import importlib

        from .pipe import parse_many
        from ..core.pool import worker_setup

        worker_setup()
        for module in self.modules:
            importlib.import_module(module)
        nlp = Pipeline.load(self.name_or_path, self.device, self.dtype, exclude=self.exclude,
                            config={k: dict(v) for k, v in self.config}, tokenizer=self.tokenizer)
        return lambda job: parse_many(nlp, job[0], **job[1])
