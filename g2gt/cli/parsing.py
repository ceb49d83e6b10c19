"""``g2gt train parser`` and ``g2gt parse`` (``g2gt demo`` and ``g2gt attention``: :mod:`g2gt.cli.demo`).

Model options come from :class:`g2gt.ud.parse.ParserConfig`, optimisation options from
:class:`g2gt.core.config.TrainConfig` and task options from :func:`g2gt.ud.parse.train_parser`'s keyword
arguments; the few CLI defaults that differ from those are declared once below (``*_CLI_DEFAULTS``).
"""

from __future__ import annotations

import argparse
import re
import inspect
import sys
import time
from pathlib import Path

from ..core.registry import DEFAULT_MODEL
from ..data import EWT_DEV, EWT_TRAIN
from .common import (
    UsageError, add_common_options, add_workers_option, apply_runtime, cap_workers, check_folder_path,
    check_input_path, check_output_path, data_file_arg, field_default, non_negative_int, option_values,
    progress_enabled, signature_default,
)
from .training import ENCODER_HELP, add_preset_option, add_training_groups, apply_preset, start_run
from ..ud.parse.config import PARSER_PRESETS, PARSER_TRAIN
from ..ud.parse import train as _parser_train  # torch-free until train_parser is called

# ---------------------------------------------------------------------------- options and CLI defaults
MODEL_OPTIONS = ("d_model", "num_layers", "num_heads", "ffn_dim", "dropout", "attention_dropout", "max_distance",
                 "value_labels", "graph_channel", "arc_dim", "label_dim", "char_dim", "char_filters", "head_dropout")
MODEL_HELP = ENCODER_HELP | {
    "attention_dropout": "dropout on attention probabilities",
    "value_labels": "label embeddings in attention values too (else keys only)",
    "graph_channel": "the dependency-graph channel (--no-graph-channel: relative positions only, no refinement)",
    "arc_dim": "width of the biaffine arc scorer",
    "char_dim": "character embedding width",
    "head_dropout": "dropout before the arc / label / tag scorers",
}
# The defaults live in the parser recipe (g2gt.ud.parse.config: ParserConfig, PARSER_TRAIN) and in
# train_parser's signature; the command reads them there and sets none of its own.
MODEL_CLI_DEFAULTS: dict = {}
TRAIN_OPTIONS = ("lr", "weight_decay", "warmup", "warmup_steps", "schedule", "cooldown", "grad_clip", "accum_steps",
                 "amp", "max_minutes", "max_steps", "epochs", "eval_every", "save_every", "average_last", "seed")
TRAIN_CLI_DEFAULTS = {k: getattr(PARSER_TRAIN, k) for k in TRAIN_OPTIONS}
TASK_OPTIONS = ("refine_train", "refine_steps", "corrupt_max", "min_freq", "lowercase", "word_dropout", "tags",
                "treebank_embedding", "short_clauses")
TASK_HELP = {
    "refine_train": "refinement input graphs in training: the model's own first-pass predictions (self), "
                    "corrupted gold graphs (corrupt), or no refinement training (none)",
    "refine_steps": "refinement iterations after iteration 0 in dev evaluation, saved as the default of "
                    "'g2gt parse'",
    "corrupt_max": "largest fraction of corrupted heads / labels (refine_train corrupt)",
    "min_freq": "minimum training frequency of a word embedding",
    "lowercase": "lowercased word embeddings (--no-lowercase: case-sensitive)",
    "word_dropout": "probability of replacing a word by <unk> in training",
    "tags": "also train XPOS, UFeats and lemma heads where the training data has those columns",
    "treebank_embedding": "with training files of two or more treebanks, one learned vector per treebank added to "
                          "every word's input (--no-treebank-embedding: the treebanks are simply concatenated)",
    "short_clauses": "extra training sentences per training sentence: short clauses cut from the training trees "
                     "(a predicate with its subject, auxiliaries and some other dependents, in their order, a "
                     "capital first letter and the treebank's usual final punctuation), drawn anew each epoch, so "
                     "short statements such as 'The cat sleeps.' are parsed as clauses, not as headlines "
                     "(e.g. 0.5; 0 = off)",
}
TRAIN_BATCH_TOKENS = signature_default(_parser_train.train_parser, "batch_tokens")

