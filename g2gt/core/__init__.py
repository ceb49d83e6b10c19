"""The core: what every task shares, and nothing about any task.

* :mod:`~g2gt.core.graph` — :class:`Graph` (tokens plus labelled channels), chain graphs, label vocabularies,
  networkx / PyG bridges;
* :mod:`~g2gt.core.batch` — :func:`collate` (graphs -> padded :class:`GraphBatch`), the one token-budget
  batcher :func:`token_budget_batches`, the training sampler :class:`BucketBatchSampler` and :func:`shard` (the
  one rule that splits batches among ranks);
* :mod:`~g2gt.core.config` — :class:`TrainConfig`, :func:`option`, :class:`DictConfig` (torch-free);
* :mod:`~g2gt.core.task` — the :class:`Task` protocol; :mod:`~g2gt.core.train` — the one :class:`Trainer`;
  :mod:`~g2gt.core.run` — the one training runner (``config.json``, averaging, never overwriting a run); :mod:`~g2gt.core.runtime`,
  :mod:`~g2gt.core.schedule`;
* :mod:`~g2gt.core.checkpoint` — atomic, ``weights_only`` checkpoints with their ``kind``, training-folder
  locks, snapshots; :mod:`~g2gt.core.average` — checkpoint averaging;
* :mod:`~g2gt.core.files` — checked inputs (line and text size limits); :mod:`~g2gt.core.output` — atomic outputs;
  :mod:`~g2gt.core.plot`; :mod:`~g2gt.core._compat` — the only probes of private torch APIs.

* :mod:`~g2gt.core.registry` — models by name, of every kind; :mod:`~g2gt.core.package` — models as installable
  packages; :mod:`~g2gt.core.pool` — worker processes; :mod:`~g2gt.core.run_folder` — what a training folder holds.

The graph helpers are importable from here (``from g2gt.core import Graph, chain_graph, collate``). Nothing here
imports from the layers above (``nn``, ``seq2seq``, ``ud``, ``cli``, ``serve``), and importing this package imports
nothing: each name loads its module on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(("Graph", "EdgeChannel", "ChainChannel", "LabelVocab", "chain_graph", "edges_from_heads",
                     "num_chain_labels", "relative_position_labels"), "graph"),
    **dict.fromkeys(("GraphBatch", "collate", "token_budget_batches", "BucketBatchSampler"), "batch"),
    **dict.fromkeys(("TrainConfig",), "config"),
    **dict.fromkeys(("Trainer",), "train"),
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .batch import (
        BucketBatchSampler as BucketBatchSampler, GraphBatch as GraphBatch, collate as collate,
        token_budget_batches as token_budget_batches,
    )
    from .config import TrainConfig as TrainConfig
    from .graph import (
        ChainChannel as ChainChannel, EdgeChannel as EdgeChannel, Graph as Graph, LabelVocab as LabelVocab,
        chain_graph as chain_graph, edges_from_heads as edges_from_heads, num_chain_labels as num_chain_labels,
        relative_position_labels as relative_position_labels,
    )
    from .train import Trainer as Trainer

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
