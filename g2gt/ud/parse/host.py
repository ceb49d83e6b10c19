"""A decoded batch brought to the host in ONE copy, its ids turned into strings with array code.

:meth:`ParserModel.decode` leaves ``B`` sentences' heads, relations, UPOS, tag classes, passes (and, when
recorded, every iteration's trees) on the model's device. :func:`to_host` concatenates them into one
``[B, 2 + n C]`` long tensor (``C`` ids per node), copies it to the CPU once (one device synchronisation per
batch, not one per column or per sentence), and maps each id column to its strings by indexing an object
array of the vocabulary with the whole ``[B, n]`` id array. What is left per sentence is slicing nested
lists (``row[1 : n + 1]``), no tensor indexing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

__all__ = ["HostBatch", "to_host"]


@dataclass
class HostBatch:
    """One decoded batch of ``B`` sentences as Python lists, sentence ``b`` having ``lengths[b]`` words
    (ROOT and padding dropped).

    ``heads[b]``: 1-based heads (0 = ROOT); ``deprels[b]`` / ``upos[b]``: strings; ``tags``: ``"xpos"`` and
    ``"feats"`` as strings per word, ``"lemma"`` as each word's ``k`` class ids (best first, as
    :class:`g2gt.ud.parse.model.DecodedBatch` has them); ``passes[b]``: encoder passes; ``history``: per
    recorded iteration, ``(heads, deprels, upos)`` in the same per-sentence form.
    """

    lengths: list[int]
    passes: list[int]
    heads: list[list[int]]
    deprels: list[list[str]]
    upos: list[list[str]]
    tags: dict[str, list[list]] = field(default_factory=dict)
    history: list[tuple[list[list[int]], list[list[str]], list[list[str]]]] = field(default_factory=list)


def to_host(res, lengths: Tensor, vocab) -> HostBatch:
    """The batch ``res`` (a :class:`g2gt.ud.parse.model.DecodedBatch`) on the host, in one device copy.

    Layout of the copied tensor ``[B, 2 + n C]``: ``lengths``, ``passes``, then ``[B, n, k]`` blocks
    flattened to ``[B, n k]``, in the order heads, rels, upos, the tags (each ``k`` columns), then
    ``(heads, rels, upos)`` per recorded iteration.

    Args:
        res: the decoded batch (long tensors ``[B, n]`` / ``[B, n, k]`` and ``passes [B]`` on one device).
        lengths: ``[B]`` words per sentence, on the same device.
        vocab: the :class:`g2gt.ud.parse.vocab.ParserVocab` whose ``rels``, ``upos``, ``xpos``, ``feats`` name
            the ids.

    Returns:
        The :class:`HostBatch`.
    """
    B, n = res.heads.shape
    blocks: list[tuple[str, Tensor]] = [("heads", res.heads), ("rels", res.rels), ("upos", res.upos)]
    blocks += [(f"tag:{name}", t) for name, t in res.tags.items()]
    for k, step in enumerate(res.history):
        blocks += [(f"hist{k}:{c}", t) for c, t in zip(("heads", "rels", "upos"), step)]
    flat = torch.cat([lengths.reshape(B, 1).long(), res.passes.reshape(B, 1).long()]
                     + [t.reshape(B, -1).long() for _, t in blocks], 1)
    arr = flat.cpu().numpy()  # the one host copy
    lens = arr[:, 0].tolist()
    cols: dict[str, np.ndarray] = {}
    at = 2
    for name, t in blocks:
        k = t.shape[2] if t.dim() == 3 else 1
        block = arr[:, at : at + n * k]
        cols[name] = block.reshape(B, n, k) if t.dim() == 3 else block
        at += n * k
    rels, upos = _names(vocab.rels), _names(vocab.upos)
    tags: dict[str, list[list]] = {}
    for name in res.tags:
        ids = cols[f"tag:{name}"]
        if name == "lemma":
            tags[name] = _words(ids.tolist(), lens)
        else:
            tags[name] = _words(_names(getattr(vocab, name))[ids[:, :, 0]].tolist(), lens)
    history = [(_words(cols[f"hist{k}:heads"].tolist(), lens), _words(rels[cols[f"hist{k}:rels"]].tolist(), lens),
                _words(upos[cols[f"hist{k}:upos"]].tolist(), lens)) for k in range(len(res.history))]
    return HostBatch(lens, arr[:, 1].tolist(), _words(cols["heads"].tolist(), lens),
                     _words(rels[cols["rels"]].tolist(), lens), _words(upos[cols["upos"]].tolist(), lens), tags,
                     history)


def _names(strings: Sequence[str]) -> np.ndarray:
    """``strings`` as a 1-d object array (``names[ids]`` maps an id array of any shape to its strings)."""
    out = np.empty(len(strings), dtype=object)
    out[:] = list(strings)
    return out


def _words(rows: list[list], lengths: list[int]) -> list[list]:
    """Each sentence's words ``1..n`` of its node row (ROOT and padding dropped)."""
    return [row[1 : m + 1] for row, m in zip(rows, lengths)]
