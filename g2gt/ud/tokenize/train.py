"""Train a segmenter: ``train_segmenter(...)`` (what ``g2gt train segmenter`` runs).

The recipe (defaults of :class:`SegmenterConfig`, :class:`SegmentDataConfig` and
:func:`default_train_config`): a 3-layer d_model-64, 2-head character chain-graph encoder on windows
of 96 non-space characters, 64 windows per batch, AdamW at lr 2e-3 with 5 % warmup and a linear cooldown over the final
20 % of the budget, an evaluation on dev every 250 updates keeping the best ``score`` (tokens F1 +
sentences F1 + words F1). Example (one CPU thread, 20 minutes)::

    g2gt train segmenter --train $G2GT_DATA/ud-en-ewt/en_ewt-ud-train.conllu \\
        --dev $G2GT_DATA/ud-en-ewt/en_ewt-ud-dev.conllu --out runs/segmenter --max-minutes 20 --threads 1

Language-dependent choices are settings, decided from the training data unless given:

* ``english_rules``: the English clitic rules for unseen multiword tokens (``g2gt train segmenter`` turns
  them on for training files named ``en_*``); off, unseen tokens are left to the expander or kept whole;
* ``spaces_in_tokens``: a single space may be inside a token; auto: on when at least
  :data:`SPACES_AUTO_COUNT` training tokens, or 1 % of them in a smaller treebank, hold a space (Vietnamese
  VTB: 4,535 words, 22 %; French Sequoia: 41 numbers such as ``13 819``, 0.08 %; English EWT and GUM, Greek
  GDT, Turkish IMST, Uyghur UDT: none, off). The model then also reads a dictionary feature built from the
  training tokens with spaces (:mod:`g2gt.ud.tokenize.words`);
* ``expander``: the learned multiword-token expander (:mod:`g2gt.ud.tokenize.expander`); auto: trained when
  the training data has at least ``EXPANDER_MIN_TYPES`` different multiword tokens (Turkish IMST: 795;
  French Sequoia, 7, and Greek GDT, 7, are covered by the lexicon). It is trained first, in
  ``out_dir/expander/``, for :data:`EXPANDER_STEPS` updates (:func:`expander_budget`), and saved inside the
  segmenter's checkpoints; its minutes come out of the stage's wall-clock budget.

``resume`` continues an interrupted run in the same folder (same budget): the vocabulary, configuration,
lexicon and expander come back from ``last.pt``. ``TrainConfig.init_from`` (``g2gt train segmenter
--init-from MODEL``) continues a trained segmenter on new data or settings (e.g. the short-text windows of
``SegmentDataConfig.utterances``) instead of starting from random weights.
"""

from __future__ import annotations

import logging
import dataclasses
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from ...core.checkpoint import holds_training_folder
from ...core.config import TrainConfig
from ...core.run import training_run
from .config import ExpanderConfig, SegmentDataConfig, SegmenterConfig
from .mwt import MWTLexicon

_log = logging.getLogger("g2gt")

__all__ = ["train_segmenter", "default_train_config", "learn_lexicon", "relearn_lexicon", "expander_budget",
           "expander_minutes", "add_expander", "lacks_expander", "SPACES_AUTO_SHARE", "SPACES_AUTO_COUNT",
           "EXPANDER_MIN_TYPES",
           "EXPANDER_STEPS"]

#: ``spaces_in_tokens`` is turned on when at least ``SPACES_AUTO_COUNT`` training tokens, or this share of
#: them (whichever is fewer), hold a space
SPACES_AUTO_SHARE = 0.01
SPACES_AUTO_COUNT = 20
#: the expander is trained when the training data has at least this many different multiword tokens
EXPANDER_MIN_TYPES = 50
#: the expander's updates (:func:`expander_budget`)
EXPANDER_STEPS = 800


#: the segmenter recipe's optimisation settings: a 20-minute budget, model selection on the dev score
SEGMENTER_TRAIN = TrainConfig(lr=2e-3, warmup=0.05, schedule="inverse_sqrt", cooldown=0.2, weight_decay=0.01,
                              grad_clip=1.0, max_minutes=20.0, eval_every=250, log_every=20, metric="score",
                              metric_mode="max")


