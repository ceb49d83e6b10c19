"""Enhanced Universal Dependencies: the basic tree in, the enhanced graph (DEPS) out.

* :mod:`~g2gt.ud.enhance.labels`: case-marked labels as templates (``obl:<case>``) filled from the basic tree;
* :mod:`~g2gt.ud.enhance.data`: DEPS -> targets (checked, ``file:line`` errors), vocabulary, noisy input trees,
  batches;
* :mod:`~g2gt.ud.enhance.model`: :class:`EnhancerConfig` / :class:`EnhancerModel`, a graph-to-graph Transformer
  whose attention sees the basic tree, with Dozat & Manning (2018) edge and label scorers;
* :mod:`~g2gt.ud.enhance.decode`: decoding with the UD validator's guarantees (a head for every word, all reachable
  from ROOT, no self loops, ``root`` exactly from 0) and :func:`deps_problems` to check them;
* :mod:`~g2gt.ud.enhance.task`: the Trainer task; :mod:`~g2gt.ud.enhance.train`: :func:`train_enhancer`;
  :mod:`~g2gt.ud.enhance.config`: :class:`EnhancerConfig` and the recipe's optimisation settings (no torch);
* :mod:`~g2gt.ud.enhance.enhancer`: ``Enhancer.load(model_dir).enhance(sentences)``, and :func:`enhance_stream`
  over a stream of sentences a bounded chunk at a time;
* :mod:`~g2gt.ud.enhance.graph`: the enhanced graph as a :class:`g2gt.Graph` channel, networkx and PyG.

Example::

    from g2gt.ud.io import read_conllu, write_conllu
    from g2gt.ud.enhance import Enhancer

    enhancer = Enhancer.load("runs/enhanced")
    write_conllu(enhancer.enhance(read_conllu("parsed.conllu")), "enhanced.conllu")
"""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS = {
    "EnhancerVocab": "data", "sentence_edges": "data", "template_coverage": "data", "decode_edges": "decode",
    "deps_problems": "decode", "Enhancer": "enhancer", "enhance_stream": "enhancer", "edges_from_networkx": "graph", "enhanced_channel":
    "graph", "enhanced_graph": "graph", "enhanced_networkx": "graph", "fill_template": "labels",
    "sentence_markers": "labels", "template_label": "labels", "EnhancerConfig": "config", "EnhancerModel":
    "model", "EnhancerTask": "task", "enhancer_train_config": "config", "enhanced_scores": "task",
    "train_enhancer": "train"
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .data import EnhancerVocab, sentence_edges, template_coverage
    from .decode import decode_edges, deps_problems
    from .enhancer import Enhancer, enhance_stream
    from .graph import edges_from_networkx, enhanced_channel, enhanced_graph, enhanced_networkx
    from .labels import fill_template, sentence_markers, template_label
    from .config import EnhancerConfig, enhancer_train_config
    from .model import EnhancerModel
    from .task import EnhancerTask, enhanced_scores
    from .train import train_enhancer

__all__ = [
    "Enhancer", "enhance_stream", "EnhancerConfig", "EnhancerModel", "EnhancerVocab", "EnhancerTask",
    "train_enhancer", "enhancer_train_config", "enhanced_scores", "sentence_edges", "template_coverage", "template_label", "fill_template",
    "sentence_markers", "decode_edges", "deps_problems", "enhanced_channel", "enhanced_graph", "enhanced_networkx",
    "edges_from_networkx",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