DATA_EPILOG = ("Defaults for --train / --dev: $G2GT_DATA/" + EWT_TRAIN + " and $G2GT_DATA/" + EWT_DEV +
               " ($G2GT_DATA: a data folder laid out as data/README.md of the g2gt repository says).")


def register(subparsers) -> None:
    subparsers.add_parser("parse", help="parse CoNLL-U or raw text with a trained parser", configure=_configure_parse)


def register_train(subparsers) -> None:
    subparsers.add_parser("parser", help="train a graph-to-graph dependency parser on CoNLL-U",
                          configure=_configure_train)


# ---------------------------------------------------------------------------- train parser
def _configure_train(p: argparse.ArgumentParser) -> None:
    from ..ud.parse import ParserConfig, train_parser

    p.description = (
        "Train an RNGTr-style graph-to-graph Transformer dependency parser from scratch.\n"
        "Words (+ a ROOT node) are graph nodes; attention sees the relative position and the\n"
        "current dependency graph. Iteration 0 parses from the empty graph, later iterations\n"
        "refine the previous tree. Writes OUT/best.pt, last.pt, log.jsonl and config.json.")
    p.epilog = (
        "examples:\n"
        "  g2gt train parser --out runs/parser --max-minutes 40 --threads 1\n"
        "  g2gt train parser --train train.conllu --dev dev.conllu --out runs/p --epochs 30\n"
        "  g2gt train parser --out runs/p --resume          # continue an interrupted run\n"
        "  g2gt train parser --preset gpu --out runs/p-gpu  # a bigger model for ~10 minutes of one H200\n"
        "  g2gt train parser --train en_ewt-ud-train.conllu en_gum-ud-train.conllu.gz \\\n"
        "      --dev en_ewt-ud-dev.conllu en_gum-ud-dev.conllu.gz --init-from en_ewt --out runs/en2\n"
        "Several training files: each file's treebank is named by its file name (en_gum-ud-train.conllu.gz ->\n"
        "en_gum) or NAME=FILE; with two or more treebanks the model learns one vector per treebank, the first\n"
        "being the default at parse time ('g2gt parse --treebank NAME' picks another). The first --dev file\n"
        "selects best.pt; every dev file's scores are logged.\n" + DATA_EPILOG)
    data = p.add_argument_group("data")
    data.add_argument("--train", metavar="[NAME=]FILE", nargs="+", action="extend",
                      help="training CoNLL-U file(s), repeatable (default: UD EWT train, see below)")
    data.add_argument("--dev", metavar="[NAME=]FILE", nargs="+", action="extend",
                      help="development CoNLL-U file(s); the first selects best.pt (default: UD EWT dev)")
    data.add_argument("--out", required=True, metavar="DIR", help="training folder (checkpoints, logs)")
    data.add_argument("--resume", action="store_true", help="continue from OUT/last.pt (same budget, same settings)")
    data.add_argument("--init-from", metavar="MODEL", default=None,
                      help="warm start: a trained parser (a shipped name such as en_combined, a model or training folder, "
                           "a checkpoint) whose architecture, vocabulary and matching weights start this run (new "
                           "labels appended; optimizer and schedule fresh; model options that differ from their "
                           "defaults override the source's)")
    add_training_groups(p, ParserConfig, MODEL_OPTIONS, train_parser, TASK_OPTIONS, TRAIN_OPTIONS,
                        model_help=MODEL_HELP, task_help=TASK_HELP, batch_tokens=TRAIN_BATCH_TOKENS,
                        model_defaults=MODEL_CLI_DEFAULTS, train_defaults=TRAIN_CLI_DEFAULTS,
                        task_choices={"refine_train": ("self", "corrupt", "none")},
                        train_choices={"schedule": ("inverse_sqrt", "cosine", "constant")}, device_sized_batches=True)
    add_preset_option(p, PARSER_PRESETS, PARSER_TRAIN)
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    apply_preset(args, PARSER_PRESETS, PARSER_TRAIN)
    device = apply_runtime(args)
    from ..core.runtime import train_batch_tokens
    from ..ud.parse import ParserConfig, train_parser

    args.batch_tokens = args.batch_tokens or train_batch_tokens(TRAIN_BATCH_TOKENS, device)

    train = _read_sets(args.train, EWT_TRAIN, "--train")
    dev = _read_sets(args.dev, EWT_DEV, "--dev")
    check_folder_path(args.out, "--out")
    t0 = time.time()
    model = option_values(args, MODEL_OPTIONS)
    if args.init_from:  # the source's architecture, except for options set to something other than their default
        changed = {k: v for k, v in model.items() if v != field_default(ParserConfig, k)}
        unused = [f"--{k.replace('_', '-')}" for k in ("min_freq", "lowercase", "tags")
                  if getattr(args, k) != inspect.signature(train_parser).parameters[k].default]
        print(f"--init-from {args.init_from}: its architecture"
              + (f" with {', '.join(f'{k}={v}' for k, v in changed.items())}" if changed else "")
              + " and vocabulary" + (f" ({', '.join(unused)} not used)" if unused else ""), file=sys.stderr)
    tc = start_run(args, TRAIN_OPTIONS, device, "las", init_from=args.init_from)
    _, history = train_parser(train, dev, args.out, ParserConfig(**model), tc, batch_tokens=args.batch_tokens,
                              resume=args.resume, overwrite=args.overwrite, **option_values(args, TASK_OPTIONS))
    best = max(_all_evaluations(Path(args.out) / "log.jsonl") or history, key=lambda h: h.get("las", 0), default={})
    others = "".join(f"; {k[:-4]} LAS {v:.2f}" for k, v in best.items() if k.endswith(".las"))
    print(f"done in {(time.time() - t0) / 60:.1f} min; best dev (internal, step {best.get('step', '?')}, the "
          f"one in best.pt) UAS {best.get('uas', 0):.2f} LAS {best.get('las', 0):.2f} UPOS {best.get('upos', 0):.2f}"
          f"{others}; model in {args.out}", file=sys.stderr)
    return 0