def default_train_config(**overrides) -> TrainConfig:
    """The :class:`g2gt.core.train.TrainConfig` of the segmenter recipe (a copy of :data:`SEGMENTER_TRAIN`), the
    defaults of ``g2gt train segmenter`` and :func:`train_segmenter`; ``overrides`` replace fields."""
    return dataclasses.replace(SEGMENTER_TRAIN, **overrides)


def expander_budget(train_config: TrainConfig, steps: int = EXPANDER_STEPS) -> TrainConfig:
    """The expander's :class:`TrainConfig` for a segmenter stage trained with ``train_config``: ``steps``
    updates (about two minutes on one idle CPU thread; at most ``max_steps`` of a run limited in updates), at
    most half of a wall-clock ``max_minutes``;
    device, seed, autocast and progress as ``train_config``. (It needs a few hundred updates to be useful:
    on Turkish IMST, 600 updates gave 73 % exact splits of the dev multiword tokens not seen in training.)"""
    from .expander_train import expander_train_config

    tc = train_config
    if tc.max_steps:  # a run limited in updates gives its expander no more updates than itself
        steps = min(steps, tc.max_steps)
    common = dict(device=tc.device, seed=tc.seed, progress=tc.progress, amp=tc.amp)
    return expander_train_config(max_steps=steps, max_minutes=0.5 * tc.max_minutes, eval_every=min(200, steps),
                                 **common)


@training_run
def train_segmenter(train_sentences: Iterable, dev_sentences: Iterable, out_dir: str | os.PathLike,
                    config: SegmenterConfig | None = None, train_config: TrainConfig | None = None,
                    resume: bool = False, data_config: SegmentDataConfig | None = None, *,
                    english_rules: bool = False, spaces_in_tokens: bool | None = None, expander: bool | None = None,
                    expander_config: ExpanderConfig | None = None, expander_train_config: TrainConfig | None = None,
                    overwrite: bool = False):
    """Train on CoNLL-U sentences (:class:`g2gt.ud.io.Sentence`, e.g. from :func:`g2gt.ud.io.read_conllu`) with
    their ``# newdoc`` / ``# newpar`` structure; checkpoints and ``log.jsonl`` go to ``out_dir``.

    The character vocabulary and the multiword-token lexicon come from the training sentences;
    ``config.vocab_size`` is set from them. ``train_config`` defaults to :func:`default_train_config`; its
    ``metric`` must be one of :data:`g2gt.ud.tokenize.task.METRICS`; its budget is the whole stage's: the
    expander trains first with ``expander_train_config`` (default: :func:`expander_budget`) and the minutes
    it took come out of a wall-clock ``max_minutes`` (also on resume, so give the same budget again). ``english_rules``, ``spaces_in_tokens`` (None = auto) and
    ``expander`` (None = auto): see the module docstring. ``train_config.init_from`` (a segmenter: a model's
    name, a model or training folder, a checkpoint) warm-starts the run from it: its architecture, character
    vocabulary, weights, English rules and expander (none is trained) are kept, the multiword-token lexicon is
    learned from ``train_sentences``; ``config`` is then ignored. A folder that holds a run is refused unless
    ``resume`` or ``overwrite`` (which also replaces its expander's run; :mod:`g2gt.core.run`). Returns the
    :class:`g2gt.ud.tokenize.Segmenter` of ``best.pt``.
    """
    from ...core.checkpoint import load_checkpoint
    from ...core.run import run_training
    from .chars import CharVocab
    from .data import documents_from_sentences, render_document
    from .model import SegmenterModel
    from .segmenter import Segmenter
    from .task import METRICS, SegmentTask
    from .words import space_words_of

    tc = train_config or default_train_config()
    if tc.metric not in METRICS:
        raise ValueError(f"TrainConfig.metric={tc.metric!r} is not a segmenter metric; use one of {METRICS} "
                         "(e.g. default_train_config())")
    data = data_config or SegmentDataConfig()
    train_docs = documents_from_sentences(train_sentences)
    dev_docs = documents_from_sentences(dev_sentences)
    if not train_docs:
        raise ValueError("train_segmenter: the training data has no sentences")
    if not dev_docs:
        raise ValueError("train_segmenter: the dev data has no sentences (needed for model selection)")
    last = Path(out_dir) / "last.pt"
    source = None
    if resume and last.exists():
        extra = load_checkpoint(last)
        vocab = CharVocab.from_list(extra["task"]["vocab"])
        lexicon = MWTLexicon.from_checkpoint(extra["task"])
        cfg = SegmenterConfig.from_dict(extra["model_config"])
    elif tc.init_from:  # warm start: the source's architecture, characters, weights and expander
        source = Segmenter.load(tc.init_from, dtype="float32")
        vocab, cfg = source.vocab, source.model.config
        lexicon = learn_lexicon(train_docs, source.lexicon.rules)
        lexicon.expander = source.lexicon.expander
    else:
        vocab = CharVocab.build((render_document(d).text for d in train_docs), data.min_char_count)
        lexicon = learn_lexicon(train_docs, "en" if english_rules else "none")
        if spaces_in_tokens is None:
            tokens = [t for d in train_docs for s in d.sentences for t in s]
            spaced = sum(" " in t.form for t in tokens)
            spaces_in_tokens = spaced > 0 and spaced >= min(SPACES_AUTO_COUNT, SPACES_AUTO_SHARE * len(tokens))
        words = space_words_of(t.form for d in train_docs for s in d.sentences for t in s) if spaces_in_tokens else []
        cfg = dataclasses.replace(config or SegmenterConfig(), vocab_size=len(vocab),
                                  spaces_in_tokens=spaces_in_tokens, space_words=tuple(words))
        if expander is None:
            expander = len(lexicon) >= EXPANDER_MIN_TYPES
        if expander:
            lexicon.expander = _train_expander(train_docs, dev_docs, Path(out_dir) / "expander", expander_config,
                                               expander_train_config or expander_budget(tc), resume, overwrite)
    if lexicon.expander is not None and tc.max_minutes:
        tc = dataclasses.replace(tc, max_minutes=max(tc.max_minutes - expander_minutes(out_dir), 0.05))
    model = SegmenterModel(cfg)
    if source is not None:
        model.load_state_dict(source.model.state_dict(), strict=True)
    task = SegmentTask(train_docs, dev_docs, vocab, lexicon, cfg, data, seed=tc.seed)
    task_info = {"english_rules": lexicon.rules == "en", "spaces_in_tokens": cfg.spaces_in_tokens,
                 "expander": lexicon.expander is not None, "multiword_tokens": len(lexicon),
                 "data_config": data.to_dict(),
                 **({"init_from": tc.init_from} if source is not None else {})}
    data_info = {"train_documents": len(train_docs), "dev_documents": len(dev_docs),
                 "train_sentences": sum(len(d.sentences) for d in train_docs), "characters": len(vocab)}
    run_training(model, task, tc, out_dir, cfg.to_dict(), task_info=task_info, data_info=data_info, resume=resume,
                 overwrite=overwrite)
    return Segmenter.load(out_dir)


