"""g2gt: Graph-to-Graph Transformers.

Nodes are tokens; every ordered pair of nodes carries a label whose embedding
enters the attention score like a relative position. Sequences are chain
graphs, parses are dependency graphs, and PyG users get a MessagePassing layer.
"""

from ._lazy import lazy_exports
from .core.registry import DEFAULT_MODEL
from typing import TYPE_CHECKING

# Names re-exported lazily (PEP 562): ``import g2gt`` stays cheap (no torch) so the ``g2gt`` command's
# --help and --version answer at once; the first use of a name imports its module. This table is the one
# list: ``_EXPORTS`` and ``__all__`` come from it, and tests/core/test_exports.py checks the TYPE_CHECKING imports
# below (which type checkers need written out) against it.
# What a user of the product needs; layer users import from g2gt.nn, graph helpers from g2gt.core.
_MODULES = {
    "ud.pipeline": ("Pipeline",),
    "ud.document": ("Document",),
    "seq2seq.translator": ("Translator",),
    "core.registry": ("available_models",),
    "core.graph": ("Graph", "chain_graph"),
    "errors": ("Error",),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only ("X as X": an explicit re-export)
    from .core.graph import Graph as Graph, chain_graph as chain_graph
    from .core.registry import available_models as available_models
    from .errors import Error as Error
    from .seq2seq.translator import Translator as Translator
    from .ud.document import Document as Document
    from .ud.pipeline import Pipeline as Pipeline


def load(name_or_path: str = DEFAULT_MODEL, device: str = "auto", dtype: str | None = "auto",
         threads: int | None = None, exclude=(), config: dict | None = None, tokenizer: str = "auto"):
    """The ready-to-use pipeline: ``nlp = g2gt.load(); doc = nlp("Some text.")``.

    ``doc`` is a :class:`~g2gt.ud.document.Document` (parsed sentences with character offsets, ``to_json()``,
    ``conllu()``). See :meth:`~g2gt.ud.pipeline.Pipeline.load`; ``nlp.pipe(texts, n_process=N)`` for many texts.

    Args:
        name_or_path: a shipped or installed model's name (default ``"en_combined"``: tokenizer, sentence
            splitter, tagger, lemmatizer, parser and enhanced-UD graphs for English; ``g2gt models`` lists them),
            a model folder, or a parser's training folder or checkpoint.
        device: ``"auto"`` (default: a GPU when there is one, else the CPU), ``"cpu"``, ``"cuda"``.
        dtype: every stage's inference precision; ``"auto"`` (default): the fastest one for ``device`` with the
            same accuracy.
        threads: torch's CPU threads (``None``: leave torch's setting).
        exclude: stages not to load (e.g. ``("enhance",)``; default: none).
        config: options per stage (e.g. ``{"enhance": {"threshold": 0.6}}``; ``None``: none).
        tokenizer: ``"auto"`` (default: the model's learned one), ``"rule"`` or ``"stanza"``.

    Returns:
        A :class:`g2gt.ud.pipeline.Pipeline`.
    """
    from .ud.pipeline import Pipeline

    return Pipeline.load(name_or_path, device=device, dtype=dtype, threads=threads, exclude=exclude, config=config,
                         tokenizer=tokenizer)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


from ._version import __version__ as __version__  # noqa: E402  (defined once, in _version.py)

__all__ = ["load", *_EXPORTS]
