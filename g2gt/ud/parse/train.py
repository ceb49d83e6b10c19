"""``train_parser``: vocabularies + model + task + :class:`g2gt.core.train.Trainer` in one call (what
``g2gt train parser`` runs). Importable without torch (the CLI builds its task options from this
function's signature); torch is imported when it is called."""

from __future__ import annotations

import logging
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Sequence

from ...core.config import TrainConfig, model_fields
from ...core.run import training_run
from .config import DATA_FIELDS, ParserConfig, parser_train_config
from .treebanks import as_named_sets, treebank_index, treebank_list

_log = logging.getLogger("g2gt")

__all__ = ["train_parser"]


@training_run
def train_parser(train: Sequence | Mapping[str, Sequence], dev: Sequence | Mapping[str, Sequence],
                 out_dir: str | Path, config: ParserConfig | None = None, train_config: TrainConfig | None = None,
                 refine_train: str = "self", refine_steps: int = 2, batch_tokens: int = 1500, min_freq: int = 2,
                 lowercase: bool = True, word_dropout: float = 0.2, corrupt_max: float = 0.3, resume: bool = False,
                 tags: bool = True, treebank_embedding: bool = True, short_clauses: float = 0.0,
                 overwrite: bool = False) -> tuple[Any, list[dict]]:
    """Build vocabularies, model and task; train; return ``(best Parser, dev history)``.

    ``train`` / ``dev``: sentences with gold trees (:class:`g2gt.ud.io.Sentence`), or ``{treebank name:
    sentences}`` for several treebanks (:mod:`g2gt.ud.parse.treebanks`): the vocabulary is built over all
    training sets; with two or more treebank names and ``treebank_embedding`` the model learns one vector per
    treebank (``ParserConfig.treebanks``, in the order given: the first is the default at parse time) and each
    sentence uses its set's; the first dev set selects ``best.pt`` (keys ``las``, ``uas`` ...), the others are
    evaluated and logged as ``NAME.las`` ..., each parsed as its own treebank when the model knows it.

    ``config``: the model's :class:`ParserConfig` (default: its defaults; the sizes and treebank names,
    :data:`~g2gt.ud.parse.config.DATA_FIELDS`, are set from the data). ``train_config``: the
    :class:`TrainConfig` (default: :func:`~g2gt.ud.parse.config.parser_train_config`, the recipe of ``g2gt train
    parser``: lr 1.5e-3, model selection on dev LAS); ``batch_tokens``: padded words per training batch; the
    defaults of every argument are those of the command. Its ``init_from`` names a trained parser to
    warm-start from (:mod:`g2gt.ud.parse.warm`: its architecture, the fields of ``config`` that differ from
    their defaults overriding, its vocabulary with new labels appended, its matching weights; optimizer and
    schedule fresh). ``tags``: also
    train XPOS, UFeats and lemma (edit-rule) heads where the training data has those columns; with a lemma head
    the vocabulary also keeps the training data's unambiguous (form, UPOS) -> lemma pairs
    (:func:`~g2gt.ud.parse.vocab.unambiguous_lemmas`, looked up before the edit scripts at parse time).
    ``train_config.average_last``: keep the weights of the last ``K`` saves and write their average to
    ``out_dir/averaged.pt`` at the end, with its dev scores in ``config.json`` (:mod:`g2gt.core.run`).
    ``short_clauses``: extra training sentences per training sentence,
    short clauses cut from the training trees and drawn anew each epoch (:mod:`g2gt.ud.parse.clause_cuts`:
    a predicate with its subject, auxiliaries and some of its other dependents, a capital first letter and the
    treebank's final punctuation), so the parser also sees short statements; 0 = off. The other
    arguments are :class:`ParsingTask`'s.

    ``out_dir`` receives ``best.pt``, ``last.pt``, ``log.jsonl`` and a readable ``config.json``.
    With ``resume``, the vocabulary and model configuration are read back from ``last.pt``; without it (or
    ``overwrite``, which replaces the run) a folder that holds a run is refused (:class:`g2gt.core.run.RunExists`).
    """
    import torch

    from ...core.run import resume_checkpoint, run_training
    from .model import ParserModel
    from .parser import Parser
    from .task import ParsingTask
    from .vocab import ParserVocab, unambiguous_lemmas

    tc = train_config or parser_train_config()
    config = config or ParserConfig()
    train_sets, dev_sets = as_named_sets(train), as_named_sets(dev)
    dev_names = [name for name, _ in dev_sets[1:]]
    if len(set(dev_names)) < len(dev_names) or None in dev_names:
        raise ValueError(f"dev sets need distinct names to be logged apart, got {dev_names} (name them NAME=FILE)")
    if config.treebanks:
        raise ValueError("ParserConfig.treebanks is set from the names of the training sets; pass train as "
                         "{name: sentences} instead")
    for what, sets in (("training", train_sets), ("dev", dev_sets)):
        for _, sents in sets:
            check_gold_trees(sents, what)
    all_train = [s for _, sents in train_sets for s in sents]
    names = [name for name, _ in train_sets]
    source, report, added = None, None, {}
    ck = resume_checkpoint(out_dir, resume)
    if ck is not None:
        vocab = ParserVocab.from_dict(ck["task"]["vocab"])
        cfg = ParserConfig.from_dict(ck["model_config"])
        saved_init = (ck.get("train_config") or {}).get("init_from")
        if tc.init_from is None and saved_init:
            tc = dataclasses.replace(tc, init_from=saved_init)
        unknown = [n for n in names if cfg.treebanks and n not in cfg.treebanks]
        if unknown:
            raise ValueError(f"{Path(out_dir) / 'last.pt'}: the run was trained on the treebanks "
                             f"{', '.join(cfg.treebanks)}, not {', '.join(map(str, unknown))}; resume with the same "
                             "training files")
    elif tc.init_from:
        from .warm import load_source, warm_config

        source = load_source(tc.init_from)
        vocab, added = source.vocab.extend(all_train)
        cfg = warm_config(source, vocab, model_fields(config, DATA_FIELDS, changed=True),
                          treebank_list(names, source.config.treebanks, treebank_embedding))
    else:
        vocab = ParserVocab.build(all_train, min_freq=min_freq, lowercase=lowercase, tags=tags)
        cfg = vocab.config(**model_fields(config, DATA_FIELDS), treebanks=treebank_list(names, (), treebank_embedding))
    if vocab.lemma_rules:  # from this run's training data, whichever way the vocabulary came (also on resume)
        vocab.lemma_lexicon = unambiguous_lemmas(all_train)
    torch.manual_seed(tc.seed)
    model = ParserModel(cfg)
    if source is not None:
        from .warm import copy_weights

        report = copy_weights(model, source)
        _log.info(report.summary(source))
        if added:
            _log.info("  labels added to the source's vocabulary: "
                  + ", ".join(f"{k} +{len(v)}" for k, v in added.items()))
    train_tbs = [treebank_index(cfg.treebanks, name) for name, sents in train_sets for _ in sents]
    more_dev = [(name, sents, treebank_index(cfg.treebanks, name)) for name, sents in dev_sets[1:]]
    task = ParsingTask(all_train, dev_sets[0][1], vocab, cfg.max_distance, batch_tokens, refine_train, refine_steps,
                       corrupt_max, word_dropout, tc.seed, graph_channel=cfg.graph_channel,
                       train_treebanks=train_tbs, dev_treebank=treebank_index(cfg.treebanks, dev_sets[0][0]),
                       more_dev=more_dev, short_clauses=short_clauses)
    task_info = {"refine_train": task.refine_train, "refine_steps": task.refine_steps, "batch_tokens": batch_tokens,
                 "min_freq": min_freq, "lowercase": lowercase, "word_dropout": word_dropout,
                 "corrupt_max": corrupt_max, "treebank_embedding": treebank_embedding, "short_clauses": short_clauses}
    data_info = {"train_sentences": len(all_train), "dev_sentences": len(dev_sets[0][1]),
                 "train_words": sum(len(s) for s in all_train), "vocab_words": len(vocab.words),
                 "rels": len(vocab.rels), "upos": len(vocab.upos),
                 "train_sets": _set_facts(train_sets, cfg.treebanks), "dev_sets": _set_facts(dev_sets, cfg.treebanks)}
    init = None
    if source is not None:
        init = {"init": {"from": source.given, "file": str(source.file), "step": source.step,
                         "added_labels": added, **report.to_dict()}}
    trainer, history = run_training(model, task, tc, out_dir, cfg.to_dict(), task_info=task_info, data_info=data_info,
                                    more_info=init, resume=resume, overwrite=overwrite)
    return Parser.load(out_dir, trainer.device, dtype="float32"), history


def _set_facts(sets: list, treebanks: list[str]) -> dict:
    """``{name: {"sentences", "words", "treebank"}}`` of named data sets, for ``config.json``."""
    return {str(name): {"sentences": len(sents), "words": sum(len(s) for s in sents),
                        "treebank": treebank_index(treebanks, name)} for name, sents in sets}


def check_gold_trees(sentences: Sequence, what: str = "training") -> None:
    """Every sentence's HEAD column is one single-rooted tree (a parser learns only from trees); else
    :class:`g2gt.ud.io.CoNLLUError` naming ``FILE:LINE``, the sentence and the reason (:func:`g2gt.ud.io.check_tree`)."""
    from ..io import check_tree
    from ..io.conllu import CoNLLUError

    for s in sentences:
        why = check_tree([-1 if h is None else int(h) for h in s.heads])
        if why is not None:
            name = f"the {what} sentence" + (f" {s.sent_id}" if s.sent_id else "")
            raise CoNLLUError(getattr(s, "path", None) or "<input>", getattr(s, "line", 0) or 0,
                              f"{name} is not a single-rooted tree: {why} (expected exactly one word with HEAD 0 "
                              "and no cycles)")
