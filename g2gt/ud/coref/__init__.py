"""Coreference as a parse-to-graph task: CorefUD ``Entity=`` mentions and entities from a document's trees.

* :mod:`~g2gt.ud.coref.io`: reading / writing ``Entity=`` brackets in MISC (every other item kept);
* :mod:`~g2gt.ud.coref.data`: documents cut into windows, each a :class:`g2gt.Graph` (positions, trees,
  sentence distances), with mention-head / extent / entity targets;
* :mod:`~g2gt.ud.coref.model`: :class:`CorefConfig` / :class:`CorefModel` (label-attention encoder, mention
  heads and types, extents inside the head's subtree, biaffine antecedent scores);
* :mod:`~g2gt.ud.coref.decode`: entities from antecedent links;
* :mod:`~g2gt.ud.coref.metrics`: MUC, B³, CEAF-e and CoNLL F1 as the CRAC scorer computes them;
* :mod:`~g2gt.ud.coref.task`: the Trainer task; :mod:`~g2gt.ud.coref.train`: :func:`train_coref`;
* :mod:`~g2gt.ud.coref.resolver`: ``Coreferencer.load(path)(sentences)``, the pipeline stage.

Example::

    from g2gt.ud.io import read_conllu, write_conllu
    from g2gt.ud.coref import Coreferencer

    write_conllu(Coreferencer.load("runs/coref")(read_conllu("parsed.conllu")), "coref.conllu")

Names load lazily (no torch until one that needs it is used).
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "Mention": "io", "documents": "io", "read_mentions": "io", "write_mentions": "io",
    "CorefVocab": "data", "CorefConfig": "config", "CorefModel": "model", "coref_scores": "metrics",
    "score_files": "metrics", "mention_scores": "metrics", "CorefTask": "task", "train_coref": "train",
    "Coreferencer": "resolver",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
