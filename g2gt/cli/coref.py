"""``g2gt train coref`` and ``g2gt coref``: coreference (CorefUD ``Entity=`` in MISC) from parsed documents.

Model options come from :class:`g2gt.ud.coref.CorefConfig`, optimisation options from
:class:`g2gt.core.config.TrainConfig` with the recipe's defaults (:func:`g2gt.ud.coref.train.coref_train_config`)
and task options from :func:`g2gt.ud.coref.train.train_coref`'s keyword arguments.
"""

from __future__ import annotations

import argparse
import sys
import time

from ..core.registry import DEFAULT_MODEL
from .common import (
    UsageError, add_common_options, apply_runtime, check_folder_path, check_input_path, check_output_path,
    data_file_arg, option_values,
)
from .training import ENCODER_HELP, add_training_groups, start_run

GUM_TRAIN = "ud/UD_English-GUM/en_gum-ud-train.conllu.gz"
GUM_DEV = "ud/UD_English-GUM/en_gum-ud-dev.conllu.gz"
MODEL_OPTIONS = ("d_model", "num_layers", "num_heads", "ffn_dim", "dropout", "max_distance", "max_sentences",
                 "char_filters", "span_dim", "antecedent_dim", "head_dropout")
MODEL_HELP = ENCODER_HELP | {
    "max_sentences": "clip distance of the sentence-distance labels",
    "span_dim": "width of the mention start / end scorers",
    "antecedent_dim": "width of the biaffine antecedent scorer",
    "head_dropout": "dropout before the mention / antecedent scorers",
}
TRAIN_OPTIONS = ("lr", "warmup", "warmup_steps", "cooldown", "grad_clip", "max_minutes", "max_steps", "epochs",
                 "eval_every", "seed", "amp")
TASK_OPTIONS = ("window", "min_freq", "word_dropout")
TASK_HELP = {
    "window": "most words of a training window (whole sentences; antecedents are searched inside it)",
    "min_freq": "minimum training frequency of a word embedding",
    "word_dropout": "probability of replacing a word by <unk> in training",
}
TRAIN_BATCH_TOKENS = 1024


def register(subparsers) -> None:
    subparsers.add_parser("coref", help="add coreference (CorefUD Entity= in MISC) to parsed CoNLL-U",
                          configure=_configure_coref)


def register_train(subparsers) -> None:
    subparsers.add_parser("coref", help="train a coreference model (trees of a document -> entities)",
                          configure=_configure_train)