def _train_expander(train_docs, dev_docs, folder: Path, config: ExpanderConfig | None, tc: TrainConfig,
                    resume: bool, overwrite: bool = False):
    """Train (or, with ``resume``, continue or reuse; with ``overwrite``, replace) the expander in ``folder``."""
    from ...core.run_folder import run_finished, stored_train_config
    from .expander_train import load_expander, mwt_pairs, one_word_forms, train_expander

    if resume and (folder / "last.pt").exists():
        if run_finished(folder):
            return load_expander(folder, "cpu", "float32")
        tc = stored_train_config(folder, device=tc.device, progress=tc.progress)  # the same budget
    _log.info(f"training the multiword-token expander in {folder}")
    return train_expander(mwt_pairs(train_docs), mwt_pairs(dev_docs), folder, config, tc, resume,
                          one_word_forms(train_docs), overwrite=overwrite)


def expander_minutes(out_dir: str | os.PathLike) -> float:
    """Training minutes of the expander of segmenter folder ``out_dir`` (0 without one)."""
    from ...core.run_folder import run_state

    return run_state(Path(out_dir) / "expander").minutes


def _segmenter_checkpoints(out_dir: str | os.PathLike) -> list[tuple[Path, dict]]:
    """``(file, checkpoint)`` of the segmenter checkpoints of a training folder (``best.pt``, ``last.pt``, step
    snapshots that carry the task)."""
    from ...core.checkpoint import load_checkpoint, snapshots
    from .segmenter import CHECKPOINT_KIND

    files = [Path(out_dir) / n for n in ("best.pt", "last.pt")] + [p for _, p in snapshots(out_dir)]
    found = [(f, load_checkpoint(f)) for f in files if f.is_file()]
    return [(f, ck) for f, ck in found if (ck.get("task") or {}).get("kind") == CHECKPOINT_KIND]


