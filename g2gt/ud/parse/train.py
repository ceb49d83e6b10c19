"""``train_parser``: vocabularies + model + task + :class:`g2gt.core.train.Trainer` in one call (what
``g2gt train parser`` runs). Importable without torch (the CLI builds its task options from this
function's signature); torch is imported when it is called."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from ...core.checkpoint import holds_training_folder
from ...core.config import TrainConfig
from .config import ParserConfig

__all__ = ["train_parser"]


@holds_training_folder
def train_parser(train: Sequence, dev: Sequence, out_dir: str | Path, config: dict | None = None,
                 train_config: TrainConfig | None = None, refine_train: str = "self", refine_steps: int = 2,
                 max_tokens: int = 4000, min_freq: int = 2, lowercase: bool = True, word_dropout: float = 0.2,
                 corrupt_max: float = 0.3, resume: bool = False, tags: bool = True) -> tuple[Any, list[dict]]:
    """Build vocabularies, model and task; train; return ``(best Parser, dev history)``.

    ``train`` / ``dev``: sentences with gold trees (:class:`g2gt.ud.io.Sentence`). ``config``: overrides
    of :class:`ParserConfig` fields (e.g. ``{"d_model": 256}``). ``train_config``: the
    :class:`TrainConfig` (default: lr 1e-3, model selection on dev LAS). ``tags``: also train XPOS,
    UFeats and lemma (edit-rule) heads where the training data has those columns. The other
    arguments are :class:`ParsingTask`'s.

    ``out_dir`` receives ``best.pt``, ``last.pt``, ``log.jsonl`` and a readable ``config.json``.
    With ``resume``, the vocabulary and model configuration are read back from ``last.pt``.
    """
    import torch

    from ...core.checkpoint import load_checkpoint
    from ...core.train import Trainer
    from .model import ParserModel
    from .parser import Parser
    from .task import ParsingTask
    from .vocab import ParserVocab

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tc = train_config or TrainConfig(lr=1e-3, metric="las", metric_mode="max")
    last = out / "last.pt"
    if resume and last.exists():
        ck = load_checkpoint(last)
        vocab = ParserVocab.from_dict(ck["task"]["vocab"])
        cfg = ParserConfig.from_dict(ck["model_config"])
    else:
        vocab = ParserVocab.build(train, min_freq=min_freq, lowercase=lowercase, tags=tags)
        cfg = vocab.config(**(config or {}))
    torch.manual_seed(tc.seed)
    model = ParserModel(cfg)
    task = ParsingTask(train, dev, vocab, cfg.max_distance, max_tokens, refine_train, refine_steps, corrupt_max,
                       word_dropout, tc.seed, graph_channel=cfg.graph_channel)
    info = {
        "model_config": cfg.to_dict(), "train_config": tc.to_dict(),
        "task": {"refine_train": task.refine_train, "refine_steps": task.refine_steps, "max_tokens": max_tokens,
                 "min_freq": min_freq, "lowercase": lowercase, "word_dropout": word_dropout,
                 "corrupt_max": corrupt_max},
        "data": {"train_sentences": len(train), "dev_sentences": len(dev),
                 "train_words": sum(len(s) for s in train), "vocab_words": len(vocab.words),
                 "rels": len(vocab.rels), "upos": len(vocab.upos)},
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    (out / "config.json").write_text(json.dumps(info, indent=2) + "\n")
    trainer = Trainer(model, task, tc, out, model_config=cfg.to_dict())
    t0 = time.time()
    history = trainer.fit(resume=resume)
    info["train_seconds"] = round(time.time() - t0, 1)
    info["steps"] = trainer.step
    info["best_dev"] = trainer.best
    (out / "config.json").write_text(json.dumps(info, indent=2) + "\n")
    return Parser.load(out, trainer.device, dtype="float32"), history
