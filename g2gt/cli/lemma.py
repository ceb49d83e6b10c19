"""``g2gt train lemmatizer``: the character-level lemmatizer a parser asks where its edit scripts fall short.

Model options come from :class:`g2gt.ud.lemma.LemmaConfig`, optimisation options from
:class:`g2gt.core.config.TrainConfig` with the defaults of :func:`g2gt.ud.lemma.train.lemma_train_config`.
"""

from __future__ import annotations

import argparse
import sys
import time

from .common import (
    UsageError, check_folder_path, check_input_path, check_output_path, field_default, option_values,
)
from .training import ENCODER_HELP, add_training_groups, start_run

MODEL_OPTIONS = ("d_model", "num_layers", "num_heads", "ffn_dim", "dropout", "max_distance", "label_smoothing",
                 "tag_dropout", "use_when")
MODEL_HELP = ENCODER_HELP | {
    "max_distance": "clip distance of the character chain labels",
    "label_smoothing": "label smoothing of the loss",
    "tag_dropout": "probability of hiding each UPOS / feature symbol of a training example",
    "use_when": "when the parser asks the lemmatizer about a word its lexicon does not know: rare (its "
                "edit-script head has no frequent rule that applies), unseen (that, or the form is not in "
                "--train) or not-in-lexicon (always)",
}
TRAIN_OPTIONS = ("lr", "warmup", "cooldown", "grad_clip", "max_minutes", "max_steps", "epochs", "eval_every",
                 "average_last", "seed")


def register(subparsers) -> None:  # no command of its own outside 'g2gt train'
    return None


def register_train(subparsers) -> None:
    subparsers.add_parser("lemmatizer", help="train a character-level lemmatizer (form, UPOS, features -> lemma) "
                          "that a parser uses where its edit scripts fall short", configure=_configure_train)


def _configure_train(p: argparse.ArgumentParser) -> None:
    from ..ud.lemma.config import LemmaConfig, lemma_train_config

    p.description = (
        "Train a character-level lemmatizer: a small encoder-decoder that reads a word's characters, its UPOS and "
        "its features and writes its lemma character by character. A parser whose model folder holds it as "
        "lemmatizer.pt (beside parser.pt) asks it about words its lemma lexicon does not know whose form "
        "--train does not have or for which its edit-script classifier finds no frequent rule that applies "
        "(--use-when), giving it the tags it predicted. Trained on the different (form, UPOS, FEATS, LEMMA) of "
        "--train; best.pt is chosen by exact-match accuracy on the --dev words whose form training does not "
        "have. Writes OUT/best.pt, "
        "last.pt, log.jsonl and config.json; --export writes the model folder's stage file.")
    p.epilog = (
        "examples:\n"
        "  g2gt train lemmatizer --train tr_imst-ud-train.conllu.gz --dev tr_imst-ud-dev.conllu.gz "
        "--out runs/tr_lemma --max-minutes 25 --threads 1\n"
        "  g2gt train lemmatizer ... --out runs/tr_lemma --resume      # continue an interrupted run\n"
        "  g2gt train lemmatizer ... --export models/tr/lemmatizer.pt  # then the parser of that folder uses it")
    data = p.add_argument_group("data")
    data.add_argument("--train", required=True, nargs="+", metavar="FILE",
                      help="training CoNLL-U with LEMMA (plain or .gz; several files are read together)")
    data.add_argument("--dev", nargs="+", metavar="FILE", help="development CoNLL-U with LEMMA, for model selection")
    data.add_argument("--out", required=True, metavar="DIR", help="training folder (checkpoints, logs)")
    data.add_argument("--resume", action="store_true", help="continue from OUT/last.pt (same budget, same settings)")
    data.add_argument("--export", metavar="FILE", help="also write the trained lemmatizer (best.pt, float16) to "
                      "FILE, e.g. MODEL_FOLDER/lemmatizer.pt")
    add_training_groups(p, LemmaConfig, MODEL_OPTIONS, lemma_train_config, (), TRAIN_OPTIONS,
                        model_help=MODEL_HELP, task_help={}, batch_tokens=field_default(LemmaConfig, "batch_tokens"),
                        recipe=lemma_train_config,
                        model_flags={"num_layers": "--layers", "num_heads": "--heads"})
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    from .common import apply_runtime

    for f in args.train:
        check_input_path(f, "--train")
    for f in args.dev or ():
        check_input_path(f, "--dev")
    check_folder_path(args.out, "--out")
    if args.export is not None:
        check_output_path(args.export, "--export")
    from ..ud.lemma.config import USE_WHEN

    if args.use_when not in USE_WHEN:
        raise UsageError(f"--use-when {args.use_when}: expected one of {', '.join(USE_WHEN)}")
    device = apply_runtime(args)
    from ..ud.io.conllu import read_conllu
    from ..ud.lemma.config import LemmaConfig, lemma_train_config
    from ..ud.lemma.train import lemma_examples, train_lemmatizer

    t0 = time.time()
    train = lemma_examples([s for f in args.train for s in read_conllu(f)])
    dev = lemma_examples([s for f in args.dev or () for s in read_conllu(f)])
    print(f"train: {' '.join(args.train)} ({len(train)} different words with lemmas), dev: "
          f"{' '.join(args.dev or ['-'])} ({len(dev)})", file=sys.stderr)
    tc = start_run(args, TRAIN_OPTIONS, device, "accuracy", recipe=lemma_train_config)
    config = LemmaConfig(**option_values(args, MODEL_OPTIONS), batch_tokens=args.batch_tokens)
    lem = train_lemmatizer(train, dev, args.out, config, tc, resume=args.resume, overwrite=args.overwrite)
    if args.export:
        lem.save(args.export)
    best = lem.record.get("best")
    print(f"done in {(time.time() - t0) / 60:.1f} min; {lem!r}; best dev accuracy on unseen forms "
          f"{best if best is None else round(best, 2)}; model in {args.out}"
          + (f", stage file {args.export}" if args.export else ""), file=sys.stderr)
    return 0