def lacks_expander(out_dir: str | os.PathLike) -> bool:
    """Whether the segmenter run in ``out_dir`` has a checkpoint without the learned expander."""
    return any(not ck["task"].get("mwt_expander") for _, ck in _segmenter_checkpoints(out_dir))


@holds_training_folder
def add_expander(out_dir: str | os.PathLike, train_sentences: Iterable, dev_sentences: Iterable,
                 train_config: TrainConfig | None = None, config: ExpanderConfig | None = None):
    """Give the segmenter run in ``out_dir`` the learned expander it lacks (a run made without one: older code,
    ``expander=False``, a budget too short for it, or stopped before it): only the expander trains, in
    ``out_dir/expander`` (an interrupted expander run there is continued, a finished one reused), with
    ``train_config`` (default: :func:`expander_budget` of the run's stored configuration); then it is written
    into each segmenter checkpoint of the folder (:func:`lacks_expander` is then False). The character model,
    its step and its budget are kept. Returns the :class:`g2gt.ud.tokenize.expander.MWTExpander`."""
    from ...core.checkpoint import save_atomic
    from ...core.run_folder import stored_train_config
    from .data import documents_from_sentences

    found = _segmenter_checkpoints(out_dir)
    if not found:
        raise FileNotFoundError(f"{out_dir}: no segmenter checkpoint (train one with 'g2gt train segmenter')")
    tc = train_config or expander_budget(stored_train_config(out_dir) or default_train_config())
    expander = _train_expander(documents_from_sentences(train_sentences), documents_from_sentences(dev_sentences),
                               Path(out_dir) / "expander", config, tc, resume=True)
    entry = expander.to_dict()
    for file, ck in found:
        ck["task"] = {**ck["task"], "mwt_expander": entry}
        save_atomic(ck, file)
    return expander


def learn_lexicon(train_docs, rules: str = "en") -> MWTLexicon:
    """The multiword-token lexicon of training documents (:func:`g2gt.ud.tokenize.data.documents_from_sentences`):
    every token, one-word tokens included, so that :attr:`MWTLexicon.always` sees how often each surface was
    split. ``rules``: :data:`g2gt.ud.tokenize.mwt.RULES`."""
    lex = MWTLexicon.learn((t.form, t.words) for d in train_docs for s in d.sentences for t in s)
    lex.rules = rules
    return lex


def relearn_lexicon(checkpoint: str | os.PathLike, train_sentences: Iterable,
                    out: str | os.PathLike) -> MWTLexicon:
    """Write segmenter ``checkpoint`` (a file or a training folder) to file ``out`` with its multiword-token
    lexicon learned anew from ``train_sentences`` (:func:`learn_lexicon`); the weights and every other entry
    are kept. For segmenters saved before the lexicon had its ``always`` set (checkpoint key ``mwt_always``) or
    its ``final_tokens`` (``mwt_final_tokens``)."""
    from ...core.checkpoint import expect_kind, load_checkpoint, resolve_checkpoint, save_atomic
    from .data import documents_from_sentences
    from .segmenter import CHECKPOINT_KIND

    file = resolve_checkpoint(checkpoint)
    ck = load_checkpoint(file)
    expect_kind(ck, file, CHECKPOINT_KIND)
    extra = ck.get("task") or {}
    lexicon = learn_lexicon(documents_from_sentences(train_sentences))
    ck["task"] = {**extra, "mwt": lexicon.to_dict(), "mwt_always": sorted(lexicon.always),
                  "mwt_final_tokens": sorted(lexicon.final_tokens)}
    save_atomic(ck, out)
    return lexicon


if __name__ == "__main__":  # the old entry point
    sys.exit("python -m g2gt.ud.tokenize.train is now 'g2gt train segmenter' (same options; --relearn-lexicon too)")
