"""The one place where the server touches a model: load it, segment raw text, tag and parse sentences.

Everything else in :mod:`g2gt.serve` sees a :class:`LoadedModel` and :class:`g2gt.ud.io.Sentence` objects, so
pointing the server at another pipeline class means editing this module only. It uses the library's public
API: :meth:`g2gt.ud.pipeline.Pipeline.load` (what :func:`g2gt.load` returns), its ``tokenize`` / ``parser`` /
``enhancer`` stages, ``card``, ``to_sentences`` and ``__call__`` with ``keep`` / ``enhanced`` / ``max_tokens``.

UDPipe's steps map onto one call of the pipeline: ``tag=False`` keeps the input's UPOS / XPOS / FEATS /
LEMMA (``keep=...``); ``parse=False`` puts the input's HEAD / DEPREL back after the call; with neither, the
model is not called at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..ud.io import Sentence

__all__ = ["LoadedModel", "load_models", "model_name"]

TAG_COLUMNS = ("upos", "xpos", "feats", "lemma")
WARM_UP_TEXT = ("The server parses this text once at start-up. It has two sentences, and the second one is a little "
                "longer than the first, so that every stage of the pipeline runs before the first request.")


def model_name(spec: str) -> tuple[str, str]:
    """``"NAME=DIR"`` -> ``(NAME, DIR)``; a folder -> ``(its base name, spec)``; a model's name -> ``(the name
    it resolves to, spec)`` (:func:`g2gt.ud.models.resolve_name`: an old name is served as its model's)."""
    if "=" in spec:
        name, _, where = spec.partition("=")
        if not name or not where:
            raise ValueError(f"--model {spec!r}: expected NAME, DIR or NAME=DIR")
        return name, where
    if not Path(spec).exists():
        from ..ud.models import resolve_name

        return resolve_name(spec), spec
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
    def load(cls, spec: str, device: str = "cpu", dtype: str | None = "auto") -> "LoadedModel":
        """Load ``spec`` (a shipped or installed name, a model folder, or ``NAME=DIR``) and its enhanced-UD
        stage, so the first request that asks for it does not pay the loading time."""
        from ..ud.pipeline import Pipeline

        name, where = model_name(spec)
        nlp = Pipeline.load(where, device=device, dtype=dtype)
        model = cls(name, nlp, dict(getattr(nlp, "card", None) or {}))
        model.warm_up()
        return model

    def warm_up(self) -> None:
        """Run every stage once (the enhancer is loaded, lazy initialisation and kernel builds happen now), so
        the first request does not pay for it and worker threads never race to load a stage."""
        text = WARM_UP_TEXT
        sentences = [s for part in self.segment_many([text]) for s in part]
        self.parse(sentences, enhanced=self.has_enhancer)

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
    def description(self) -> str:
        return str(self.card.get("description", ""))

    @property
    def acknowledgements(self) -> list[str]:
        """What a client should credit: g2gt and the model's training data and licence (from its card)."""
        facts = [str(self.card[k]) for k in ("training_data", "license") if self.card.get(k)]
        return ["g2gt: Graph-to-Graph Transformers"] + ([f"{self.name}: " + "; ".join(facts)] if facts else [])

    # ------------------------------------------------------------------ work
    def segment_many(self, texts: Sequence[str]) -> list[list[Sentence]]:
        """Raw texts -> their sentences (tokens, multiword tokens, ``SpaceAfter`` in MISC), one list per text.
        A learned tokenizer reads all texts in shared batches; any other one text at a time."""
        many = getattr(self.nlp.tokenize, "segment_many", None)
        if many is not None:
            return [list(s) for s in many(list(texts))]
        return [self.nlp.to_sentences(t) for t in texts]

    def parse(self, sentences: Sequence[Sentence], tag: bool = True, parse: bool = True,
              enhanced: bool = False, max_tokens: int = 500) -> list[Sentence]:
        """Tagged and / or parsed copies of ``sentences`` (see the module docstring for ``tag`` / ``parse``);
        ``enhanced`` adds DEPS (needs ``parse``). ``max_tokens``: padded words per model batch: the pipeline
        sorts the sentences by length and cuts them into batches of at most this many, so one long sentence
        does not pad many short ones (32 random EWT sentences: ~1.25x the words/s of one 3,000-word batch)."""
        sentences = list(sentences)
        if not sentences:
            return []
        if not (tag or parse):
            return [s.copy() for s in sentences]
        keep = () if tag else TAG_COLUMNS
        out = self.nlp(sentences, keep=keep, enhanced=enhanced and parse, max_tokens=max_tokens)
        if not parse:
            for src, dst in zip(sentences, out):
                for a, b in zip(src.words, dst.words):
                    b["head"], b["deprel"] = a["head"], a["deprel"]
        return out


def load_models(specs: Sequence[str], device: str = "cpu", dtype: str | None = "auto") -> dict[str, LoadedModel]:
    """Load every model of ``specs`` (see :meth:`LoadedModel.load`); the first is the default.

    Raises ``ValueError`` when two specs give the same name."""
    out: dict[str, LoadedModel] = {}
    for spec in specs:
        name, _ = model_name(spec)
        if name in out:
            raise ValueError(f"--model {spec}: the name {name!r} is already used; name it with NAME=DIR")
        out[name] = LoadedModel.load(spec, device, dtype)
    return out

