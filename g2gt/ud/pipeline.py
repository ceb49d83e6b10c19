"""The UD pipeline: ordered, named stages from raw text to every CoNLL-U column (``g2gt.load()`` returns one).

    nlp = g2gt.load("en_combined")                       # = Pipeline.load("en_combined")
    nlp("He sat. Then he left.")                    # raw text -> list[Sentence]
    nlp([["The", "cat", "sat", "."]])               # tokenized sentences, or Sentence objects
    nlp.save("my_model")                            # a model folder: one file per stage + model.json

==========  ==============================================  ========================================
stage       default                                          swap in
==========  ==============================================  ========================================
tokenize    the model's learned :class:`Segmenter`           :class:`RuleTokenizer` (``"rule"`` or
            (text -> sentences, words, multiword tokens)     ``"stanza"``), any ``str -> list[Sentence]``
parse       :class:`Parser` (tags, lemmas, features, tree)   any ``list[Sentence] -> list[Sentence]``
enhance     :class:`Enhancer` (DEPS), used with               another parser's trees go in as they are
            ``enhanced=True``, loaded on first use
==========  ==============================================  ========================================

The stage protocol (``load`` / ``save`` / call) is in :mod:`g2gt.ud.stage`. The command line (``g2gt parse``,
``enhance``, ``draw``, ``attention``) goes through this class, so the same input gives the same bytes from
the CLI and the API, sentence ids included.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any, Callable

from .io import Sentence
from .models import DEFAULT_MODEL

__all__ = ["Pipeline", "RuleTokenizer", "TOKENIZERS"]

#: what ``Pipeline.load(tokenizer=...)`` takes
TOKENIZERS = ("auto", "model", "rule", "stanza")


class RuleTokenizer:
    """A tokenize stage without weights: the rule-based tokenizer and sentence splitter of
    :mod:`g2gt.ud.tokenize.text` (English clitic rules), or stanza's English tokenizer when its model is
    installed (``name="stanza"``; ``"auto"``: stanza if installed, else the rules)."""

    kind = "rule_tokenizer"

    def __init__(self, name: str = "rule") -> None:
        if name not in ("rule", "stanza", "auto"):
            raise ValueError(f"RuleTokenizer name must be rule, stanza or auto, got {name!r}")
        self.name = name

    def __call__(self, text: str) -> list[Sentence]:
        from .tokenize.text import text_to_sentences

        return text_to_sentences(text, tokenizer=self.name)

    def __repr__(self) -> str:
        return f"RuleTokenizer({self.name!r})"


class Pipeline:
    """Stages ``tokenize`` -> ``parse`` -> ``enhance`` (each optional) and the model card.

    Args:
        tokenize: ``str -> list[Sentence]`` (a :class:`~g2gt.ud.tokenize.Segmenter`, a :class:`RuleTokenizer`...).
        parse: ``list[Sentence] -> list[Sentence]`` (a :class:`~g2gt.ud.parse.Parser`).
        enhance: ``list[Sentence] -> list[Sentence]`` (a :class:`~g2gt.ud.enhance.Enhancer`).
        enhance_loader: instead of ``enhance``, a zero-argument callable that loads it (called on first use).
        card: the model card (``model.json``): language, treebank, commands, scores ...
    """

    def __init__(self, tokenize: Callable | None = None, parse: Callable | None = None,
                 enhance: Callable | None = None, card: dict | None = None, source: str | None = None,
                 enhance_loader: Callable[[], Callable] | None = None) -> None:
        self.tokenize = tokenize if tokenize is not None else RuleTokenizer("rule")
        self.parse_stage = parse
        self._enhance = enhance
        self._enhance_loader = enhance_loader
        self.card = dict(card or {})
        self.source = source

    # ------------------------------------------------------------------ loading and saving
    @classmethod
    def load(cls, name_or_path: str | os.PathLike = DEFAULT_MODEL, device: str = "cpu", dtype: Any = "auto",
             tokenizer: str = "auto") -> "Pipeline":
        """A shipped or installed model by name (``g2gt models`` lists them), a model folder (from
        :meth:`save`), or a parser's training folder / checkpoint (then the rule tokenizer and no enhancer).

        ``dtype`` reaches every stage (see :func:`g2gt.ud.stage.inference_dtype`; ``"auto"``: the fastest
        precision with the same accuracy for ``device``). ``tokenizer``: ``"auto"`` (the model's learned one,
        else stanza's if installed, else the rules), ``"model"`` (the learned one, an error without),
        ``"rule"`` or ``"stanza"``."""
        from .enhance import Enhancer
        from .models import PART_FILES, find_model, is_model_folder, model_card
        from .parse import Parser
        from .tokenize import Segmenter

        if tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {tokenizer!r}")
        where = find_model(name_or_path)
        folder = where if is_model_folder(where) else None
        parser = Parser.load(where, device, dtype)
        has = (lambda part: folder is not None and (folder / PART_FILES[part]).is_file())
        if tokenizer in ("auto", "model") and has("segmenter"):
            tok: Callable = Segmenter.load(folder / PART_FILES["segmenter"], device, dtype)
        elif tokenizer == "model":
            raise ValueError(f"tokenizer='model': the model {name_or_path} has no learned tokenizer "
                             f"({PART_FILES['segmenter']}); use tokenizer='rule'")
        else:
            tok = RuleTokenizer("auto" if tokenizer == "auto" else tokenizer)
        loader = None
        if has("enhancer"):
            file = folder / PART_FILES["enhancer"]
            loader = lambda: Enhancer.load(file, device, dtype)  # noqa: E731 - loaded on first use
        card = model_card(folder) if folder is not None else {}
        return cls(tok, parser, None, card, str(name_or_path), enhance_loader=loader)

    def save(self, path: str | os.PathLike, storage_dtype: str = "float16", card: dict | None = None,
             max_mb: float | None = None) -> Path:
        """Write a model folder that :meth:`load` reads back with the same outputs: a file per stage that has
        weights (floating weights stored as ``storage_dtype``) and ``model.json`` (this pipeline's card,
        updated with ``card``, the stage files and their sizes). ``max_mb``: refuse larger folders
        (``ValueError``; nothing is left behind)."""
        from .models import PART_FILES

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
    def parser(self):
        """The parse stage (:class:`~g2gt.ud.parse.Parser`)."""
        return self.parse_stage

    @property
    def enhancer(self):
        """The enhance stage (loaded on first use), or None."""
        if self._enhance is None and self._enhance_loader is not None:
            self._enhance = self._enhance_loader()
        return self._enhance

    @enhancer.setter
    def enhancer(self, value) -> None:
        self._enhance = value

    @property
    def stages(self) -> dict[str, Any]:
        """Name -> stage, in order (the enhancer only when the model has one; it is loaded here)."""
        out = {"tokenize": self.tokenize, "parse": self.parse_stage}
        if self._enhance is not None or self._enhance_loader is not None:
            out["enhance"] = self.enhancer
        return {k: v for k, v in out.items() if v is not None}

    @property
    def learned_tokenizer(self) -> bool:
        from .tokenize import Segmenter

        return isinstance(self.tokenize, Segmenter)

    # ------------------------------------------------------------------ input
    def text_sentences(self, text: str) -> list[Sentence]:
        """Sentences of a raw-text document (``[]`` for one without words): a learned tokenizer reads it one
        block of paragraphs at a time (memory bounded by the block) with running ids ``s1, s2 ...``; another
        tokenizer reads it whole."""
        if not text.strip():
            return []
        if not self.learned_tokenizer:
            out = list(self.tokenize(text))
            if not all(isinstance(s, Sentence) for s in out):
                raise TypeError(f"the tokenize stage {self.tokenize!r} must return a list of g2gt.ud.io.Sentence")
            return out
        from .tokenize.text import paragraph_blocks

        out: list[Sentence] = []
        for i, block in enumerate(paragraph_blocks(text)):
            sents = self.tokenize.segment(block, sent_id_prefix="s", first_id=len(out) + 1)
            if i and sents:
                sents[0].tokens.metadata.pop("newdoc", None)  # one document: only its first sentence opens it
            out += sents
        return out

    def to_sentences(self, x: str | Iterable) -> list[Sentence]:
        """The input forms :meth:`__call__` takes, as sentences: raw text (:meth:`text_sentences`), one
        tokenized sentence (a list of str), several (a list of lists of str) or :class:`Sentence` objects."""
        if isinstance(x, str):
            return self.text_sentences(x)
        from .parse.parser import as_sentences

        return as_sentences(x)

    # ------------------------------------------------------------------ running
    def __call__(self, x: str | Iterable, *, enhanced: bool = False, keep: Iterable[str] | str = (),
                 refine_steps: int | None = None, algorithm: str = "mst", use_input_graph: bool = False,
                 max_tokens: int = 3000, progress: bool = False, treebank: str | None = None) -> list[Sentence]:
        """Parsed sentences of ``x`` (see :meth:`to_sentences`): every column predicted by the parse stage
        (``keep``: input columns kept instead, see :meth:`g2gt.ud.parse.Parser.parse`), DEPS by the enhance
        stage with ``enhanced=True``. The other arguments are the parser's (``treebank``: for a parser trained on
        several treebanks, whose conventions to follow; see :attr:`g2gt.ud.parse.Parser.treebank`)."""
        from .parse.columns import check_keep

        if enhanced:
            if "deps" in check_keep(keep):
                raise ValueError("enhanced=True predicts DEPS; it cannot also keep the input's DEPS (keep='deps')")
            if self.enhancer is None:
                raise ValueError(f"this model ({self.source or 'in memory'}) has no enhanced-UD stage; load a model "
                                 "folder with enhancer.pt (e.g. the shipped 'en_combined') or set pipeline.enhancer")
        sentences = self.to_sentences(x)
        if self.parse_stage is None:  # trees from elsewhere (another parser, gold) go to the enhancer as they are
            out = sentences
        else:
            extra = {} if treebank is None else {"treebank": treebank}  # swapped-in stages need not know it
            out = self.parse_stage.parse(sentences, refine_steps=refine_steps, algorithm=algorithm,
                                         use_input_graph=use_input_graph, max_tokens=max_tokens, progress=progress,
                                         keep=keep, **extra)
        if enhanced:
            out = self.enhancer.enhance(out, max_tokens=max_tokens, progress=progress)
        return out

    parse = __call__

    def stream(self, sentences: Iterable[Sentence], chunk: int = 2000, stats: dict | None = None,
               **kwargs) -> Iterator[Sentence]:
        """:meth:`__call__` over a stream of sentences, ``chunk`` at a time (memory does not grow with the
        input); counts ``sentences`` and ``words`` into ``stats`` when given."""
        it = iter(sentences)
        while part := list(islice(it, chunk)):
            if stats is not None:
                stats["sentences"] = stats.get("sentences", 0) + len(part)
                stats["words"] = stats.get("words", 0) + sum(len(s) for s in part)
            yield from self(part, **kwargs)

    def __repr__(self) -> str:
        names = ", ".join(f"{k}={type(v).__name__}" for k, v in
                          (("tokenize", self.tokenize), ("parse", self.parse_stage),
                           ("enhance", self._enhance or self._enhance_loader)) if v is not None)
        return f"Pipeline({self.source or 'in memory'}: {names})"
