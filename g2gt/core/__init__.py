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
* :mod:`~g2gt.core.files` — checked inputs and atomic outputs;
  :mod:`~g2gt.core.plot`; :mod:`~g2gt.core._compat` — the only probes of private torch APIs.

Nothing here imports from the layers above (``nn``, ``seq2seq``, ``ud``, ``cli``, ``serve``), and importing
this package imports nothing: each module loads when it is used.
"""
