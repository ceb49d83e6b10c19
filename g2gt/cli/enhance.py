"""``g2gt train enhancer`` and ``g2gt enhance``: enhanced UD graphs (the DEPS column) from basic trees.

Model options come from :class:`g2gt.ud.enhance.EnhancerConfig`, optimisation options from the recipe's
:class:`g2gt.core.config.TrainConfig` (:func:`g2gt.ud.enhance.enhancer_train_config`) and task options (and
``--batch-tokens``) from :func:`g2gt.ud.enhance.train_enhancer`'s keyword arguments: the command has no defaults
of its own.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..data import EWT_DEV, EWT_TRAIN
from .common import (
    UsageError, add_common_options, add_workers_option, apply_runtime, check_folder_path,
    check_input_path, check_output_path, data_file_arg, option_values, progress_enabled, signature_default,
)
from .training import ENCODER_HELP, add_training_groups, start_run
from ..core.registry import DEFAULT_MODEL

MODEL_OPTIONS = ("d_model", "num_layers", "num_heads", "ffn_dim", "dropout", "max_distance", "edge_dim", "label_dim",
                 "path_rank", "char_filters", "head_dropout", "label_weight")
MODEL_HELP = ENCODER_HELP | {
    "edge_dim": "width of the biaffine edge scorer",
    "path_rank": "rank of the path-typed bilinear edge term (0 = off)",
    "head_dropout": "dropout before the edge / label scorers",
    "label_weight": "weight of the label loss against the edge loss",
}
TRAIN_OPTIONS = ("lr", "warmup", "warmup_steps", "cooldown", "grad_clip", "max_minutes", "max_steps", "epochs",
                 "eval_every", "seed", "amp")
TASK_OPTIONS = ("corrupt_prob", "corrupt_max", "parser_prob", "min_freq", "word_dropout")
TASK_HELP = {
    "corrupt_prob": "fraction of training sentences whose input tree is corrupted (so the model copes with "
                    "parser errors)",
    "corrupt_max": "largest fraction of re-attached / relabelled words in a corrupted tree",
    "parser_prob": "with --parser: fraction of training sentences whose input tree is the parser's prediction",
    "min_freq": "minimum training frequency of a word embedding",
    "word_dropout": "probability of replacing a word by <unk> in training",
}
EMPTY_NODES = ("Empty nodes (8.1) are KEPT, not predicted: the input's empty nodes stay as they are, and so do the "
               "words' DEPS edges to them; an input without empty nodes gives an output without them.")


def register(subparsers) -> None:
    subparsers.add_parser("enhance", help="add enhanced UD graphs (DEPS) to parsed CoNLL-U",
                          configure=_configure_enhance)


def register_train(subparsers) -> None:
    subparsers.add_parser("enhancer", help="train the enhance stage: an enhanced-UD graph model (basic tree -> DEPS)",
                          configure=_configure_train)


# ---------------------------------------------------------------------------- train enhancer
def _configure_train(p: argparse.ArgumentParser) -> None:
    from ..ud.enhance import EnhancerConfig, enhancer_train_config, train_enhancer

    p.description = (
        "Train a graph-to-graph model that adds the enhanced UD graph (DEPS) to a basic tree. The basic tree "
        "enters every attention score as label channels (relative position, the tree's relations, and tree "
        "paths: parent, sibling, grandparent ...); a biaffine scorer decides every (dependent, head) pair "
        "independently (ROOT included) and a biaffine classifier labels each edge with a template: case-marked "
        "relations are learnt as obl:<case>, conj:<case> ... and filled from the basic tree, so unseen "
        "prepositions work. Input trees in training are gold, corrupted gold (--corrupt-prob) or a parser's "
        "predictions (--parser), so that the model works on predicted trees. Model selection: labelled "
        "enhanced-edge F1 on --dev with gold trees (official scores: g2gt evaluate, ELAS / EULAS). Writes "
        "OUT/best.pt, last.pt, log.jsonl and config.json.")
    p.epilog = (
        "examples:\n"
        "  g2gt train enhancer --out runs/enhanced --max-minutes 22 --threads 1\n"
        "  g2gt train enhancer --out runs/enhanced --parser runs/parser --max-minutes 22\n"
        "  g2gt train enhancer --out runs/enhanced --resume      # continue an interrupted run\n"
        "Defaults for --train / --dev: $G2GT_DATA/" + EWT_TRAIN + " and $G2GT_DATA/" + EWT_DEV +
        " ($G2GT_DATA: a data folder laid out as data/README.md of the g2gt repository says).")
    data = p.add_argument_group("data")
    data.add_argument("--train", metavar="FILE", help="training CoNLL-U with DEPS (default: UD EWT train)")
    data.add_argument("--dev", metavar="FILE", help="development CoNLL-U with DEPS (default: UD EWT dev)")
    data.add_argument("--out", required=True, metavar="DIR", help="training folder (checkpoints, logs)")
    data.add_argument("--parser", metavar="MODEL", help="a g2gt parser model: its predicted trees of the training "
                      "data become input trees (see --parser-prob)")
    data.add_argument("--resume", action="store_true", help="continue from OUT/last.pt (same budget, same settings)")
    add_training_groups(p, EnhancerConfig, MODEL_OPTIONS, train_enhancer, TASK_OPTIONS, TRAIN_OPTIONS,
                        model_help=MODEL_HELP, task_help=TASK_HELP,
                        batch_tokens=signature_default(train_enhancer, "batch_tokens"), recipe=enhancer_train_config)
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    device = apply_runtime(args)
    from ..ud.enhance import EnhancerConfig, enhancer_train_config, train_enhancer
    from ..ud.enhance.task import parser_trees
    from ..ud.io.conllu import read_conllu

    train_path = data_file_arg(args.train, EWT_TRAIN, "--train")
    dev_path = data_file_arg(args.dev, EWT_DEV, "--dev")
    check_folder_path(args.out, "--out")
    if args.parser is not None and not Path(args.parser).exists():
        raise UsageError(f"--parser {args.parser}: no such model folder or checkpoint")
    t0 = time.time()
    train = read_conllu(train_path, require_heads=True)
    dev = read_conllu(dev_path, require_heads=True)
    print(f"train: {train_path} ({len(train)} sentences), dev: {dev_path} ({len(dev)} sentences)", file=sys.stderr)
    trees = None
    if args.parser is not None:
        trees = parser_trees(args.parser, train, device, progress=progress_enabled(args))
        print(f"parsed the training data with {args.parser} ({time.time() - t0:.0f} s)", file=sys.stderr)
    tc = start_run(args, TRAIN_OPTIONS, device, "elas", recipe=enhancer_train_config)
    enhancer, history = train_enhancer(
        train, dev, args.out, EnhancerConfig(**option_values(args, MODEL_OPTIONS)), tc, batch_tokens=args.batch_tokens,
        parser_trees=trees, resume=args.resume, overwrite=args.overwrite, **option_values(args, TASK_OPTIONS))
    best = max(history, key=lambda h: h.get("elas", 0)) if history else {}
    print(f"done in {(time.time() - t0) / 60:.1f} min; best dev (internal, gold trees) ELAS {best.get('elas', 0):.2f} "
          f"EULAS {best.get('eulas', 0):.2f} unlabelled {best.get('uelas', 0):.2f}; model in {args.out}",
          file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- enhance
def _configure_enhance(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Add the enhanced UD graph (DEPS column) to parsed CoNLL-U, e.g. the output of any parser (g2gt, Stanza, "
        "UDPipe, SuPar). The basic tree (HEAD / DEPREL) is read and checked -- one single-rooted tree per "
        "sentence, else an error naming FILE:LINE and no output file -- and never changed: every column but "
        "DEPS, every comment and every multiword-token line is written back byte for byte. Each word gets at "
        "least one enhanced head, every word is reachable from ROOT, DEPS is sorted by head then relation, "
        "'root' comes exactly from head 0, and case-marked relations (obl:in, conj:and ...) are filled from the "
        "basic tree. " + EMPTY_NODES + " --copy-basic needs no model: it copies the basic tree into DEPS "
        "(with case-marked relations filled), the baseline. The input is read, checked, enhanced and written in "
        "chunks of at most 2,000 sentences and 20,000 words, as by 'g2gt parse', so memory does not grow with the "
        "input.")
    p.epilog = ("examples:\n"
                "  g2gt enhance parsed.conllu -o enhanced.conllu          # the shipped en_combined model\n"
                "  g2gt enhance --model runs/enhanced parsed.conllu -o enhanced.conllu\n"
                "  g2gt parse --model runs/parser dev.conllu | g2gt enhance --model runs/enhanced - > out.conllu\n"
                "  g2gt enhance --copy-basic parsed.conllu -o baseline.conllu\n"
                "  g2gt evaluate gold.conllu enhanced.conllu      # ELAS / EULAS")
    p.add_argument("input", metavar="INPUT", help="parsed CoNLL-U (plain or .gz), '-' = stdin")
    p.add_argument("-o", "--output", default="-", metavar="FILE", help="output CoNLL-U, '-' = stdout (default)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", metavar="NAME|DIR", help="a shipped model's name, a model folder (enhancer.pt), a folder "
                     "written by 'g2gt train enhancer' (best.pt) or a checkpoint (default: en_combined, shipped)")
    src.add_argument("--copy-basic", action="store_true",
                     help="no model: DEPS = the basic tree with case-marked relations filled (baseline)")
    p.add_argument("--in-place", action="store_true", help="allow -o to be the input file (replaced at the end)")
    p.add_argument("--dtype", choices=["auto", "float32", "bfloat16"], default="auto",
                   help="the enhancer's precision: bfloat16 (fast on CPUs with AMX and on GPUs) or float32 (the "
                        "weights as trained); default auto: bfloat16 where it is fast, else float32")
    add_common_options(p)
    add_workers_option(p)
    p.set_defaults(func=run_enhance)


def run_enhance(args: argparse.Namespace) -> int:
    check_input_path(args.input, "INPUT")
    check_output_path(args.output, "-o", inputs=(args.input,), in_place=args.in_place)
    device = apply_runtime(args)
    from ..core.output import open_output
    from ..core.batch import inference_batch_tokens
    from ..ud.enhance.enhancer import Enhancer, copy_basic, enhance_stream
    from ..ud.io.conllu import iter_conllu, write_conllu

    # read, checked, enhanced and written a chunk at a time (g2gt.ud.limits.iter_chunks): memory does not grow
    # with the input; a broken tree fails before its chunk's work, and the atomic output then leaves no file
    sents = iter_conllu(sys.stdin if args.input == "-" else args.input,
                        **({"name": "<stdin>"} if args.input == "-" else {}))
    batch_tokens = inference_batch_tokens(device, args.batch_tokens)  # one number for one process and workers
    stats = {"sentences": 0, "words": 0}
    t0 = time.time()
    if args.copy_basic:
        write_conllu(enhance_stream(copy_basic, sents, stats=stats), args.output)
    elif args.workers > 1:  # the same bytes, from worker processes (g2gt.ud.scale.parallel)
        with open_output(args.output) as f:
            for text in _enhance_workers(args.model or DEFAULT_MODEL, sents, args.workers, device, batch_tokens,
                                         progress_enabled(args), stats, args.dtype):
                f.write(text)
    else:
        try:
            enhancer = Enhancer.load(args.model or DEFAULT_MODEL, device, args.dtype)
        except FileNotFoundError as e:
            raise UsageError(f"--model {e}") from None
        progress = progress_enabled(args)
        write_conllu(enhance_stream(lambda part: enhancer.enhance(part, batch_tokens, progress), sents,
                                    stats=stats), args.output)
    nw = stats["words"]
    dt = time.time() - t0
    print(f"enhanced {stats['sentences']} sentences, {nw} words in {dt:.2f}s ({nw / max(dt, 1e-9):.0f} words/s)",
          file=sys.stderr)
    return 0


def _enhance_workers(model: str, sentences, workers: int, device: str, batch_tokens: int, progress: bool,
                     stats: dict, dtype: str):
    """``--workers N``: the CoNLL-U text of each enhanced sentence, in input order, from ``workers`` processes.

    :func:`g2gt.ud.scale.parallel.enhance_parallel`'s engine with the chunks of :func:`enhance_stream` (it takes
    its input as one chunk): jobs are runs of the enhancer's own batches inside a chunk, so the bytes are those
    of one process and memory does not grow with the input."""
    from ..core.pool import ProcessPool
    from ..ud.enhance.data import check_input_tree
    from ..ud.limits import CHUNK_SENTENCES, CHUNK_WORDS
    from ..ud.scale.parallel import EnhanceRecipe, job_plan, map_batch_runs

    def check(part: list) -> None:
        for s in part:
            check_input_tree(s)

    with ProcessPool(EnhanceRecipe(str(model), str(device), dtype=str(dtype)), workers, preload=("torch",)) as pool:
        yield from map_batch_runs(pool, sentences, CHUNK_SENTENCES,
                                  lambda part: job_plan([len(s.forms) + 1 for s in part], batch_tokens, parse=False),
                                  lambda part: ("enhance", part, {"batch_tokens": batch_tokens}), stats,
                                  progress=progress, check=check, chunk_words=CHUNK_WORDS)