def _read_sets(values: list[str] | None, default: str, flag: str) -> dict[str, list]:
    """``{treebank name: sentences}`` of ``--train`` / ``--dev`` values, else of the default data file."""
    from ..ud.parse.treebanks import read_named_files

    return read_named_files(values or [str(data_file_arg(None, default, flag))], flag)


# ---------------------------------------------------------------------------- parse
def _all_evaluations(log: Path) -> list[dict]:
    """Every dev evaluation in a training folder's ``log.jsonl`` (all runs, resumed ones included)."""
    from ..core.checkpoint import read_log

    return [e for e in read_log(log) if e.get("kind") == "eval" and "las" in e]


def _configure_parse(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Parse text or sentences and write CoNLL-U. With no --model, the English model shipped in the\n"
        "package (en_combined: tokenizer, sentence splitter, tagger, lemmatizer, parser, enhanced UD) is used.\n"
        "HEAD, DEPREL and UPOS (and XPOS, UFeats and LEMMA when the model has those heads) are predicted;\n"
        "DEPS is predicted with --enhanced, else written _ (with the empty nodes) unless --keep deps;\n"
        "every other column, comment and multiword token is kept. Each input sentence yields exactly one\n"
        "single-rooted tree, in input order. The input is read, parsed and written in chunks, and a named\n"
        "output file appears only when parsing succeeded (written to a temporary file, then renamed).")
    p.epilog = (
        "examples:\n"
        "  g2gt parse --text 'He sat. Then he left.'                  # the shipped en_combined model\n"
        "  g2gt parse --text 'He sat.' --format json   # JSON with character offsets (= Document.to_json())\n"
        "  g2gt parse --raw story.txt -o story.conllu --enhanced      # a raw-text document, DEPS too\n"
        "  echo 'The cat sat.' | g2gt parse --raw -\n"
        "  g2gt parse dev.conllu -o pred.conllu --keep lemma,feats   # keep the input's LEMMA and FEATS\n"
        "  g2gt parse --model runs/parser dev.conllu -o pred.conllu  # your own training folder\n"
        "  g2gt parse --lines train.en.gz -o train.en.conllu   # one sentence a line, never split\n"
        "  cat in.conllu | g2gt parse - --refine-steps 3\n"
        "  g2gt parse --raw big.txt -o big.conllu --workers 4   # 4 processes, the same bytes as 1\n"
        "  g2gt parse corpus/*.conllu --output-dir parsed/ --workers 4 --resume\n"
        "  g2gt parse --ray local --raw docs/*.txt --output-dir parsed/   # Ray (pip install 'g2gt[ray]')\n"
        "  g2gt parse other_parser.conllu --refine   # refine another parser's trees\n"
        "--refine: the HEAD/DEPREL columns of the input are iteration 0's graph; they must form one\n"
        "single-rooted tree per sentence, otherwise parsing stops with an error naming FILE:LINE\n"
        "(no silent fallback). Relations unknown to the model enter the graph as unlabelled-like\n"
        "edges of the first relation in the model's list.")
    p.add_argument("--model", default=DEFAULT_MODEL, metavar="NAME|DIR",
                   help=f"a shipped model's name, a model or training folder, or a checkpoint file "
                        f"(default: {DEFAULT_MODEL}, shipped in the package)")
    p.add_argument("input", nargs="*", metavar="INPUT", help="CoNLL-U file (plain or .gz), or - for stdin (several "
                   "with --output-dir)")
    p.add_argument("-o", "--output", metavar="FILE", help="output file (default: stdout)")
    p.add_argument("--format", choices=["conllu", "json"], default="conllu",
                   help="conllu (default), or json: one JSON object, the same as Document.to_json() in Python "
                        "(sentences, tokens and words with character offsets into the text, every column)")
    p.add_argument("--in-place", action="store_true", help="write the output over INPUT (needed when -o is INPUT)")
    p.add_argument("--text", help="raw text to tokenize, split into sentences and parse instead of an input file")
    p.add_argument("--raw", metavar="FILE", default=None, nargs="+",
                   help="raw text file (plain or .gz) or - for stdin: a document, tokenized and split into "
                        "sentences (paragraphs are blank-line separated; # newpar marks them)")
    p.add_argument("--lines", metavar="FILE", default=None, nargs="+",
                   help="raw text file (plain or .gz), one sentence per line: tokenized but never split, "
                        "so line k becomes sentence k (sent_id = k), e.g. to parse the source side of a "
                        "parallel corpus for 'g2gt train seq2seq --src-graphs'")
    p.add_argument("--tokenizer", choices=["auto", "model", "rule", "stanza"], default="auto",
                   help="raw-text tokenizer for --text / --raw: the model's learned tokenizer and sentence "
                        "splitter (model), rule-based (rule), stanza (installed model only), or auto (default: "
                        "the model's if it ships one, else stanza if installed, else rule). --lines uses rules "
                        "or stanza (a line is never split)")
    p.add_argument("--enhanced", action="store_true",
                   help="also predict DEPS, the enhanced UD graph (needs a model with enhancer.pt, e.g. the "
                        "shipped one); without it DEPS is written _ unless --keep deps")
    p.add_argument("--coref", action="store_true",
                   help="also resolve coreference: mentions, entities and entity types as CorefUD Entity= in MISC "
                        "(needs a model folder with coref.pt; a document is the whole input, or starts at "
                        "'# newdoc')")
    p.add_argument("--keep", default="", metavar="COLS",
                   help="comma-separated input columns to keep instead of predicting them: upos, xpos, feats, "
                        "lemma, deps (deps: the input's enhanced graph and empty nodes are kept)")
    p.add_argument("--refine", action="store_true",
                   help="start from the input's HEAD/DEPREL graph instead of the empty graph")
    p.add_argument("--refine-steps", type=non_negative_int, default=None, metavar="T",
                   help="refinement iterations (default: the model's, usually 2; 0 = one pass)")
    p.add_argument("--algorithm", choices=["mst", "eisner"], default="mst",
                   help="tree decoder: Chu-Liu-Edmonds (non-projective, default) or Eisner (projective)")
    p.add_argument("--treebank", metavar="NAME", default=None,
                   help="for a parser trained on several treebanks: whose annotation conventions to follow "
                        "(default: the first it was trained on, e.g. en_ewt)")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "int8", "auto"], default="auto",
                   help="every stage's precision: bfloat16 (fast on CPUs with AMX and on GPUs), int8 (CPU only: "
                        "int8 dynamic quantization of the parser's linear layers), float32 (the weights as trained). "
                        "Default auto: bfloat16 where it is fast, else int8 for the parser on a CPU, else float32; "
                        "speed and scores of each: the README's precision table")
    add_common_options(p)
    from .scale import add_files_options

    add_workers_option(p)
    add_files_options(p)
    p.set_defaults(func=run_parse)


