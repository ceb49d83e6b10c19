"""``train_coref``: the recipe behind ``g2gt train coref`` (vocabulary, model, task, the one Trainer).

Importable without torch, so that ``g2gt train coref --help`` reads its keyword arguments cheaply; the work
happens in :mod:`g2gt.ud.coref.task` and :mod:`g2gt.ud.coref.model`. :func:`coref_train_config` is the one
source of the recipe's optimisation defaults (``g2gt train coref``, :func:`train_coref` and ``g2gt train
pipeline`` read it).

**Warm start** (``train_config.init_from``, ``g2gt train coref --init-from MODEL``): the run starts from a
trained coreference stage -- a shipped model's name (``en_combined``), a model folder with ``coref.pt``, a
training folder or a checkpoint file (:func:`g2gt.ud.coref.stage.coref_checkpoint`) -- instead of random
weights. It takes the source's weights (float16 ones cast to float32), vocabularies, model configuration and
link threshold; the optimizer, schedule and data order start fresh (it is not a resume). Only the
shape-free fields of :data:`WARM_OVERRIDABLE` may differ from the source's configuration. Words the source
never saw are ``<unk>`` for its word table and read by its character CNN; entity types it lacks are tagged as
a mention of unknown type. At step 0 the model is the source: it predicts what the source predicts. The run's
``train_config`` (``last.pt``, ``best.pt``, ``config.json``) records ``init_from``, and the model card lists
the commands that made the source before this run's (:func:`g2gt.ud.recipe.export.stage_commands`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from ...core.config import TrainConfig, model_fields
from ...core.run import training_run
from .config import DATA_FIELDS, CorefConfig
from .io import DEFAULT_LAYOUT, documents, entity_layout

_log = logging.getLogger("g2gt")

__all__ = ["train_coref", "coref_train_config", "COREF_TRAIN", "WARM_OVERRIDABLE", "WarmCoref",
           "load_warm_source"]

#: the recipe's optimisation settings; model selection on the dev CoNLL F1 (head match, no singletons)
COREF_TRAIN = TrainConfig(lr=1e-3, grad_clip=5.0, eval_every=400, cooldown=0.3, metric="conll", metric_mode="max")
#: :class:`CorefConfig` fields a warm start may change (they fix no tensor's shape)
WARM_OVERRIDABLE = ("dropout", "attention_dropout", "head_dropout")


def coref_train_config(**fields) -> TrainConfig:
    """The coreference recipe's :class:`TrainConfig` (a copy of :data:`COREF_TRAIN`); ``fields`` override any
    field (``coref_train_config(max_minutes=60)``)."""
    return replace(COREF_TRAIN, **fields)




@dataclass
class WarmCoref:
    """A trained coreference stage read for a warm start: ``state`` (its weights), ``config`` (a
    :class:`CorefConfig`), ``vocab`` (a :class:`CorefVocab`), its link ``threshold`` and where it came from."""

    given: str
    file: Path
    state: dict
    config: Any
    vocab: Any
    threshold: float = 0.0
    step: int | None = None


def load_warm_source(name_or_path: str | os.PathLike) -> WarmCoref:
    """The coreference stage named by ``name_or_path`` (module docstring), read on the CPU with
    ``weights_only=True``; ``FileNotFoundError`` / ``ValueError`` saying what was expected."""
    from ...core.checkpoint import load_checkpoint
    from .config import CorefConfig
    from .data import CorefVocab
    from .stage import coref_checkpoint

    file = coref_checkpoint(name_or_path)
    ck = load_checkpoint(file)
    task = ck.get("task") or {}
    if task.get("kind") != "coref" or "vocab" not in task or "model" not in ck or "model_config" not in ck:
        raise ValueError(f"{file}: not a coreference checkpoint; --init-from takes a trained coreference stage: a "
                         "model's name or folder with coref.pt, a 'g2gt train coref' folder or a checkpoint file")
    return WarmCoref(str(name_or_path), file, ck["model"], CorefConfig.from_dict(ck["model_config"]),
                     CorefVocab.from_dict(task["vocab"]), float(task.get("threshold", 0.0)), ck.get("step"))


def _warm_config(source: WarmCoref, config: CorefConfig | None):
    """The source's configuration with the fields of ``config`` that differ from their defaults, which must be
    :data:`WARM_OVERRIDABLE` ones (other fields set to another value than the source's are refused)."""
    import dataclasses

    overrides = model_fields(config, DATA_FIELDS, changed=True) if config is not None else {}
    bad = {k: v for k, v in (overrides or {}).items()
           if k not in WARM_OVERRIDABLE and getattr(source.config, k, v) != v}
    if bad:
        raise ValueError(f"a warm start keeps the source's architecture ({source.given}: "
                         + ", ".join(f"{k}={getattr(source.config, k)}" for k in bad)
                         + f"), got {', '.join(f'{k}={v}' for k, v in bad.items())}; only "
                         f"{', '.join(WARM_OVERRIDABLE)} may change (or train from scratch without init_from)")
    return dataclasses.replace(source.config, **{k: v for k, v in (overrides or {}).items() if k in WARM_OVERRIDABLE})


@training_run
def train_coref(train: Sequence, dev: Sequence, out_dir: str | Path, config: CorefConfig | None = None,
                train_config: TrainConfig | None = None, *, window: int = 512, batch_tokens: int = 1024,
                min_freq: int = 2, word_dropout: float = 0.1, resume: bool = False, overwrite: bool = False) -> tuple:
    """Build the vocabulary, model and task from training and dev *sentences* (with ``# newdoc`` and
    ``Entity=``); run the Trainer; return ``(the best Coreferencer, the dev history)``.

    ``config``: the model's :class:`CorefConfig` (default: its defaults; the sizes,
    :data:`~g2gt.ud.coref.config.DATA_FIELDS`, are set from the data). ``train_config``: default
    :func:`coref_train_config`; its ``init_from`` warm-starts the run (module docstring). ``out_dir`` receives
    ``best.pt``, ``last.pt``, ``log.jsonl`` and ``config.json``; a folder that holds a run is refused unless
    ``resume`` or ``overwrite`` (:mod:`g2gt.core.run`). When resuming, the vocabulary, model
    configuration and link threshold come from ``last.pt`` (and so does ``init_from``, for the card).
    """
    import dataclasses
    import random

    import torch

    from ...core.run import resume_checkpoint, run_training
    from .data import CorefVocab
    from .model import CorefModel
    from .resolver import Coreferencer
    from .task import CorefTask

    train_docs, dev_docs = documents(train), documents(dev)
    for name, docs in (("training", train_docs), ("dev", dev_docs)):
        if not any(len(s) and any((t["misc"] or {}).get("Entity") for t in s.word_rows) for d in docs for s in d):
            raise ValueError(f"the {name} data has no Entity= annotations in MISC (expected CorefUD coreference, "
                             "e.g. UD_English-GUM)")
    layout = entity_layout(train_docs[0]) or DEFAULT_LAYOUT
    tc = train_config or coref_train_config()
    ck = resume_checkpoint(out_dir, resume)
    source, threshold = None, 0.0
    if ck is not None:
        vocab = CorefVocab.from_dict(ck["task"]["vocab"])
        cfg = CorefConfig.from_dict(ck["model_config"])
        threshold = float(ck["task"].get("threshold", 0.0))
        saved_init = (ck.get("train_config") or {}).get("init_from")
        if tc.init_from is None and saved_init:
            tc = dataclasses.replace(tc, init_from=saved_init)
    elif tc.init_from:
        source = load_warm_source(tc.init_from)
        vocab, cfg, threshold = source.vocab, _warm_config(source, config), source.threshold
    else:
        vocab = CorefVocab.build(train_docs, min_freq=min_freq)
        cfg = CorefConfig(len(vocab.words), len(vocab.chars), len(vocab.upos), len(vocab.rels), len(vocab.morph),
                          len(vocab.tree_labels), 1 + len(vocab.etypes),
                          **model_fields(config or CorefConfig(), DATA_FIELDS))
    torch.manual_seed(tc.seed)
    random.seed(tc.seed)
    model = CorefModel(cfg)
    if source is not None:
        model.load_state_dict(source.state, strict=True)  # float16 weights of a shipped model -> float32
        step = f", step {source.step}" if source.step is not None else ""
        _log.info(f"warm start from {source.given} ({source.file}{step}): its weights, vocabularies, configuration "
              f"and link threshold {source.threshold:g}; optimizer and schedule fresh")
    task = CorefTask(train_docs, dev_docs, vocab, window, batch_tokens, word_dropout, tc.seed, layout, cfg.max_distance,
                     threshold)
    task_info = {"window": window, "batch_tokens": batch_tokens, "min_freq": min_freq, "word_dropout": word_dropout,
                 "layout": layout, **({"init_from": tc.init_from, "threshold": threshold} if tc.init_from else {})}
    data_info = {"train_documents": len(train_docs), "dev_documents": len(dev_docs),
                 "train_words": sum(len(ex) for ex in task.train),
                 "train_mentions": sum(len(ex.mentions) for ex in task.train), "entity_types": vocab.etypes[1:]}
    trainer, history = run_training(model, task, tc, out_dir, cfg.to_dict(), task_info=task_info, data_info=data_info,
                                    resume=resume, overwrite=overwrite)
    return Coreferencer.load(out_dir, trainer.device), history
