"""The one place where the server touches a model: load it, segment raw text, tag and parse sentences.

Everything else in :mod:`g2gt.serve` sees a :class:`LoadedModel` and :class:`g2gt.ud.io.Sentence` objects, so
pointing the server at another pipeline class means editing this module only. It uses the library's public
API: :meth:`g2gt.ud.pipeline.Pipeline.load` (what :func:`g2gt.load` returns), its ``parser`` / ``enhancer``
stages and ``stages`` (is there a ``coref`` one), ``card``, and :func:`g2gt.ud.pipe.parse_many` (many requests' texts and sentences segmented and parsed
in shared batches, one :class:`~g2gt.ud.document.Document` each, the failing ones isolated).

UDPipe's steps map onto one call of the pipeline: ``tag=False`` keeps the input's UPOS / XPOS / FEATS /
LEMMA (``keep=...``); ``parse=False`` puts the input's HEAD / DEPREL back after the call; with neither, only
the tokenizer runs. With ``coref``, each request is one document (or several, where CoNLL-U input starts them
with ``# newdoc``), although many requests share one call: a request whose first sentence does not start a
document gets a ``# newdoc`` for the call, taken away again from its result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..ud.document import Document
from ..ud.io import Sentence

__all__ = ["LoadedModel", "load_models", "model_name"]

TAG_COLUMNS = ("upos", "xpos", "feats", "lemma")
WARM_UP_TEXT = ("The server parses this text once at start-up. It has two sentences, and the second one is a little "
                "longer than the first, so that every stage of the pipeline runs before the first request.")


def model_name(spec: str) -> tuple[str, str]:
    """``"NAME=DIR"`` -> ``(NAME, DIR)``; a folder -> ``(its base name, spec)``; a model's name -> ``(the name
    it resolves to, spec)`` (:func:`g2gt.core.registry.resolve_name`: a language code is served as its default
    model's name); a path (:func:`g2gt.core.registry.looks_like_path`) -> ``(its base name, spec)``."""
    if "=" in spec:
        name, _, where = spec.partition("=")
        if not name or not where:
            raise ValueError(f"--model {spec!r}: expected NAME, DIR or NAME=DIR")
        return name, where
    from ..core.registry import available_models, looks_like_path, resolve_name

    if not looks_like_path(spec):
        name = resolve_name(spec)
        if name in available_models("pipeline") or not Path(spec).exists():
            return name, spec
    return Path(spec.rstrip("/\\")).name or spec, spec


@dataclass
class LoadedModel:
    """One loaded pipeline and what the server says about it.

    Args:
        name: the name clients use (``model=`` in requests).
        nlp: the pipeline object returned by :func:`g2gt.load`.
        card: its ``model.json`` card (``{}`` when it has none).
    """

    name: str
    nlp: Any
    card: dict = field(default_factory=dict)

    @classmethod
    def load(cls, spec: str, device: str = "auto", dtype: str | None = "auto") -> "LoadedModel":
        """Load ``spec`` (a shipped or installed name, a model folder, or ``NAME=DIR``) and its enhanced-UD and
        coreference stages, so the first request that asks for them does not pay the loading time."""
        from ..ud.pipeline import Pipeline

        name, where = model_name(spec)
        nlp = Pipeline.load(where, device=device, dtype=dtype)
        model = cls(name, nlp, dict(getattr(nlp, "card", None) or {}))
        model.warm_up()
        return model

    def warm_up(self) -> None:
        """Run every stage once (the enhancer is loaded, lazy initialisation and kernel builds happen now), so
        the first request does not pay for it and worker threads never race to load a stage."""
        out = self.run([WARM_UP_TEXT], enhanced=self.has_enhancer, coref=self.has_coref)[0]
        if isinstance(out, Exception):
            raise out

    # ------------------------------------------------------------------ facts
    @property
    def components(self) -> list[str]:
        """UDPipe's component names this model provides."""
        cols = set(self.nlp.parser.columns)
        return ["tokenizer"] + (["tagger"] if cols & set(TAG_COLUMNS) else []) + ["parser"]

    @property
    def has_enhancer(self) -> bool:
        return self.nlp.enhancer is not None

    @property
    def has_coref(self) -> bool:
        """Whether the pipeline has a ``coref`` stage (a model folder with ``coref.pt``)."""
        return "coref" in self.nlp.stages

    @property
    def description(self) -> str:
        return str(self.card.get("description", ""))

    @property
    def acknowledgements(self) -> list[str]:
        """What a client should credit: g2gt and the model's training data and licence (from its card)."""
        facts = [str(self.card[k]) for k in ("training_data", "license") if self.card.get(k)]
        return ["g2gt: Graph-to-Graph Transformers"] + ([f"{self.name}: " + "; ".join(facts)] if facts else [])

    # ------------------------------------------------------------------ work
    def segment(self, texts: Sequence[str]) -> list[list[Sentence]]:
        """Raw texts -> their sentences (tokens, multiword tokens, ``SpaceAfter`` in MISC), one list per text,
        all in shared batches (:func:`g2gt.ud.pipe.segment_texts`)."""
        from ..ud.pipe import segment_texts

        return segment_texts(self.nlp, list(texts))

    def run(self, inputs: Sequence[str | list[Sentence]], tag: bool = True, parse: bool = True,
            enhanced: bool = False, batch_tokens: int = 500,
            prepare: Callable[[int, list[Sentence]], list[Sentence]] | None = None,
            coref: bool = False) -> list[Document | Exception]:
        """One :class:`Document` per input (raw text or sentences), or the exception that input caused: see
        the module docstring for ``tag`` / ``parse``; ``enhanced`` adds DEPS (needs ``parse``); ``coref`` adds
        coreference (``Entity=`` in MISC; needs ``parse`` and :attr:`has_coref`); ``prepare``:
        see :func:`g2gt.ud.pipe.parse_many`. ``batch_tokens``: padded words per model batch: sentences are
        sorted by length and cut into batches of at most this many, so one long sentence does not pad many
        short ones (32 random EWT sentences: ~1.25x the words/s of one 3,000-word batch)."""
        from ..ud.pipe import parse_many

        from ..ud.limits import limit_sentence_words

        prepared: dict[int, list[Sentence]] = {}
        coref = coref and parse
        marked: set[int] = set()  # requests given a "# newdoc" for the call (module docstring)

        def prepare_and_keep(i: int, sentences: list[Sentence]) -> list[Sentence]:
            out = prepare(i, sentences) if prepare is not None else limit_sentence_words(sentences)
            if coref and out and not _starts_document(out[0]):
                out = [out[0].copy(), *out[1:]]
                out[0].metadata["newdoc"] = None
                marked.add(i)
            prepared[i] = out
            return out

        keep = () if tag else TAG_COLUMNS
        docs = parse_many(self.nlp, list(inputs), errors="return", prepare=prepare_and_keep,
                          only_tokenize=not (tag or parse), keep=keep, enhanced=enhanced and parse,
                          batch_tokens=batch_tokens, **({"coref": True} if coref else {}))
        for i, doc in enumerate(docs):
            if not isinstance(doc, Document):
                continue
            doc.model = self.name
            if i in marked and len(doc):
                doc[0].metadata.pop("newdoc", None)
            if tag and not parse:  # the input's HEAD / DEPREL back
                for src, dst in zip(prepared[i], doc):
                    for a, b in zip(src.word_rows, dst.word_rows):
                        b["head"], b["deprel"] = a["head"], a["deprel"]
        return docs


def _starts_document(sentence: Sentence) -> bool:
    md = sentence.metadata
    return "newdoc" in md or "newdoc id" in md


def load_models(specs: Sequence[str], device: str = "auto", dtype: str | None = "auto") -> dict[str, LoadedModel]:
    """Load every model of ``specs`` (see :meth:`LoadedModel.load`); the first is the default.

    Raises ``ValueError`` when two specs give the same name."""
    out: dict[str, LoadedModel] = {}
    for spec in specs:
        name, _ = model_name(spec)
        if name in out:
            raise ValueError(f"--model {spec}: the name {name!r} is already used; name it with NAME=DIR")
        out[name] = LoadedModel.load(spec, device, dtype)
    return out