def _check_parse_args(args: argparse.Namespace) -> str:
    """Check the input / output choice; returns the output ("-" = stdout)."""
    given = [name for name, v in (("an input file", args.input), ("--text", args.text), ("--raw", args.raw),
                                  ("--lines", args.lines)) if v is not None]
    if len(given) > 1:
        raise UsageError(f"give only one of: an input file, --text, --raw, --lines (got {' and '.join(given)})")
    if not given:
        raise UsageError("no input: give a CoNLL-U file, - for stdin, --text, --raw FILE or --lines FILE")
    if args.refine and args.input is None:
        raise UsageError("--refine needs CoNLL-U input with HEAD/DEPREL (not --text, --raw or --lines)")
    check_input_path(args.input, "INPUT")
    check_input_path(args.raw, "--raw")
    check_input_path(args.lines, "--lines")
    if args.in_place and (args.input in (None, "-")):
        raise UsageError("--in-place needs an input file (not stdin, --text, --raw or --lines)")
    _check_keep_args(args)
    output = args.output or (args.input if args.in_place else "-")
    check_output_path(output, "-o", inputs=(args.input, args.raw, args.lines), in_place=args.in_place)
    return output


def _check_keep_args(args: argparse.Namespace) -> None:
    """``--keep`` (and old ``--keep-upos``) -> a sorted tuple of column names in ``args.keep``."""
    keep = [c.strip().lower() for c in args.keep.split(",") if c.strip()]
    from ..ud.parse.columns import check_keep

    try:
        args.keep = tuple(sorted(check_keep(keep)))
    except ValueError as e:
        raise UsageError(f"--keep: {e}") from None
    if args.enhanced and "deps" in args.keep:
        raise UsageError("--enhanced predicts DEPS; it cannot be combined with --keep deps")


