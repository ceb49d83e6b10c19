"""A spaCy ``Language`` whose tokenizer runs a g2gt pipeline (the spacy-stanza pattern).

spaCy calls its tokenizer on the text first; this one runs the whole g2gt pipeline (tokenizer, sentence
splitter, tagger, lemmatizer, parser, and coreference or enhanced UD when asked) and returns the annotated
``Doc`` (:func:`g2gt.ud.spacy.convert.to_spacy`), so the ``Language`` needs no other component; components
added with ``nlp.add_pipe`` run after it::

    nlp = load_pipeline("en_combined", coref=True)
    doc = nlp("Mary met John. She gave him her book.")
    doc.spans["coref_clusters_1"]

The tokenizer is registered as ``g2gt.PipelineAsTokenizer.v1`` in spaCy's ``tokenizers`` registry, so
``nlp.config`` names the model and its options and ``spacy.blank(lang, config=nlp.config)`` builds the same
pipeline; ``nlp.to_disk`` writes no weights (the g2gt model is loaded by name when the pipeline is built).
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from .convert import _INSTALL, to_spacy

try:
    import spacy
    from spacy.tokens import Doc
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(_INSTALL) from e

__all__ = ["G2GTTokenizer", "load_pipeline", "from_pipeline", "create_tokenizer"]


class G2GTTokenizer:
    """spaCy's tokenizer slot filled with a g2gt pipeline: ``tokenizer(text)`` -> an annotated ``Doc``.

    Args:
        pipeline: a :class:`g2gt.ud.pipeline.Pipeline` (``g2gt.load(...)``).
        vocab: the ``Language``'s vocabulary (``nlp.vocab``).
        options: keyword arguments of every pipeline call (``coref=True``, ``enhanced=True``, ``treebank=...``).
    """

    def __init__(self, pipeline: Any, vocab: Any, **options: Any) -> None:
        self.pipeline, self.vocab, self.options = pipeline, vocab, options

    def __call__(self, text: str) -> Doc:
        """The ``Doc`` of ``text`` (:meth:`g2gt.ud.pipeline.Pipeline.__call__`, then :func:`to_spacy`)."""
        return to_spacy(self.pipeline(text, **self.options), self.vocab)

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Doc]:
        """The ``Doc`` of each text, the texts parsed in batches (:meth:`g2gt.ud.pipeline.Pipeline.pipe`);
        ``batch_size`` is accepted for spaCy's signature (the g2gt pipeline batches by words)."""
        for doc in self.pipeline.pipe(texts, **self.options):
            yield to_spacy(doc, self.vocab)

    # the model is loaded by name when the pipeline is built: nothing to write or read
    def to_bytes(self, **kwargs: Any) -> bytes:
        return b""

    def from_bytes(self, data: bytes, **kwargs: Any) -> "G2GTTokenizer":
        return self

    def to_disk(self, path: Any, **kwargs: Any) -> None:
        return None

    def from_disk(self, path: Any, **kwargs: Any) -> "G2GTTokenizer":
        return self


@spacy.registry.tokenizers("g2gt.PipelineAsTokenizer.v1")
def create_tokenizer(model: str = "en_combined", device: str = "auto", dtype: str = "auto", threads: int = 0,
                     exclude: list = [], coref: bool = False, enhanced: bool = False,  # noqa: B006 (spaCy config)
                     treebank: str = "") -> Any:
    """The registered tokenizer factory: loads the g2gt model ``model`` (a name or folder, as ``g2gt.load``)
    once and returns spaCy's ``create_tokenizer(nlp)`` callback.

    Args:
        model: the g2gt model's name or folder.
        device, dtype: as :meth:`g2gt.ud.pipeline.Pipeline.load`; ``threads``: torch's CPU threads (0: leave).
        exclude: stages not to load.
        coref, enhanced: ask every call for coreference / enhanced UD.
        treebank: for a model trained on several treebanks, whose conventions to follow ("": the default).
    """
    from ..pipeline import Pipeline

    pipeline = Pipeline.load(model, device=device, dtype=dtype, threads=threads or None, exclude=tuple(exclude))
    options = _options(coref, enhanced, treebank)

    def make(nlp: Any) -> G2GTTokenizer:
        return G2GTTokenizer(pipeline, nlp.vocab, **options)

    return make


def _options(coref: bool, enhanced: bool, treebank: str | None) -> dict:
    out: dict[str, Any] = {}
    if coref:
        out["coref"] = True
    if enhanced:
        out["enhanced"] = True
    if treebank:
        out["treebank"] = treebank
    return out


def _language(name_or_path: str) -> str:
    from ...core.registry import model_card

    lang = model_card(name_or_path).get("language")
    if not lang:
        raise ValueError(f"the card of model {name_or_path!r} names no language; pass lang='en' (a spaCy language "
                         "code, or 'xx' for any)")
    return str(lang)


def load_pipeline(name_or_path: str = "en_combined", *, lang: str | None = None, device: str = "auto",
                  dtype: str = "auto", threads: int | None = None, exclude: Iterable[str] = (), coref: bool = False,
                  enhanced: bool = False, treebank: str | None = None) -> "spacy.language.Language":
    """A spaCy ``Language`` whose tokenizer is the g2gt model ``name_or_path`` (see the module docstring).

    Args:
        name_or_path: a shipped or installed g2gt model's name, or a model folder.
        lang: the spaCy language code (default: the model card's ``language``; ``"xx"`` for any language).
        device: as ``g2gt.load``: ``"auto"`` (default), ``"cpu"``, ``"cuda"`` ...
        dtype: as ``g2gt.load``: every stage's precision (``"auto"``: the fastest with the same accuracy).
        threads: as ``g2gt.load``: torch's CPU threads (``None``: leave torch's setting).
        exclude: as ``g2gt.load``: stages not to load (default: none).
        coref: annotate coreference (``doc.spans["coref_clusters_N"]``); the model needs a coreference stage.
        enhanced: predict enhanced UD too (in the g2gt document only: spaCy has no place for it).
        treebank: for a model trained on several treebanks, whose conventions to follow.

    Returns:
        ``nlp``: ``nlp(text)`` is an annotated ``spacy.tokens.Doc``.

    Raises:
        ValueError: the model's card names no language and ``lang`` is not given.
    """
    config = {"nlp": {"tokenizer": {"@tokenizers": "g2gt.PipelineAsTokenizer.v1", "model": str(name_or_path),
                                    "device": device, "dtype": str(dtype), "threads": int(threads or 0),
                                    "exclude": list(exclude), "coref": bool(coref), "enhanced": bool(enhanced),
                                    "treebank": treebank or ""}}}
    return spacy.blank(lang or _language(str(name_or_path)), config=config)


def from_pipeline(pipeline: Any, lang: str | None = None, **options: Any) -> "spacy.language.Language":
    """A spaCy ``Language`` around an already loaded g2gt pipeline (``g2gt.load(...)``).

    Not serialisable by config (use :func:`load_pipeline` for that).

    Args:
        pipeline: the :class:`g2gt.ud.pipeline.Pipeline`.
        lang: the spaCy language code (default: the pipeline's model card's ``language``, else ``"xx"``).
        options: keyword arguments of every pipeline call (``coref=True`` ...).

    Returns:
        ``nlp``: ``nlp(text)`` is an annotated ``spacy.tokens.Doc``.
    """
    lang = lang or getattr(pipeline, "card", {}).get("language") or "xx"
    nlp = spacy.blank(lang)
    nlp.tokenizer = G2GTTokenizer(pipeline, nlp.vocab, **options)
    return nlp
