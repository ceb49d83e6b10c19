"""From a UD treebank to an installable model: ``g2gt train segmenter``, ``g2gt train pipeline`` and
``g2gt package``.

Segmenter options come from :class:`g2gt.ud.tokenize.SegmenterConfig` / :class:`SegmentDataConfig`,
optimisation options from :class:`g2gt.core.config.TrainConfig` with the recipe's defaults
(:func:`g2gt.ud.tokenize.train.default_train_config`), the language-dependent settings from
:func:`g2gt.ud.tokenize.train_segmenter`'s keyword arguments (auto by default); the option groups and the run's
start (TrainConfig, recorded command) are :mod:`g2gt.cli.training`'s, as for the parser. The pipeline recipe is
:mod:`g2gt.ud.recipe.train`; packages are written by :mod:`g2gt.core.package`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..data import EWT_DEV, EWT_TRAIN
from .common import (
    UsageError, add_common_options, apply_runtime, check_folder_path, check_input_path,
    command_line, data_file_arg, field_default, option_values, positive_int, progress_enabled, shell_words,
)
from .training import add_overwrite_option, add_training_groups, config_options, start_run

SEG_MODEL_SKIP = ("vocab_size", "spaces_in_tokens", "space_words")
SEG_TRAIN_OPTIONS = ("lr", "warmup", "warmup_steps", "cooldown", "grad_clip", "max_minutes", "max_steps", "epochs",
                     "eval_every", "average_last", "seed", "amp")
SEG_TASK_OPTIONS = ("english_rules", "spaces_in_tokens", "expander")
SEG_TASK_HELP = {
    "english_rules": "English clitic rules for unseen multiword tokens (default: on when the --train file is "
                     "named en_*)",
    "spaces_in_tokens": "a single space may be inside a token, as in Vietnamese words (default: on when at "
                        "least 1% of the training tokens hold a space)",
    "expander": "train the learned multiword-token expander (default: when the training data has at least 50 "
                "different multiword tokens)",
}


def register(subparsers) -> None:
    subparsers.add_parser("package", help="make an installable Python package (pip install DIR) of a model folder",
                          configure=_configure_package)


def register_train(subparsers) -> None:
    subparsers.add_parser("segmenter", help="train the learned tokenizer / sentence splitter / multiword-token "
                          "expander", configure=_configure_segmenter)
    subparsers.add_parser("pipeline", help="train every stage a UD treebank supports into one model folder",
                          configure=_configure_pipeline)


def _pipeline_command(args: argparse.Namespace) -> str:
    """The ``g2gt train pipeline`` command of ``args`` (for the model card), with the options that were set."""
    from ..ud.recipe.train import STAGE_SHARES

    words = ["g2gt", "train", "pipeline"]
    for flag, value in (("--treebank", args.treebank), ("--train", args.train), ("--dev", args.dev),
                        ("--out", args.out), ("--name", args.name), ("--lang", args.lang),
                        ("--max-minutes", args.max_minutes),
                        *((f"--{s}-minutes", getattr(args, f"{s}_minutes")) for s in STAGE_SHARES),
                        ("--max-steps", args.max_steps), ("--threads", args.threads or None),
                        ("--batch-tokens", args.batch_tokens),
                        ("--device", None if args.device == "auto" else args.device)):
        if value is not None:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    for stage, model in args.source or []:
        words += ["--source", f"{stage}={model}"]
    words += [flag for flag, on in (("--resume", args.resume), ("--overwrite", args.overwrite),
                                    ("--no-enhancer", not args.enhancer),
                                    ("--no-coref", not args.coref)) if on]
    return shell_words(words)


# ---------------------------------------------------------------------------- train segmenter
def _configure_segmenter(p: argparse.ArgumentParser) -> None:
    from ..ud.tokenize import SegmentDataConfig, SegmenterConfig, train_segmenter
    from ..ud.tokenize.train import EXPANDER_STEPS, default_train_config

    p.description = (
        "Train the learned tokenizer, sentence splitter and multiword-token expander on a CoNLL-U treebank "
        "(its # newdoc / # newpar structure and SpaceAfter give the raw text back). A character chain-graph "
        "tagger marks token, sentence and multiword-token ends; a small character encoder-decoder expands "
        "multiword tokens not seen in training (trained first, in OUT/expander, when the treebank has enough "
        "of them). Writes OUT/best.pt, last.pt and log.jsonl.")
    p.epilog = (
        "examples:\n"
        "  g2gt train segmenter --train fr_sequoia-ud-train.conllu.gz --dev fr_sequoia-ud-dev.conllu.gz \\\n"
        "      --out runs/fr_sequoia/segmenter --max-minutes 10 --threads 1\n"
        "  g2gt train segmenter --out runs/segmenter --resume        # continue an interrupted run\n"
        "  g2gt train segmenter --init-from en_combined --out runs/segmenter2 --max-minutes 12 --lr 5e-4\n"
        "  g2gt train segmenter --train train.conllu --relearn-lexicon runs/segmenter --out relexed.pt\n"
        "  g2gt train segmenter --train tr_imst-ud-train.conllu.gz --relearn-lexicon tr_imst --out runs/tr/segmenter2\n"
        "Defaults for --train / --dev: $G2GT_DATA/" + EWT_TRAIN + " and $G2GT_DATA/" + EWT_DEV + ".")
    data = p.add_argument_group("data")
    data.add_argument("--train", metavar="FILE", help="training CoNLL-U (plain or .gz; default: UD EWT train)")
    data.add_argument("--dev", metavar="FILE", help="development CoNLL-U for model selection (default: UD EWT dev)")
    data.add_argument("--out", required=True, metavar="DIR", help="training folder (checkpoints, logs); with "
                      "--relearn-lexicon the checkpoint file (*.pt) or the folder to write (OUT/best.pt, and "
                      "OUT/commands.jsonl: the commands that made the source, then this one)")
    data.add_argument("--resume", action="store_true", help="continue from OUT/last.pt (same budget, same settings)")
    data.add_argument("--relearn-lexicon", metavar="CHECKPOINT", default=None,
                      help="do not train: copy this segmenter (a checkpoint, a training or model folder, a model's "
                           "name) to --out with its multiword-token lexicon learned anew from --train, weights "
                           "untouched")
    data.add_argument("--init-from", metavar="MODEL", default=None,
                      help="warm start: continue this segmenter (a model's name, a model or training folder, a "
                           "checkpoint) with its architecture, characters and expander instead of random weights")
    def expander_steps(language) -> None:
        language.add_argument(
            "--expander-steps", type=int, default=EXPANDER_STEPS, metavar="N",
            help=f"the expander's updates, in at most half of --max-minutes: the minutes they take come out of it "
                 f"(default: {EXPANDER_STEPS})")

    add_training_groups(
        p, SegmenterConfig, _seg_model_options(), train_segmenter, SEG_TASK_OPTIONS, SEG_TRAIN_OPTIONS,
        task_help=SEG_TASK_HELP, batch_tokens=field_default(SegmentDataConfig, "batch_tokens"),
        more_configs={"training text": SegmentDataConfig},
        task_title="language", task_defaults={"english_rules": None}, more_task_options=expander_steps,
        recipe=default_train_config)
    p.set_defaults(func=run_segmenter)


def _relearn(args: argparse.Namespace, train) -> int:
    """``--relearn-lexicon``: into a checkpoint file, or a folder that also records the commands that made it."""
    from ..ud.recipe.export import source_commands
    from ..core.run_folder import record_command
    from ..ud.stage import stage_checkpoint
    from ..ud.tokenize.train import relearn_lexicon

    source = stage_checkpoint(args.relearn_lexicon, "segmenter")
    out = Path(args.out)
    if out.suffix != ".pt":
        from ..core.run import check_run_folder

        check_folder_path(args.out, "--out")
        check_run_folder(out, overwrite=args.overwrite)  # its best.pt would replace a run's
        out.mkdir(parents=True, exist_ok=True)
        commands = [*source_commands(args.relearn_lexicon, "segmenter"), command_line(args)]
        for k, command in enumerate(commands):
            record_command(out, command, resume=k > 0)
        out = out / "best.pt"
    lex = relearn_lexicon(source, train, out)
    print(f"{out}: {len(lex)} multiword-token splits, {len(lex.always)} always split", file=sys.stderr)
    return 0


def _seg_model_options() -> list[str]:
    """The :class:`SegmenterConfig` fields that are options (the others are set from the training data)."""
    from ..ud.tokenize import SegmenterConfig

    return [f for f in SegmenterConfig.__dataclass_fields__ if f not in SEG_MODEL_SKIP]


def is_english_treebank(path: str | Path) -> bool:
    """Whether a UD file name says English (``en_ewt-ud-train.conllu``)."""
    return Path(path).name.lower().startswith("en_")


def _segment_data_config(args: argparse.Namespace):
    """The :class:`SegmentDataConfig` of the options; ``--batch-tokens`` is characters per batch."""
    from ..ud.tokenize import SegmentDataConfig

    return SegmentDataConfig(**option_values(args, config_options(SegmentDataConfig)), batch_tokens=args.batch_tokens)


def run_segmenter(args: argparse.Namespace) -> int:
    from ..ud.io.conllu import read_conllu
    from ..ud.tokenize import SegmenterConfig, train_segmenter
    from ..ud.tokenize.train import default_train_config, expander_budget

    train_path = data_file_arg(args.train, EWT_TRAIN, "--train")
    if args.relearn_lexicon is not None:
        return _relearn(args, read_conllu(train_path))
    dev_path = data_file_arg(args.dev, EWT_DEV, "--dev")
    check_folder_path(args.out, "--out")
    device = apply_runtime(args)
    english = args.english_rules if args.english_rules is not None else is_english_treebank(train_path)
    t0 = time.time()
    tc = start_run(args, SEG_TRAIN_OPTIONS, device, "score", recipe=default_train_config, init_from=args.init_from)
    seg = train_segmenter(read_conllu(train_path), read_conllu(dev_path), args.out,
                          SegmenterConfig(**option_values(args, _seg_model_options())), tc, args.resume,
                          _segment_data_config(args),
                          english_rules=english, spaces_in_tokens=args.spaces_in_tokens, expander=args.expander,
                          expander_train_config=expander_budget(tc, args.expander_steps), overwrite=args.overwrite)
    print(f"done in {(time.time() - t0) / 60:.1f} min: {seg}; best.pt in {args.out}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- train pipeline
def _stage_source(text: str) -> tuple[str, str]:
    """``STAGE=MODEL`` of ``--source``, the stage checked."""
    from ..ud.recipe.train import STAGE_SHARES

    stage, sep, model = text.partition("=")
    if not sep or stage not in STAGE_SHARES or not model:
        raise argparse.ArgumentTypeError(f"expected STAGE=MODEL with STAGE one of {', '.join(STAGE_SHARES)} and "
                                         f"MODEL a model's name or folder, got {text!r}")
    return stage, model


def _configure_pipeline(p: argparse.ArgumentParser) -> None:
    from ..ud.recipe.train import DEFAULT_MINUTES, STAGE_SHARES

    shares = ", ".join(f"{k} {v:.0%}" for k, v in STAGE_SHARES.items())
    p.description = (
        "Train every stage a UD treebank supports and write one model folder: the tokenizer, sentence splitter "
        "and multiword-token expander (g2gt train segmenter), the tagger (UPOS / XPOS / UFeats, the columns the "
        "treebank fills), lemmatizer and parser (g2gt train parser), and the enhanced-UD model when the "
        "treebank has DEPS (g2gt train enhancer), and coreference when its training and dev files carry "
        "CorefUD Entity= annotations in MISC (g2gt train coref; e.g. UD_English-GUM). Each stage trains in its "
        "own folder OUT/<stage>; --resume continues an interrupted stage with its own stored budget and reuses "
        "finished ones (also runs made by those commands); a finished segmenter without the expander the "
        f"treebank needs gets only the expander trained. The budget is split in the proportions {shares} among "
        "the stages the treebank has, unless a stage gets its own minutes. Then OUT/model is written and scored "
        "on dev with the official CoNLL 2018 scorer, from raw text and from the gold tokenisation (coreference: "
        "CoNLL F1 with head match, as the CRAC shared tasks); model.json holds the scores, the commands (each "
        "stage's own, from OUT/<stage>/commands.jsonl, and this one), the wall time and the CPU.")
    p.epilog = (
        "examples:\n"
        "  g2gt train pipeline --treebank UD_French-Sequoia --out runs/fr_sequoia --max-minutes 60 --threads 1\n"
        "  g2gt train pipeline --train tr-train.conllu --dev tr-dev.conllu --name tr_imst --out runs/tr\n"
        "  g2gt train pipeline --treebank UD_French-Sequoia --out runs/fr_sequoia --resume\n"
        "  g2gt train pipeline --treebank UD_English-GUM --out runs/en_gum --max-minutes 120 --threads 1   # + coref\n"
        "  g2gt train parser --init-from fr_sequoia --train UD_French-Sequoia/fr_sequoia-ud-train.conllu \\\n"
        "      --dev UD_French-Sequoia/fr_sequoia-ud-dev.conllu --out runs/fr2/parser   # a longer parser, then:\n"
        "  g2gt train pipeline --treebank UD_French-Sequoia --out runs/fr2 --resume --source segmenter=fr_sequoia\n"
        "  g2gt package runs/fr_sequoia/model --name fr_sequoia -o models/fr_sequoia\n"
        "--treebank DIR: a folder as UD releases ship it, with *-ud-train.conllu[.gz] and *-ud-dev.conllu[.gz].")
    data = p.add_argument_group("data")
    data.add_argument("--treebank", metavar="DIR", help="a UD treebank folder (*-ud-train / *-ud-dev .conllu[.gz])")
    data.add_argument("--train", metavar="FILE", help="training CoNLL-U (instead of --treebank)")
    data.add_argument("--dev", metavar="FILE", help="development CoNLL-U (instead of --treebank)")
    data.add_argument("--out", required=True, metavar="DIR", help="the run's folder: OUT/<stage> training "
                      "folders, OUT/model the model folder, OUT/eval the dev predictions")
    data.add_argument("--name", help="model name (default: from the file names, e.g. fr_sequoia)")
    data.add_argument("--lang", help="language code (default: from the file names, e.g. fr)")
    data.add_argument("--resume", action="store_true", help="continue unfinished stages, reuse finished ones")
    add_overwrite_option(data)
    data.add_argument("--source", action="append", type=_stage_source, metavar="STAGE=MODEL",
                      help="take a stage (segmenter, parser, enhancer, coref) as it is from a trained model (a model's "
                      "name, a model or training folder) instead of training it, e.g. --source "
                      "segmenter=fr_sequoia to retrain only the parser; repeatable")
    budget = p.add_argument_group("budget")
    budget.add_argument("--max-minutes", type=float, default=DEFAULT_MINUTES, metavar="X",
                        help=f"training minutes of all stages together (default: {DEFAULT_MINUTES:g})")
    for stage in STAGE_SHARES:
        budget.add_argument(f"--{stage}-minutes", type=float, default=None, metavar="X",
                            help=f"minutes of the {stage} stage (default: its share of --max-minutes)")
    budget.add_argument("--max-steps", type=positive_int, default=None, metavar="N",
                        help="at most N updates per stage and for the expander (quick trials and tests)")
    budget.add_argument("--no-enhancer", dest="enhancer", action="store_false",
                        help="no enhanced-UD stage even when the treebank has DEPS")
    budget.add_argument("--no-coref", dest="coref", action="store_false",
                        help="no coreference stage even when the treebank has Entity= annotations")
    budget.add_argument("--no-eval", dest="evaluate", action="store_false", help="skip the dev evaluation")
    add_common_options(p, batch_tokens=None)
    p.set_defaults(func=run_pipeline)


def run_pipeline(args: argparse.Namespace) -> int:
    from ..ud.recipe.train import STAGE_SHARES, find_treebank, train_pipeline

    if args.treebank and (args.train or args.dev):
        raise UsageError("give --treebank DIR or --train FILE --dev FILE, not both")
    if args.treebank:
        if not Path(args.treebank).is_dir():
            raise UsageError(f"--treebank {args.treebank}: no such folder")
        files = find_treebank(args.treebank)
    elif args.train and args.dev:
        check_input_path(args.train, "--train")
        check_input_path(args.dev, "--dev")
        files = find_treebank(None, args.train, args.dev)
    else:
        raise UsageError("give --treebank DIR (a UD treebank folder) or both --train FILE and --dev FILE")
    check_folder_path(args.out, "--out")
    if args.max_minutes <= 0:
        raise UsageError(f"--max-minutes must be > 0, got {args.max_minutes:g}")
    device = apply_runtime(args)
    minutes = {s: getattr(args, f"{s}_minutes") for s in STAGE_SHARES if getattr(args, f"{s}_minutes") is not None}
    card = train_pipeline(files, args.out, name=args.name, lang=args.lang, max_minutes=args.max_minutes,
                          stage_minutes=minutes, resume=args.resume, overwrite=args.overwrite, device=device, progress=progress_enabled(args),
                          batch_tokens=args.batch_tokens, enhancer=args.enhancer, coref=args.coref,
                          evaluate=args.evaluate,
                          command=_pipeline_command(args), threads=args.threads, max_steps=args.max_steps,
                          sources=dict(args.source or []))
    for kind, row in (card.get("dev_scores_official_scorer") or {}).items():  # the card's headline numbers
        shown = ", ".join(f"{k} {row[k]:.2f}" for k in ("Tokens", "Words", "UPOS", "Lemmas", "UAS", "LAS", "ELAS")
                          if k in row)
        print(f"dev scores ({kind}, official scorer): {shown}", file=sys.stderr)
    for kind, row in (card.get("coref_dev_scores") or {}).items():
        print(f"dev coreference ({kind}, head match, no singletons): CoNLL F1 {row['CoNLL']:.2f} (MUC "
              f"{row['MUC']:.2f}, B3 {row['B3']:.2f}, CEAF-e {row['CEAF-e']:.2f}); mentions F1 "
              f"{row['mention F1 (head)']:.2f}", file=sys.stderr)
    print(f"model folder: {Path(args.out) / 'model'} ({card.get('name')}); card: model.json", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- package
def _configure_package(p: argparse.ArgumentParser) -> None:
    from ..core.package import MAX_PACKAGE_MB

    p.description = (
        "Write an installable Python package of a model folder (as spaCy ships its models): DIR/pyproject.toml "
        "and the package g2gt_model_NAME with the model folder as package data, registered under the entry-point "
        "group g2gt.models. 'pip install DIR' then works offline (the build backend is a small stdlib-only file "
        "inside DIR), g2gt.load(NAME) finds the model and 'g2gt models' lists it. Refuses models over "
        f"{MAX_PACKAGE_MB:g} MB.")
    p.epilog = ("examples:\n"
                "  g2gt package runs/fr_sequoia/model --name fr_sequoia -o models/fr_sequoia\n"
                "  pip install models/fr_sequoia && g2gt parse --model fr_sequoia --text 'Il est parti.'")
    p.add_argument("model", metavar="MODEL_DIR", help="a model folder (parser.pt, segmenter.pt ..., model.json)")
    p.add_argument("--name", required=True, help="model name: lowercase letters, digits and _ (e.g. fr_sequoia)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="the package folder to write (e.g. models/NAME)")
    p.add_argument("--version", dest="pkg_version", default=None, help="package version (default: the library's)")
    p.add_argument("--max-mb", type=float, default=MAX_PACKAGE_MB, help=f"size limit (default: {MAX_PACKAGE_MB:g})")
    add_common_options(p, uses=("debug",))
    p.set_defaults(func=run_package)


def run_package(args: argparse.Namespace) -> int:
    from ..core.registry import is_model_folder
    from ..ud.recipe.export import package_pipeline

    if not is_model_folder(args.model):
        raise UsageError(f"MODEL_DIR {args.model}: not a model folder (expected parser.pt and model.json, as "
                         "'g2gt train pipeline' writes in OUT/model)")
    check_folder_path(args.out, "-o")
    out = package_pipeline(args.model, args.name, args.out, version=args.pkg_version, max_mb=args.max_mb)
    print(f"wrote {out}: pip install {out}", file=sys.stderr)
    return 0