_CONLLU_WORD = re.compile(r"^\d+(?:-\d+|\.\d+)?\t[^\t]*(?:\t[^\t]*){8}$")


def _refuse_conllu_as_text(text: str, name: str, option: str) -> None:
    """A :class:`UsageError` when ``text`` starts like CoNLL-U (its first non-comment line a word line of 10
    tab-separated columns): parsed as prose, its columns would become words."""
    for line in text[:65536].splitlines():
        if line.strip() and not line.startswith("#"):
            if _CONLLU_WORD.match(line):
                raise UsageError(f"{option} {name}: this file is CoNLL-U (10 tab-separated columns), not raw text; give "
                                 "it as the INPUT argument (g2gt parse FILE.conllu) to parse its sentences")
            return


class FileInput:
    """An input file parsed piece by piece (:mod:`g2gt.ud.scale.piecewise`): its kind (``raw``, ``lines``,
    ``conllu``), the opened and checked input, and the tokenizer of ``--lines``."""

    def __init__(self, kind: str, inp, tokenizer: str = "rule") -> None:
        self.kind, self.inp, self.tokenizer = kind, inp, tokenizer


def _open_input(args: argparse.Namespace):
    """Open and check the input before the model is loaded: the text for --text and for --raw with --format json
    (offsets point into it), else a :class:`FileInput` (read and parsed piece by piece, in this process or by
    the workers)."""
    from ..core.files import open_input

    if args.text is not None:
        if not args.text.strip():
            raise UsageError("--text contains no words")
        return args.text
    if args.raw is not None:
        inp = open_input(args.raw, kind="text")
        head = next(inp.blocks(), b"")
        _refuse_conllu_as_text(head.decode("utf-8", "ignore"), args.raw, "--raw")
        return inp.read() if args.format == "json" else FileInput("raw", inp)
    if args.lines is not None:
        tokenizer = "rule" if args.tokenizer == "model" else args.tokenizer
        return FileInput("lines", open_input(args.lines, kind="text"), tokenizer)
    from ..ud.io.conllu import CoNLLUError

    return FileInput("conllu", open_input(args.input, error=CoNLLUError, kind="CoNLL-U"))


