"""Warm start: a new parser initialised from a trained one (``g2gt train parser --init-from MODEL``).

It is not a resume: the optimizer, schedule and data order start fresh; only weights are carried over.

* The source is anything :meth:`g2gt.ud.parse.Parser.load` reads (a shipped name such as ``en_combined``, a model
  folder, a training folder or a checkpoint file); :func:`load_source`.
* The vocabulary is the source's, so the word and character tables match row for row: words of the new data
  the source never saw stay ``<unk>`` for the word table and are read by the character CNN. Labels (UPOS,
  relations, XPOS, UFeats) the new data has and the source lacks are appended (:meth:`ParserVocab.extend`),
  so every old label keeps its id; lemma rules the source lacks are its ``<unk>`` (rare rule) class.
* :func:`copy_weights` copies every tensor whose name and shape match (float16 weights of a shipped model are
  cast to float32). When the architecture is the source's (every field of :data:`SHAPE_FIELDS` equal), a
  tensor that only gained rows for appended labels (output layers ``[C, ...]``, the relation scorer, the
  dependency-channel label tables whose last rows are the relations ``1 + 2r`` / ``2 + 2r``, the treebank
  table) gets the source's rows copied. The rows of the new classes of an output layer (a grown ``X.weight``
  with a grown ``X.bias``) start neutral: weight rows 0 and bias entries ``min(b_old) - log(K_new)``, so the
  ``K_new`` new classes together score like the source's least likely class (total probability at most
  ``exp(min b_old - max logit)``, ~1e-5 on EWT) and the model computes the source's function on the old
  classes at step 0. Random rows would not: with 50 new UFeats and 55 new lemma classes the shipped model's
  loss on EWT train went from 0.001 to 2.4 per word. The weight rows learn from the first batches that hold
  the new classes. Other new rows (the relation scorer's ``U``, zero anyway; the label tables, read only when
  a new relation is in the graph) and new tensors (a treebank table, zero) keep the fresh initialisation of
  :class:`ParserModel`.
* A model without the graph channel warm-started from one with it (``--no-graph-channel``, e.g. a fast student
  from an accurate parser): the channels' rows are summed in attention, so each position row of the label
  tables gets the graph channel's empty-graph row added; the model then computes the source's first pass.
* A deeper model (``--layers`` above the source's): the encoder layers the source lacks go on top and start as
  the identity. Their residual branches end in zero (the attention's output projection and the feed-forward
  output layer, weights and biases), so each adds nothing to the residual stream (pre-LN layers) and the
  grown model computes the source's function at step 0; the branches' other weights keep their fresh
  initialisation and the zero projections learn from the first update on.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from .config import ParserConfig
from .vocab import ParserVocab

__all__ = ["WarmSource", "WarmReport", "load_source", "warm_config", "copy_weights", "LABEL_FIELDS",
           "SHAPE_FIELDS"]

#: the last tensors of an encoder layer's residual branches (zero in a layer the source lacks)
_BRANCH_END = re.compile(r"encoder\.layers\.(\d+)\.(?:self_attn\.out_proj|ffn\.lin2)\.(?:weight|bias)")

#: config fields that are label counts (they grow when labels are appended)
LABEL_FIELDS = ("num_upos", "num_rels", "num_xpos", "num_feats", "num_lemma_rules")
#: config fields that fix the shapes of every other tensor; all equal = the source's architecture
SHAPE_FIELDS = ("num_words", "num_chars", "d_model", "num_heads", "num_layers", "ffn_dim", "max_distance",
                "value_labels", "graph_channel", "arc_dim", "label_dim", "char_dim", "char_filters")


@dataclass
class WarmSource:
    """A trained parser's weights, configuration and vocabulary, and where they came from."""

    given: str  # what the user named (``en_combined``, a folder, a file)
    file: Path
    state: dict
    config: ParserConfig
    vocab: ParserVocab
    step: int | None = None


@dataclass
class WarmReport:
    """What :func:`copy_weights` did, tensor by tensor."""

    copied: list[str] = field(default_factory=list)
    grown: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (source rows, rows now)
    new: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)  # source tensors the new model has no place for

    def summary(self, source: WarmSource) -> str:
        """A few lines for the training log (stderr)."""
        step = f", step {source.step}" if source.step is not None else ""
        lines = [f"warm start from {source.given} ({source.file}{step}): {len(self.copied)} tensors copied, "
                 f"{len(self.grown)} grown, {len(self.new)} new, {len(self.unused)} of the source unused"]
        if self.grown:
            lines.append("  grown (source rows copied; rows of new labels neutral in output layers, else fresh): "
                         + ", ".join(f"{k} {a}->{b}" for k, (a, b) in self.grown.items()))
        if self.new:
            lines.append("  new (fresh initialisation): " + ", ".join(self.new))
        if self.unused:
            lines.append("  unused source tensors: " + ", ".join(self.unused))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"copied": list(self.copied), "grown": {k: list(v) for k, v in self.grown.items()},
                "new": list(self.new), "unused": list(self.unused)}


