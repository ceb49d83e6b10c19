"""Train a segmenter: ``train_segmenter(...)`` and ``python -m g2gt.ud.tokenize.train``.

The recipe (defaults of :class:`SegmenterConfig`, :class:`SegmentDataConfig` and
:func:`default_train_config`): a 3-layer d_model-64, 2-head character chain-graph encoder on windows
of 96 non-space characters, 64 windows per batch, AdamW at lr 2e-3 with 5 % warmup and a linear cooldown over the final
20 % of the budget, an evaluation on EWT dev every 250 updates keeping the best ``score`` (tokens F1 +
sentences F1 + words F1). Example (one CPU thread, 20 minutes)::

    python -m g2gt.ud.tokenize.train --train $G2GT_DATA/ud-en-ewt/en_ewt-ud-train.conllu \\
        --dev $G2GT_DATA/ud-en-ewt/en_ewt-ud-dev.conllu --out runs/segmenter --max-minutes 20 --threads 1

``--resume`` continues an interrupted run in the same folder (same budget).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Iterable, Sequence

from ...core.checkpoint import holds_training_folder
from ...core.config import TrainConfig
from .config import SegmentDataConfig, SegmenterConfig
from .mwt import MWTLexicon

__all__ = ["train_segmenter", "default_train_config", "learn_lexicon", "relearn_lexicon", "main"]


def default_train_config(**overrides) -> TrainConfig:
    """The :class:`g2gt.core.train.TrainConfig` of the segmenter recipe (``overrides`` replace fields)."""
    base = dict(lr=2e-3, warmup=0.05, schedule="inverse_sqrt", cooldown=0.2, weight_decay=0.01, grad_clip=1.0,
                eval_every=250, log_every=20, metric="score", metric_mode="max")
    base.update(overrides)
    return TrainConfig(**base)


@holds_training_folder
def train_segmenter(train_sentences: Iterable, dev_sentences: Iterable, out_dir: str | os.PathLike,
                    config: SegmenterConfig | None = None, train_config: TrainConfig | None = None,
                    resume: bool = False, data_config: SegmentDataConfig | None = None):
    """Train on CoNLL-U sentences (:class:`g2gt.ud.io.Sentence`, e.g. from :func:`g2gt.ud.io.read_conllu`) with
    their ``# newdoc`` / ``# newpar`` structure; checkpoints and ``log.jsonl`` go to ``out_dir``.

    The character vocabulary and the multiword-token lexicon come from the training sentences;
    ``config.vocab_size`` is set from them. ``train_config`` defaults to :func:`default_train_config`; its
    ``metric`` must be one of :data:`g2gt.ud.tokenize.task.METRICS`. Returns the
    :class:`g2gt.ud.tokenize.Segmenter` of ``best.pt``.
    """
    from ...core.train import Trainer
    from .chars import CharVocab
    from .data import documents_from_sentences, render_document
    from .model import SegmenterModel
    from .segmenter import Segmenter
    from .task import METRICS, SegmentTask

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
    vocab = CharVocab.build((render_document(d).text for d in train_docs), data.min_char_count)
    lexicon = learn_lexicon(train_docs)
    cfg = dataclasses.replace(config or SegmenterConfig(), vocab_size=len(vocab))
    model = SegmenterModel(cfg)
    task = SegmentTask(train_docs, dev_docs, vocab, lexicon, cfg, data, seed=tc.seed)
    Trainer(model, task, tc, out_dir).fit(resume=resume)
    return Segmenter.load(out_dir)


def learn_lexicon(train_docs) -> MWTLexicon:
    """The multiword-token lexicon of training documents (:func:`g2gt.ud.tokenize.data.documents_from_sentences`):
    every token, one-word tokens included, so that :attr:`MWTLexicon.always` sees how often each surface was
    split."""
    return MWTLexicon.learn((t.form, t.words) for d in train_docs for s in d.sentences for t in s)


def relearn_lexicon(checkpoint: str | os.PathLike, train_sentences: Iterable,
                    out: str | os.PathLike) -> MWTLexicon:
    """Write segmenter ``checkpoint`` (a file or a training folder) to file ``out`` with its multiword-token
    lexicon learned anew from ``train_sentences`` (:func:`learn_lexicon`); the weights and every other entry
    are kept. For segmenters saved before the lexicon had its ``always`` set (checkpoint key ``mwt_always``)."""
    from ...core.checkpoint import load_checkpoint, resolve_checkpoint, save_atomic
    from .data import documents_from_sentences
    from .segmenter import CHECKPOINT_KIND

    file = resolve_checkpoint(checkpoint)
    ck = load_checkpoint(file)
    extra = ck.get("task") or {}
    if extra.get("kind") != CHECKPOINT_KIND:
        raise ValueError(f"{file}: not a segmenter checkpoint (written by python -m g2gt.ud.tokenize.train)")
    lexicon = learn_lexicon(documents_from_sentences(train_sentences))
    ck["task"] = {**extra, "mwt": lexicon.to_dict(), "mwt_always": sorted(lexicon.always)}
    save_atomic(ck, out)
    return lexicon


# --------------------------------------------------------------------------- command line
def _add_fields(parser: argparse.ArgumentParser, cls, skip: Sequence[str] = ()) -> None:
    group = parser.add_argument_group(cls.__name__)
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        opt = "--" + f.name.replace("_", "-")
        helptext = f.metadata.get("help", "") + f" (default: {f.default})"
        if isinstance(f.default, bool):
            group.add_argument(opt, dest=f.name, action=argparse.BooleanOptionalAction, default=f.default,
                               help=helptext)
        else:
            group.add_argument(opt, dest=f.name, type=type(f.default), default=f.default, help=helptext)


def _pick(cls, ns: argparse.Namespace, **extra):
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in vars(ns).items() if k in names}, **extra)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m g2gt.ud.tokenize.train",
                                description="Train the learned tokenizer / sentence splitter / MWT splitter.")
    p.add_argument("--train", required=True, help="training CoNLL-U (with # newdoc / # newpar)")
    p.add_argument("--dev", help="dev CoNLL-U (model selection; required for training)")
    p.add_argument("--out", required=True, help="output folder (best.pt, last.pt, log.jsonl); with "
                   "--relearn-lexicon the checkpoint file to write")
    p.add_argument("--relearn-lexicon", metavar="CHECKPOINT", default=None,
                   help="do not train: copy this segmenter checkpoint (or training folder) to --out with its "
                        "multiword-token lexicon learned anew from --train (for segmenters saved before the "
                        "lexicon's always-split set existed)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0 = torch default)")
    p.add_argument("--max-minutes", type=float, default=20.0, help="training-time budget (default: 20)")
    p.add_argument("--max-steps", type=int, default=0, help="update budget (0 = none)")
    p.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (default: 2e-3)")
    p.add_argument("--eval-every", type=int, default=250, help="updates between dev evaluations (default: 250)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default: 1)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda ...")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_fields(p, SegmenterConfig, skip=("vocab_size",))
    _add_fields(p, SegmentDataConfig)
    ns = p.parse_args(argv)
    if ns.relearn_lexicon is None and ns.dev is None:
        p.error("--dev is required for training (model selection)")

    from ..io import read_conllu
    from ...core.train import set_threads

    if ns.relearn_lexicon is not None:
        lex = relearn_lexicon(ns.relearn_lexicon, read_conllu(ns.train), ns.out)
        print(f"{ns.out}: {len(lex)} multiword-token splits, {len(lex.always)} always split", file=sys.stderr)
        return 0

    set_threads(ns.threads)
    tc = default_train_config(max_minutes=ns.max_minutes, max_steps=ns.max_steps, lr=ns.lr,
                              eval_every=ns.eval_every, seed=ns.seed, device=ns.device, progress=not ns.no_progress)
    seg = train_segmenter(read_conllu(ns.train), read_conllu(ns.dev), ns.out, _pick(SegmenterConfig, ns),
                          tc, ns.resume, _pick(SegmentDataConfig, ns))
    print(f"{seg}; best.pt in {ns.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
