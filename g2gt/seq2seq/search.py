"""Greedy and beam search, as the translation task uses them.

The search lives beside the model, in :mod:`g2gt.nn.search` (and :meth:`g2gt.nn.G2GTransformer.generate`);
this module re-exports it so that ``from g2gt.seq2seq.search import beam_search`` keeps working.
"""

from __future__ import annotations

from ..nn.search import beam_search, greedy_search

__all__ = ["greedy_search", "beam_search"]