def load_pipeline(args: argparse.Namespace, device, tokenizer: str = "auto"):
    """The :class:`~g2gt.ud.pipeline.Pipeline` named by ``--model`` (and ``--dtype`` where the command has it),
    with a one-line :class:`UsageError` for a missing model or a tokenizer it lacks."""
    from ..ud.pipeline import Pipeline

    try:
        return Pipeline.load(args.model, device, getattr(args, "dtype", "auto"), tokenizer=tokenizer)
    except FileNotFoundError as e:
        raise UsageError(f"--model {e}") from None
    except ValueError as e:
        if "tokenizer=" in str(e):
            raise UsageError(f"--tokenizer: {e}") from None
        raise


def run_parse(args: argparse.Namespace) -> int:
    from .scale import normalize_inputs, run_files, uses_files

    if uses_files(args):  # INPUTS... --output-dir DIR, local workers or Ray
        if args.format != "conllu":
            raise UsageError("--output-dir / --ray write one CoNLL-U file per input; --format json is for one "
                             "input (give it without --output-dir)")
        _check_keep_args(args)
        return run_files(args, apply_runtime(args), _parse_kwargs(args))
    normalize_inputs(args)
    output = _check_parse_args(args)
    cap_workers(args)
    if args.workers > 1:
        return _parse_with_workers(args, output)
    device = apply_runtime(args, cap=False)
    source = _open_input(args)  # opens and checks the input before the model is loaded
    tokenizer = args.tokenizer if isinstance(source, str) or (isinstance(source, FileInput) and source.kind == "raw") \
        else "rule"
    nlp = load_pipeline(args, device, tokenizer)
    if args.treebank is not None:  # checked here, before any output
        try:
            nlp.parser.treebank = args.treebank
        except ValueError as e:
            raise UsageError(f"--treebank: {e}") from None
    if args.enhanced and nlp.enhancer is None:
        raise UsageError(f"--enhanced: the model {args.model} has no enhanced-UD part (enhancer.pt); use a "
                         "model folder that has one (e.g. the shipped en_combined) or 'g2gt enhance --model M'")
    if getattr(args, "coref", False) and "coref" not in nlp.stages:
        raise UsageError(f"--coref: the model {args.model} has no coreference part (coref.pt); use a model "
                         "folder that has one or 'g2gt coref --model M' on parsed CoNLL-U")
    kw = _parse_kwargs(args)
    stats = {"sentences": 0, "words": 0}
    t0 = time.time()
    if isinstance(source, FileInput) and args.format == "conllu":
        _parse_pieces(nlp, source, output, kw, stats)
    else:
        from ..ud.scale.piecewise import open_pieces, parsed_sentences, text_parsed_sentences

        text = None
        if isinstance(source, FileInput):  # --format json of CoNLL-U or --lines: the pieces' sentences
            _, jobs = open_pieces(source.inp, source.kind, tokenizer=source.tokenizer)
            parsed = (s for job in jobs for s in parsed_sentences(nlp, job, kw, stats))
        else:
            from ..ud.limits import drop_control_characters

            text = drop_control_characters(source)  # as nlp(text) does: the text --format json's offsets point into
            parsed = text_parsed_sentences(nlp, text, kw, stats)
        if args.format == "json":
            write_document(parsed, text, nlp.name, output)
        else:
            from ..ud.io import write_conllu

            write_conllu(parsed, output)
    dt = time.time() - t0
    print(f"parsed {stats['sentences']} sentence{'s' * (stats['sentences'] != 1)}, {stats['words']} "
          f"word{'s' * (stats['words'] != 1)} in {dt:.2f}s "
          f"({stats['words'] / max(dt, 1e-9):.0f} words/s)", file=sys.stderr)
    return 0