# ---------------------------------------------------------------------------- train coref
def _configure_train(p: argparse.ArgumentParser) -> None:
    from ..ud.coref.config import CorefConfig
    from ..ud.coref.train import coref_train_config, train_coref

    p.description = (
        "Train a graph-to-graph coreference model on documents with CorefUD annotations (Entity= in MISC, e.g. "
        "UD_English-GUM). A window of a document's sentences is one graph: relative positions, the dependency "
        "trees and sentence distances enter every attention score as label channels. The model tags mention "
        "heads with their entity type, chooses each mention's first and last word inside the head's subtree, "
        "and scores antecedents between mention heads (biaffine, as a parser scores arcs). Model selection: "
        "CoNLL F1 (mean of MUC, B3, CEAF-e; head match, no singletons, as the CRAC shared tasks) on --dev "
        "documents resolved from their gold trees. Writes OUT/best.pt, last.pt, log.jsonl and config.json. "
        "--init-from continues a trained coreference stage (weights, vocabularies, configuration, link threshold) "
        "with a fresh optimizer and schedule.")
    p.epilog = (
        "examples:\n"
        "  g2gt train coref --out runs/coref --max-minutes 60 --threads 1\n"
        "  g2gt train coref --out runs/coref --max-minutes 60 --resume   # continue an interrupted run\n"
        "  g2gt train coref --init-from en_combined --out runs/coref2 --max-minutes 30 --lr 3e-4   # train further\n"
        "Defaults for --train / --dev: $G2GT_DATA/" + GUM_TRAIN + " and $G2GT_DATA/" + GUM_DEV +
        " ($G2GT_DATA: a data folder laid out as data/README.md of the g2gt repository says).")
    data = p.add_argument_group("data")
    data.add_argument("--train", metavar="FILE", help="training CoNLL-U with trees and Entity= (default: GUM train)")
    data.add_argument("--dev", metavar="FILE", help="development CoNLL-U with trees and Entity= (default: GUM dev)")
    data.add_argument("--out", required=True, metavar="DIR", help="training folder (checkpoints, logs)")
    data.add_argument("--resume", action="store_true", help="continue from OUT/last.pt (same budget, same settings)")
    data.add_argument("--init-from", metavar="MODEL", default=None,
                      help="warm start: continue this coreference stage (a model's name such as en_combined, a model "
                           "folder with coref.pt, a training folder or a checkpoint) with its weights, vocabularies "
                           "and architecture instead of random weights; optimizer and schedule start fresh")
    add_training_groups(p, CorefConfig, MODEL_OPTIONS, train_coref, TASK_OPTIONS, TRAIN_OPTIONS,
                        model_help=MODEL_HELP, task_help=TASK_HELP, batch_tokens=TRAIN_BATCH_TOKENS,
                        recipe=coref_train_config)
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    device = apply_runtime(args)
    from ..core.config import model_fields
    from ..ud.coref.config import CorefConfig
    from ..ud.coref.train import coref_train_config, train_coref
    from ..ud.io.conllu import read_conllu

    train_path = data_file_arg(args.train, GUM_TRAIN, "--train")
    dev_path = data_file_arg(args.dev, GUM_DEV, "--dev")
    check_folder_path(args.out, "--out")
    t0 = time.time()
    train = read_conllu(train_path, require_heads=True)
    dev = read_conllu(dev_path, require_heads=True)
    print(f"train: {train_path} ({len(train)} sentences), dev: {dev_path} ({len(dev)} sentences)", file=sys.stderr)
    model = CorefConfig(**option_values(args, MODEL_OPTIONS))
    if args.init_from and not args.resume:  # the source's architecture, except for options set to another value
        changed = model_fields(model, changed=True)
        print(f"--init-from {args.init_from}: its architecture and vocabularies"
              + (f" with {', '.join(f'{k}={v}' for k, v in changed.items())}" if changed else ""), file=sys.stderr)
    tc = start_run(args, TRAIN_OPTIONS, device, "conll", recipe=coref_train_config, init_from=args.init_from)
    _, history = train_coref(train, dev, args.out, model, tc, batch_tokens=args.batch_tokens, resume=args.resume,
                             overwrite=args.overwrite, **option_values(args, TASK_OPTIONS))
    best = max(history, key=lambda h: h.get("conll", 0)) if history else {}
    print(f"done in {(time.time() - t0) / 60:.1f} min; best dev (gold trees, head match, no singletons) CoNLL F1 "
          f"{best.get('conll', 0):.2f} (MUC {best.get('muc', 0):.2f}, B3 {best.get('bcub', 0):.2f}, CEAF-e "
          f"{best.get('ceafe', 0):.2f}); mentions F1 {best.get('mention_f1', 0):.2f}, entity types "
          f"{best.get('type_acc', 0):.2f}%; model in {args.out}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- coref
def _configure_coref(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Add coreference to parsed CoNLL-U: mentions, entities and entity types as CorefUD Entity= brackets in "
        "MISC (documents start at '# newdoc'; trees are read from HEAD / DEPREL). Existing Entity, SplitAnte "
        "and Bridge items are replaced; every other MISC item, column and comment is kept. The input is read, "
        "resolved and written a document at a time; a document of more than 20,000 words in parts cut between "
        "the model's windows, which gives the same output (g2gt.ud.coref.parts), so memory does not grow with "
        "the input.")
    p.epilog = ("examples:\n"
                "  g2gt coref parsed.conllu -o coref.conllu      # the default model's coreference stage\n"
                "  g2gt coref --model runs/coref parsed.conllu -o coref.conllu\n"
                "  g2gt evaluate gold.conllu coref.conllu      # MUC, B3, CEAF-e, CoNLL F1")
    p.add_argument("input", metavar="INPUT", help="parsed CoNLL-U (plain or .gz), '-' = stdin")
    p.add_argument("-o", "--output", default="-", metavar="FILE", help="output CoNLL-U, '-' = stdout (default)")
    p.add_argument("--model", default=DEFAULT_MODEL, metavar="MODEL",
                   help="a model's name (default: %(default)s), a model folder (coref.pt), a folder written by "
                        "'g2gt train coref' (best.pt) or a checkpoint")
    p.add_argument("--threshold", type=float, default=None, metavar="X",
                   help="antecedent score a link must beat (default: the model's, 0 unless tuned; lower links more)")
    add_common_options(p, batch_tokens=None)
    p.set_defaults(func=run_coref)


def run_coref(args: argparse.Namespace) -> int:
    check_input_path(args.input, "INPUT")
    check_output_path(args.output, "-o", inputs=(args.input,))
    device = apply_runtime(args)
    from ..ud.coref.resolver import Coreferencer
    from ..ud.io.conllu import iter_conllu, write_conllu

    # read, resolved and written a document at a time (a long document in parts: Coreferencer.stream), so memory
    # does not grow with the input
    sents = iter_conllu(sys.stdin if args.input == "-" else args.input, require_heads=True,
                        **({"name": "<stdin>"} if args.input == "-" else {}))
    try:
        resolver = Coreferencer.load(args.model, device)
    except FileNotFoundError as e:
        raise UsageError(f"--model {e}") from None
    if args.threshold is not None:
        resolver.threshold = args.threshold
    stats = {"sentences": 0, "words": 0}
    t0 = time.time()
    write_conllu(resolver.stream(sents, stats=stats), args.output)
    nw = stats["words"]
    dt = time.time() - t0
    print(f"resolved {stats['sentences']} sentences, {nw} words in {dt:.2f}s ({nw / max(dt, 1e-9):.0f} words/s)",
          file=sys.stderr)
    return 0