def load_source(name_or_path: str | os.PathLike) -> WarmSource:
    """The parser named by ``name_or_path`` (see the module docstring), read on the CPU with
    ``weights_only=True``; ``FileNotFoundError`` / ``ValueError`` saying what was expected."""
    from ...core.checkpoint import load_checkpoint
    from ..stage import stage_checkpoint

    file = stage_checkpoint(name_or_path, "parser")
    ck = load_checkpoint(file)
    if "vocab" not in ck.get("task", {}) or "model_config" not in ck or "model" not in ck:
        raise ValueError(f"{file}: not a parser checkpoint (no parser vocabulary / weights inside); --init-from "
                         "takes a parser: a shipped model name, a model folder, a training folder or a checkpoint")
    return WarmSource(str(name_or_path), file, ck["model"], ParserConfig.from_dict(ck["model_config"]),
                      ParserVocab.from_dict(ck["task"]["vocab"]), ck.get("step"))


def warm_config(source: WarmSource, vocab: ParserVocab, overrides: dict | None = None,
                treebanks: list[str] | None = None) -> ParserConfig:
    """The new model's config: the source's architecture with ``overrides`` (e.g. ``{"dropout": 0.1}``),
    the sizes of ``vocab`` (the source's, possibly extended) and ``treebanks``."""
    fixed = set(LABEL_FIELDS) | {"num_words", "num_chars", "treebanks"}
    bad = sorted(set(overrides or {}) & fixed)
    if bad:
        raise ValueError(f"{', '.join(bad)} cannot be overridden: sizes come from the vocabulary and treebanks "
                         "from the training sets")
    base = {k: v for k, v in source.config.to_dict().items() if k not in fixed}
    base.update(overrides or {})
    return vocab.config(**base, treebanks=list(treebanks or []))


@torch.no_grad()
def copy_weights(model: nn.Module, source: WarmSource) -> WarmReport:
    """Copy the source's matching tensors into ``model`` (see the module docstring) and report each one."""
    same_arch = all(getattr(model.config, f) == getattr(source.config, f) for f in SHAPE_FIELDS)
    # the graph channel dropped: its empty-graph row (label 0, right after the position rows) is added to every
    # position row, so the model computes the source's first pass (its iteration 0 over the empty graph)
    fold = (source.config.graph_channel and not model.config.graph_channel
            and model.config.max_distance == source.config.max_distance)
    report = WarmReport()
    target = model.state_dict()  # tensors that share storage with the parameters and buffers
    for name, t in target.items():
        src = source.state.get(name)
        if src is None:
            report.new.append(name)
        elif fold and name.rpartition(".")[2] in ("label_key", "label_value") and src.dim() == 2 \
                and src.shape[1:] == t.shape[1:] and src.shape[0] > t.shape[0]:
            n = t.shape[0]
            t.copy_((src[:n].double() + src[n].double()).to(t.dtype))
            report.copied.append(name)
        elif src.shape == t.shape:
            t.copy_(src.to(t.dtype))
            report.copied.append(name)
        elif same_arch and src.dim() == t.dim() and src.shape[1:] == t.shape[1:] and src.shape[0] < t.shape[0]:
            t[: src.shape[0]].copy_(src.to(t.dtype))
            report.grown[name] = (int(src.shape[0]), int(t.shape[0]))
        else:
            report.new.append(name)
    for name, (old, now) in report.grown.items():  # neutral rows for the new classes of output layers
        layer, _, kind = name.rpartition(".")
        if kind == "bias" and f"{layer}.weight" in report.grown:
            target[name][old:] = target[name][:old].min() - math.log(now - old)
            target[f"{layer}.weight"][old:] = 0.0
    report.unused = [k for k in source.state if k not in target or k in report.new]
    for name in report.new:  # encoder layers above the source's start as the identity (module docstring)
        match = _BRANCH_END.fullmatch(name)
        if match and int(match.group(1)) >= source.config.num_layers:
            target[name].zero_()
    return report
