"""``train_enhancer``: the enhancer recipe in one call (importable without torch; the model, task and trainer
load when it runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ...core.config import TrainConfig, model_fields
from ...core.run import training_run
from .config import DATA_FIELDS, EnhancerConfig, enhancer_train_config

__all__ = ["train_enhancer"]


@training_run
def train_enhancer(train: Sequence, dev: Sequence, out_dir: str | Path, config: EnhancerConfig | None = None,
                   train_config: TrainConfig | None = None, *, batch_tokens: int = 1500, min_freq: int = 2,
                   lowercase: bool = True, word_dropout: float = 0.2, corrupt_prob: float = 0.3,
                   corrupt_max: float = 0.15, parser_trees: Sequence | None = None, parser_prob: float = 0.5,
                   resume: bool = False, overwrite: bool = False) -> tuple[Any, list[dict]]:
    """Build the vocabulary, model and task; run the Trainer; return the best :class:`Enhancer`.

    ``config``: the model's :class:`EnhancerConfig` (default: its defaults; the sizes,
    :data:`~g2gt.ud.enhance.config.DATA_FIELDS`, are set from the data). ``out_dir`` receives ``best.pt``,
    ``last.pt``, ``log.jsonl`` and ``config.json``; a folder that holds a run is refused unless ``resume``
    (the vocabulary and model configuration then come from ``last.pt``) or ``overwrite``. ``train_config``: default :func:`enhancer_train_config`;
    ``batch_tokens``: padded words per training batch. The defaults are
    those of ``g2gt train enhancer``.
    """
    import torch

    from ...core.run import resume_checkpoint, run_training
    from .data import EnhancerVocab
    from .enhancer import Enhancer
    from .model import EnhancerModel
    from .task import EnhancerTask

    tc = train_config or enhancer_train_config()
    ck = resume_checkpoint(out_dir, resume)
    if ck is not None:
        vocab = EnhancerVocab.from_dict(ck["task"]["vocab"])
        cfg = EnhancerConfig.from_dict(ck["model_config"])
    else:
        vocab = EnhancerVocab.build(train, min_freq=min_freq, lowercase=lowercase)
        cfg = EnhancerConfig(len(vocab.words), len(vocab.chars), len(vocab.upos), len(vocab.rels),
                             len(vocab.labels), **model_fields(config or EnhancerConfig(), DATA_FIELDS))
    torch.manual_seed(tc.seed)
    model = EnhancerModel(cfg)
    task = EnhancerTask(train, dev, vocab, batch_tokens, word_dropout, corrupt_prob, corrupt_max, parser_trees,
                        parser_prob, tc.seed)
    task_info = {"batch_tokens": batch_tokens, "min_freq": min_freq, "lowercase": lowercase, "word_dropout": word_dropout,
                 "corrupt_prob": corrupt_prob, "corrupt_max": corrupt_max, "parser_trees": parser_trees is not None,
                 "parser_prob": parser_prob}
    data_info = {"train_sentences": len(train), "dev_sentences": len(dev), "train_words": sum(len(s) for s in train),
                 "labels": len(vocab.labels)}
    trainer, history = run_training(model, task, tc, out_dir, cfg.to_dict(), task_info=task_info, data_info=data_info,
                                    resume=resume, overwrite=overwrite)
    return Enhancer.load(out_dir, trainer.device), history
