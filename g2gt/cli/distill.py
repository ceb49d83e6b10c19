"""``g2gt train distill``: a student parser trained on the soft distributions of one or more teachers.

Model options are ``g2gt train parser``'s (:class:`g2gt.ud.parse.ParserConfig` fields with the same CLI
defaults), optimisation options :class:`g2gt.core.config.TrainConfig`'s, and task options
:func:`g2gt.ud.parse.distill.train_distill`'s keyword arguments.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..data import EWT_DEV, EWT_TRAIN
from .common import apply_runtime, check_folder_path, check_input_path, data_file_arg, option_values
from .parsing import (
    MODEL_CLI_DEFAULTS, MODEL_HELP, MODEL_OPTIONS, TRAIN_BATCH_TOKENS, TRAIN_CLI_DEFAULTS, TRAIN_OPTIONS,
)
from .training import add_training_groups, start_run

TASK_OPTIONS = ("temperature", "gold_weight", "refine_train", "refine_steps", "teacher_refine_steps", "text_format",
                "text_max_words", "word_dropout")
TASK_HELP = {
    "temperature": "softmax temperature T of the teachers' targets and the student (the loss is scaled by T^2)",
    "gold_weight": "weight g of the gold loss on treebank sentences: (1 - g) * distillation + g * gold "
                   "(0 = teachers only)",
    "refine_train": "refinement training of the student: a second pass reading its own first-pass graph (self) "
                    "or none (always none with --no-graph-channel or --refine-steps 0)",
    "refine_steps": "the student's refinement iterations after iteration 0 in dev evaluation, saved as its default "
                    "in 'g2gt parse' (0 = one pass: faster)",
    "teacher_refine_steps": "refinement passes each teacher runs before giving its targets (-1 = each teacher's "
                            "own default)",
    "text_format": "how --text files are read: raw (running text, split by the first teacher's tokenizer), lines "
                   "(one sentence per line, tokenized by it), tokens (one sentence per line, tokens separated by "
                   "spaces), conllu (the words of a CoNLL-U file, annotation unused); auto: raw. Files named "
                   "*.conllu[.gz] are always read as CoNLL-U",
    "text_max_words": "leave out --text sentences longer than this (0 = keep all)",
    "word_dropout": "probability of replacing a word of the student's input by <unk> in training",
}
DATA_EPILOG = ("Defaults for --train / --dev: $G2GT_DATA/" + EWT_TRAIN + " and $G2GT_DATA/" + EWT_DEV +
               " ($G2GT_DATA: a data folder laid out as data/README.md of the g2gt repository says).")


def register(subparsers) -> None:
    """No top-level command (only ``g2gt train distill``)."""


def register_train(subparsers) -> None:
    subparsers.add_parser("distill", help="train a smaller or single parser on the soft outputs of trained parsers",
                          configure=_configure)


def _configure(p: argparse.ArgumentParser) -> None:
    from ..ud.parse import ParserConfig
    from ..ud.parse.distill import TEXT_FORMATS, train_distill

    p.description = (
        "Knowledge distillation: train a new parser (the student, of its own size) on the averaged soft\n"
        "distributions of one or more trained parsers (the teachers) over arcs, relations, UPOS, XPOS,\n"
        "features and lemma scripts, on the treebank and on unlabeled text. Use it to make a model\n"
        "smaller and faster, or to fold an ensemble of parsers into one. The student takes the first\n"
        "teacher's vocabularies; labels of other teachers are matched by name. The student is a normal\n"
        "parser: 'g2gt parse --model OUT', 'g2gt export-model --parser OUT'. Writes OUT/best.pt, last.pt,\n"
        "log.jsonl and config.json.")
    p.epilog = (
        "examples:\n"
        "  g2gt train distill --teacher en_combined --out runs/en_sm --d-model 192 --layers 3 \\\n"
        "      --refine-steps 0 --no-graph-channel --text $G2GT_DATA/multi30k/train.en.gz --text-format lines \\\n"
        "      --max-minutes 100 --threads 1\n"
        "  g2gt train distill --teacher en_combined --teacher runs/en_ewt2 --out runs/en_ens --max-minutes 100\n"
        "  g2gt train distill --out runs/en_sm --resume      # continue an interrupted run (same teachers)\n"
        "Teachers: shipped model names, model folders, parser training folders or checkpoints. The targets\n"
        "are computed per batch by the teachers (forward passes only), so a run costs their inference too.\n"
        + DATA_EPILOG)
    data = p.add_argument_group("data")
    data.add_argument("--teacher", metavar="MODEL", nargs="+", action="extend", default=[],
                      help="a trained parser to learn from, repeatable; the first gives the student's vocabularies "
                           "and tokenizes raw --text (required unless --resume)")
    data.add_argument("--train", metavar="FILE", nargs="+", action="extend",
                      help="treebank CoNLL-U file(s) (default: UD EWT train, see below)")
    data.add_argument("--dev", metavar="FILE", help="development CoNLL-U file: selects best.pt (default: UD EWT dev)")
    data.add_argument("--text", metavar="FILE", nargs="+", action="extend", default=[],
                      help="unlabeled text of the same language, repeatable (see --text-format)")
    data.add_argument("--out", required=True, metavar="DIR", help="training folder (checkpoints, logs)")
    data.add_argument("--resume", action="store_true",
                      help="continue from OUT/last.pt: the student, teachers, --text files and distillation settings "
                           "are read back from it (give the same budget)")
    data.add_argument("--init-from", metavar="MODEL", default=None,
                      help="start the student from a trained parser (e.g. an earlier student): its architecture, "
                           "vocabulary and weights (model options that differ from their defaults override its "
                           "architecture); optimizer and schedule start fresh")
    add_training_groups(p, ParserConfig, MODEL_OPTIONS, train_distill, TASK_OPTIONS, TRAIN_OPTIONS,
                        model_help=MODEL_HELP, task_help=TASK_HELP, batch_tokens=TRAIN_BATCH_TOKENS,
                        model_defaults=MODEL_CLI_DEFAULTS, train_defaults=TRAIN_CLI_DEFAULTS,
                        task_choices={"refine_train": ("self", "none"), "text_format": TEXT_FORMATS},
                        train_choices={"schedule": ("inverse_sqrt", "cosine", "constant")})
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..ud.io.conllu import read_conllu

    device = apply_runtime(args)
    from ..ud.parse import ParserConfig
    from ..ud.parse.distill import train_distill

    if not args.teacher and not args.resume:
        raise ValueError("name at least one teacher: --teacher MODEL (a shipped model name, a model or training "
                         "folder, a parser checkpoint)")
    check_folder_path(args.out, "--out")
    for path in args.text:
        check_input_path(path, "--text")
    train = []
    for path in args.train or [str(data_file_arg(None, EWT_TRAIN, "--train"))]:
        check_input_path(path, "--train")
        train += read_conllu(path, require_heads=True)
    dev = read_conllu(data_file_arg(args.dev, EWT_DEV, "--dev"), require_heads=True)
    print(f"train: {len(train)} sentences; dev: {len(dev)} sentences", file=sys.stderr)
    t0 = time.time()
    tc = start_run(args, TRAIN_OPTIONS, device, "las", init_from=args.init_from)
    _, history = train_distill(args.teacher, train, dev, args.out, text=args.text,
                               config=ParserConfig(**option_values(args, MODEL_OPTIONS)), train_config=tc,
                               batch_tokens=args.batch_tokens, resume=args.resume, overwrite=args.overwrite,
                               **option_values(args, TASK_OPTIONS))
    best = max(history, key=lambda h: h.get("las", 0), default={})
    print(f"done in {(time.time() - t0) / 60:.1f} min; best dev (internal, step {best.get('step', '?')}) "
          f"UAS {best.get('uas', 0):.2f} LAS {best.get('las', 0):.2f} UPOS {best.get('upos', 0):.2f}; "
          f"student in {Path(args.out)}", file=sys.stderr)
    return 0

