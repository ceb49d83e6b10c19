"""``train_coref``: the recipe behind ``g2gt train coref`` (vocabulary, model, task, the one Trainer).

Importable without torch, so that ``g2gt train coref --help`` reads its keyword arguments cheaply; the work
happens in :mod:`g2gt.ud.coref.task` and :mod:`g2gt.ud.coref.model`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ...core.checkpoint import holds_training_folder
from .io import DEFAULT_LAYOUT, documents, entity_layout

__all__ = ["train_coref"]


@holds_training_folder
def train_coref(train: Sequence, dev: Sequence, out_dir: str | Path, config: dict | None = None,
                train_config=None, *, window: int = 512, max_tokens: int = 1024, min_freq: int = 2,
                word_dropout: float = 0.1, resume: bool = False) -> tuple:
    """Build the vocabulary, model and task from training and dev *sentences* (with ``# newdoc`` and
    ``Entity=``); run the Trainer; return ``(the best Coreferencer, the dev history)``.

    ``config``: overrides of :class:`CorefConfig` fields (e.g. ``{"d_model": 256}``). ``out_dir`` receives
    ``best.pt``, ``last.pt``, ``log.jsonl`` and ``config.json``. When resuming, the vocabulary and model
    configuration come from ``last.pt``.
    """
    import random

    import torch

    from ...core.config import TrainConfig
    from ...core.run import resume_checkpoint, run_training
    from .config import CorefConfig
    from .data import CorefVocab
    from .model import CorefModel
    from .resolver import Coreferencer
    from .task import CorefTask

    train_docs, dev_docs = documents(train), documents(dev)
    for name, docs in (("training", train_docs), ("dev", dev_docs)):
        if not any(s.words and any((t["misc"] or {}).get("Entity") for t in s.words) for d in docs for s in d):
            raise ValueError(f"the {name} data has no Entity= annotations in MISC (expected CorefUD coreference, "
                             "e.g. UD_English-GUM)")
    layout = entity_layout(train_docs[0]) or DEFAULT_LAYOUT
    tc = train_config or TrainConfig(lr=1e-3, metric="conll", metric_mode="max")
    ck = resume_checkpoint(out_dir, resume)
    if ck is not None:
        vocab = CorefVocab.from_dict(ck["task"]["vocab"])
        cfg = CorefConfig.from_dict(ck["model_config"])
    else:
        vocab = CorefVocab.build(train_docs, min_freq=min_freq)
        cfg = CorefConfig(len(vocab.words), len(vocab.chars), len(vocab.upos), len(vocab.rels), len(vocab.morph),
                          len(vocab.tree_labels), 1 + len(vocab.etypes), **(config or {}))
    torch.manual_seed(tc.seed)
    random.seed(tc.seed)
    model = CorefModel(cfg)
    task = CorefTask(train_docs, dev_docs, vocab, window, max_tokens, word_dropout, tc.seed, layout, cfg.max_distance)
    task_info = {"window": window, "max_tokens": max_tokens, "min_freq": min_freq, "word_dropout": word_dropout,
                 "layout": layout}
    data_info = {"train_documents": len(train_docs), "dev_documents": len(dev_docs),
                 "train_words": sum(len(ex) for ex in task.train),
                 "train_mentions": sum(len(ex.mentions) for ex in task.train), "entity_types": vocab.etypes[1:]}
    trainer, history = run_training(model, task, tc, out_dir, cfg.to_dict(), task_info=task_info, data_info=data_info,
                                    resume=resume)
    return Coreferencer.load(out_dir, trainer.device), history