def _parse_pieces(nlp, source: FileInput, output: str, kw: dict, stats: dict) -> None:
    """One process: the input's pieces read, parsed and written one at a time (as the workers do them)."""
    from ..core.output import open_output
    from ..ud.scale.piecewise import open_pieces, parse_piece, piece_bytes, write_pieces

    target = piece_bytes(source.kind, nlp.parse_stage.device if hasattr(nlp.parse_stage, "device") else "cpu")
    _, jobs = open_pieces(source.inp, source.kind, tokenizer=source.tokenizer, target=target)
    with open_output(output) as f:
        write_pieces((parse_piece(nlp, job, kw) for job in jobs), f.write, stats)


def _parse_with_workers(args: argparse.Namespace, output: str) -> int:
    """``--workers N``: the worker processes start first (each imports torch and loads the model) while this
    process checks the device and the input, then :func:`g2gt.cli.scale.run_workers` or, for ``--format json``,
    :func:`_json_workers`."""
    from ..core.pool import start_fork_server

    start_fork_server()  # it imports torch while this process does: the two start-ups overlap
    from .scale import run_workers
    from ..ud.scale.parallel import ParallelPipeline

    raw = args.text is not None or args.raw is not None
    with ParallelPipeline(args.model, args.workers, device=args.device, dtype=args.dtype,
                          tokenizer=args.tokenizer if raw else "rule", progress=progress_enabled(args)) as pp:
        apply_runtime(args, cap=False)
        source = _open_input(args)  # checked while the workers start
        if args.format == "json":
            return _json_workers(args, pp, source, output)
        return run_workers(args, pp, source, output, _parse_kwargs(args))


def _json_workers(args: argparse.Namespace, pp, source, output: str) -> int:
    """``--format json --workers N``: the workers parse the input's pieces (a text's: those of a file holding it),
    their CoNLL-U is read back (a lossless round trip) and written as one Document's JSON, streamed as with one
    process."""
    from ..ud.io import parse_conllu_string
    from ..ud.scale.piecewise import Numbering, open_pieces, text_jobs

    kw = {k: v for k, v in _parse_kwargs(args).items() if k != "progress"}
    if isinstance(source, str):
        from ..ud.limits import drop_control_characters

        source = drop_control_characters(source)
        jobs = text_jobs(source)
    else:
        jobs = open_pieces(source.inp, source.kind, tokenizer=source.tokenizer)[1]
    numbering = Numbering()
    name = pp.info.get("name")
    parsed = (s for res in pp.parse_jobs(jobs, **kw) for s in parse_conllu_string(numbering(res.conllu), "<workers>"))
    write_document(parsed, source if isinstance(source, str) else None, name, output)
    return 0


def write_document(sentences, source, model: str | None, output: str) -> None:
    """``--format json``: the parsed sentences as one :class:`~g2gt.ud.document.Document`'s ``to_json()``
    (``source``: the raw text when the input was text, so offsets point into it), written as they come
    (:func:`g2gt.ud.document_stream.write_document_json`: memory does not grow with the input)."""
    from ..core.output import open_output
    from ..ud.document_stream import write_document_json

    with open_output(output) as f:
        write_document_json(sentences, f, source if isinstance(source, str) else None, model)
        f.write("\n")


def _parse_kwargs(args: argparse.Namespace) -> dict:
    """``Pipeline.__call__`` keyword arguments from the parse options."""
    kw = dict(refine_steps=args.refine_steps, algorithm=args.algorithm, use_input_graph=args.refine,
              progress=progress_enabled(args), keep=args.keep, enhanced=args.enhanced)
    if args.batch_tokens is not None:
        kw["batch_tokens"] = args.batch_tokens
    if getattr(args, "treebank", None) is not None:
        kw["treebank"] = args.treebank
    if getattr(args, "coref", False):
        kw["coref"] = True
    return kw
