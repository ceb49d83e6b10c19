"""``g2gt train seq2seq``, ``g2gt translate`` and ``g2gt evaluate-mt``.

``train seq2seq`` options are the fields of :class:`g2gt.seq2seq.Seq2SeqConfig` and of
:class:`g2gt.core.config.TrainConfig` with the defaults of :func:`g2gt.seq2seq.seq2seq_train_config` (defaults
and help live there); the command reads the files and calls :func:`g2gt.seq2seq.train_seq2seq`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..data import find_data
from .common import (
    UsageError, add_common_options, add_dataclass_options, add_workers_option, apply_runtime,
    check_folder_path, check_input_path, check_output_path, field_default, option_values, positive_int,
    progress_enabled,
)
from .training import (
    add_overwrite_option, add_preset_option, apply_preset, config_options, start_run, train_batch_tokens_help,
)

DATA = "multi30k"
PAIR = ("en", "de")
#: the TrainConfig fields that are options of ``g2gt train seq2seq`` (``--metric``: dev_loss or bleu)
TRAIN_OPTIONS = ("lr", "warmup", "warmup_steps", "schedule", "cooldown", "weight_decay", "grad_clip", "accum_steps",
                 "max_minutes", "max_steps", "epochs", "seed", "eval_every", "metric", "average_last", "amp")
#: option names of Seq2SeqConfig fields that differ from ``--field-name`` (sizes as every train command)
FLAGS = {"num_layers": "--layers", "num_heads": "--heads", "num_encoder_layers": "--encoder-layers",
         "num_decoder_layers": "--decoder-layers"}


def register(subparsers) -> None:
    subparsers.add_parser("translate", help="translate text with a trained seq2seq model",
                          configure=_configure_translate)
    subparsers.add_parser("evaluate-mt", help="sacreBLEU BLEU and chrF of a translation against a reference",
                          configure=_configure_evaluate)


def register_train(subparsers) -> None:
    subparsers.add_parser("seq2seq", help="train a translation model (sequence or graph to sequence)",
                          configure=_configure_train)


# ---------------------------------------------------------------------------- train seq2seq
def _configure_train(p: argparse.ArgumentParser) -> None:
    from ..core.config import AMP_MODES, TrainConfig
    from ..seq2seq.config import SELECT_MODES, SEQ2SEQ_PRESETS, Seq2SeqConfig, seq2seq_train_config

    s, t = PAIR
    p.description = (
        "Train an encoder-decoder G2GTransformer on aligned text files (plain or .gz, one sentence a line). The "
        "source is a chain graph with relative-position labels; with --src-graphs the encoder also reads the "
        "source dependency parse as a second label channel. Subwords: byte-level BPE trained on the training "
        "data and stored inside the checkpoint. Writes OUT/best.pt (lowest dev loss, or best greedy dev BLEU with "
        "--metric bleu), OUT/last.pt (resumable), "
        "OUT/log.jsonl, OUT/config.json and, at the end, OUT/dev.hyp + OUT/final.json (whole dev set, beam "
        "search). The defaults are the project's recipe (warmup and cooldown are fractions of the budget).")
    p.epilog = (
        "examples:\n"
        "  g2gt train seq2seq --out runs/mt --max-minutes 40 --threads 1\n"
        "  g2gt train seq2seq --out runs/mt --resume        # continue an interrupted run (same budget)\n"
        "  g2gt train seq2seq --preset gpu --out runs/mt-gpu  # a bigger model for ~10 minutes of one H200\n"
        "  g2gt train seq2seq --out runs/mt --max-minutes 40 --average-last 5   # also write OUT/averaged.pt\n"
        f"Data defaults: Multi30k {s}->{t} from $G2GT_DATA/{DATA}/train.{s}.gz (and train.{t}.gz, val.{s}.gz, "
        f"val.{t}.gz); $G2GT_DATA is a data folder laid out as data/README.md of the g2gt repository says.")
    d = p.add_argument_group("data")
    d.add_argument("--src-train", metavar="FILE", help=f"training source sentences (default: train.{s}.gz, see "
                   "below; with --src-graphs only checked for its line count)")
    d.add_argument("--tgt-train", metavar="FILE", help=f"training target sentences (default: train.{t}.gz)")
    d.add_argument("--src-dev", metavar="FILE", help=f"dev source sentences (default: val.{s}.gz)")
    d.add_argument("--tgt-dev", metavar="FILE", help=f"dev target sentences, the references (default: val.{t}.gz)")
    d.add_argument("--src-graphs", metavar="FILE.conllu",
                   help="parsed training source, one CoNLL-U sentence per target line: turns on the dependency "
                   "channel (the source words then come from this file)")
    d.add_argument("--src-dev-graphs", metavar="FILE.conllu", help="parsed dev source (with --src-graphs)")
    d.add_argument("--out", required=True, metavar="DIR", help="training folder (checkpoints, logs)")
    d.add_argument("--resume", action="store_true",
                   help="continue from OUT/last.pt (tokenizers, data settings and model size come from it)")
    add_dataclass_options(p, Seq2SeqConfig, config_options(Seq2SeqConfig), flags=FLAGS, grouped=True,
                          choices={"positions": ("none", "sinusoidal", "learned")})
    recipe = seq2seq_train_config()
    add_dataclass_options(p.add_argument_group("optimisation and budget"), TrainConfig, TRAIN_OPTIONS,
                          defaults={n: getattr(recipe, n) for n in TRAIN_OPTIONS},
                          help={"metric": "what selects best.pt: dev_loss (lowest loss on the whole dev set, as "
                                          "fairseq does by default) or bleu (highest greedy BLEU on the first "
                                          "--eval-sentences)"},
                          choices={"schedule": ("inverse_sqrt", "cosine", "constant"), "metric": tuple(SELECT_MODES),
                                   "amp": AMP_MODES})
    add_overwrite_option(p.add_argument_group("training folder"))
    add_preset_option(p, SEQ2SEQ_PRESETS, recipe, FLAGS)
    add_common_options(p, batch_tokens_help=train_batch_tokens_help(field_default(Seq2SeqConfig, "batch_tokens")))
    p.set_defaults(func=run_train)


def _default(value: str | None, name: str, flag: str) -> str:
    if value is not None:
        check_input_path(value, flag)
        return value
    path = find_data(f"{DATA}/{name}")
    if path is None:
        raise UsageError(f"{flag} not given and the default {DATA}/{name} was not found under $G2GT_DATA "
                         f"(set G2GT_DATA to a data folder, see data/README.md, or pass {flag} FILE)")
    return str(path)


def run_train(args: argparse.Namespace) -> int:
    from ..seq2seq.config import SELECT_MODES, SEQ2SEQ_PRESETS, SEQ2SEQ_TRAIN, Seq2SeqConfig

    apply_preset(args, SEQ2SEQ_PRESETS, SEQ2SEQ_TRAIN)
    device = apply_runtime(args)
    from ..core.runtime import train_batch_tokens
    from ..seq2seq import read_training_data, seq2seq_train_config, train_seq2seq

    args.batch_tokens = args.batch_tokens or train_batch_tokens(field_default(Seq2SeqConfig, "batch_tokens"), device)

    s, t = PAIR
    graph = args.src_graphs is not None or args.src_dev_graphs is not None
    if graph and (args.src_graphs is None or args.src_dev_graphs is None):
        raise UsageError("--src-graphs and --src-dev-graphs go together (the dev source must be parsed too)")
    check_folder_path(args.out, "--out")
    for flag, value in (("--src-graphs", args.src_graphs), ("--src-dev-graphs", args.src_dev_graphs)):
        check_input_path(value, flag)
    files = dict(
        tgt_train=_default(args.tgt_train, f"train.{t}.gz", "--tgt-train"),
        tgt_dev=_default(args.tgt_dev, f"val.{t}.gz", "--tgt-dev"),
        src_train=args.src_train if graph else _default(args.src_train, f"train.{s}.gz", "--src-train"),
        src_dev=args.src_dev if graph else _default(args.src_dev, f"val.{s}.gz", "--src-dev"),
        src_graphs=args.src_graphs, src_dev_graphs=args.src_dev_graphs)
    for flag, key in (("--src-train", "src_train"), ("--src-dev", "src_dev")):
        check_input_path(files[key], flag)
    src_train, tgt_train, src_dev, tgt_dev = read_training_data(**files)
    config = Seq2SeqConfig(**option_values(args, config_options(Seq2SeqConfig)), batch_tokens=args.batch_tokens)
    tc = start_run(args, [n for n in TRAIN_OPTIONS if n != "metric"], device, args.metric,
                   metric_mode=SELECT_MODES[args.metric], recipe=seq2seq_train_config)
    run = train_seq2seq(src_train, tgt_train, src_dev, tgt_dev, args.out, config, tc, resume=args.resume,
                        overwrite=args.overwrite)
    value = json.loads((Path(args.out) / "config.json").read_text(encoding="utf-8")).get("best_dev")
    what = {"dev_loss": "dev loss", "bleu": "greedy dev BLEU"}.get(tc.metric, tc.metric)
    print(f"trained {run.steps} updates; best.pt holds the model of the best {what}"
          + (f" ({value:.3f})" if isinstance(value, (int, float)) else "") + f": {args.out}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- translate
def _configure_translate(p: argparse.ArgumentParser) -> None:
    from ..seq2seq.config import TranslateConfig

    p.description = (
        "Translate one sentence per line with g2gt.seq2seq.Translator. Writes exactly one line per input line, in "
        "order; an empty (or blank) input line gives an empty output line; a line longer than the model's limit "
        "is translated in pieces (with a warning). Graph-to-sequence models read --graphs FILE.conllu instead (one "
        "output line per CoNLL-U sentence). The input is read, translated and written in chunks; a named output "
        "file appears only when everything was translated.")
    p.epilog = ("examples:\n"
                "  g2gt translate --model en_de_multi30k --text 'A dog runs in the grass.'\n"
                "  g2gt translate --model en_de_multi30k -i test.en -o test.hyp\n"
                "  g2gt translate --model runs/mt -i test.en -o test.hyp --beam 1 --workers 2\n"
                "  echo 'A dog runs.' | g2gt translate --model runs/mt")
    p.add_argument("--model", required=True, metavar="NAME|DIR",
                   help="an installed translation model's name, a model folder, a training folder (best.pt) or a "
                   "checkpoint file")
    src = p.add_mutually_exclusive_group()
    src.add_argument("-i", "--input", default="-", metavar="FILE", help="input file (plain or .gz), '-' = stdin "
                     "(default)")
    src.add_argument("--text", metavar="TEXT", default=None,
                     help="translate this text (one sentence per line) instead of reading --input")
    p.add_argument("-o", "--output", default="-", metavar="FILE", help="output file, '-' = stdout (default)")
    p.add_argument("--in-place", action="store_true", help="allow -o to be the input file (replaced at the end)")
    p.add_argument("--graphs", default=None, metavar="FILE.conllu", help="parsed source for a graph-to-sequence model")
    beam = field_default(TranslateConfig, "beam")
    p.add_argument("--beam", type=positive_int, default=beam, metavar="K",
                   help=f"beam size (1 = greedy; default: {beam})")
    p.add_argument("--length-penalty", type=float, default=None, metavar="X",
                   help="length penalty: score / length ** X (default: the model's, saved at training)")
    p.add_argument("--dtype", choices=["auto", "float32", "bfloat16", "float16"], default="auto",
                   help="weights' precision: auto = bfloat16 on a GPU that has it, else float32 (default: auto)")
    add_common_options(p, batch_tokens=field_default(TranslateConfig, "batch_tokens"))
    add_workers_option(p)
    p.set_defaults(func=run_translate)


def run_translate(args: argparse.Namespace) -> int:
    if args.text is not None and args.graphs:
        raise UsageError("--text is plain text; a graph-to-sequence model reads its parsed source with --graphs")
    if args.text is None:
        check_input_path(args.input, "-i")
    check_input_path(args.graphs, "--graphs")
    check_output_path(args.output, "-o", inputs=(args.input, args.graphs), in_place=args.in_place)
    device = apply_runtime(args)
    from ..seq2seq import Translator

    options = dict(beam=args.beam, length_penalty=args.length_penalty)
    if args.batch_tokens is not None:
        options["batch_tokens"] = args.batch_tokens
    try:
        translator = Translator.load(args.model, device, args.dtype, **options)
    except FileNotFoundError as e:
        raise UsageError(f"--model {e}") from None
    if translator.graph and not args.graphs:
        raise UsageError(f"{args.model} is a graph-to-sequence model: give the parsed source with --graphs FILE.conllu")
    if not translator.graph and args.graphs:
        raise UsageError(f"{args.model} is a plain sequence model; --graphs is only for graph-to-sequence models")
    if args.text is not None:
        from ..core.output import open_output

        with open_output(args.output) as f:
            for line in translator.pipe(args.text.splitlines() or [""], n_process=max(1, args.workers)):
                f.write(line + "\n")
        return 0
    translator.translate_file(args.graphs or args.input, args.output, n_process=max(1, args.workers),
                              progress=progress_enabled(args))
    return 0


# ---------------------------------------------------------------------------- evaluate-mt
def _configure_evaluate(p: argparse.ArgumentParser) -> None:
    p.description = ("Corpus BLEU and chrF of detokenized hypotheses with sacreBLEU's metric objects (BLEU: 13a "
                     "tokenization, cased), printed with sacreBLEU's signatures. Both files: one sentence per line, "
                     "the same number of lines (plain or .gz).")
    p.epilog = "example: g2gt evaluate-mt val.de.gz val.hyp --lowercase"
    p.add_argument("ref", metavar="REF", help="reference file")
    p.add_argument("hyp", metavar="HYP", help="hypothesis file")
    p.add_argument("--lowercase", action="store_true", help="also report case-insensitive BLEU / chrF")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_common_options(p, uses=("debug",))
    p.set_defaults(func=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    check_input_path(args.ref, "REF")
    check_input_path(args.hyp, "HYP")
    from ..core.files import iter_lines
    from ..seq2seq import check_aligned, mt_scores

    refs, hyps = list(iter_lines(args.ref)), list(iter_lines(args.hyp))
    check_aligned(len(refs), args.ref, len(hyps), args.hyp)
    res = mt_scores(refs, hyps)
    if args.lowercase:
        low = mt_scores(refs, hyps, lowercase=True)
        res.update(bleu_lowercase=low["bleu"], chrf_lowercase=low["chrf"],
                   bleu_lowercase_signature=low["bleu_signature"], chrf_lowercase_signature=low["chrf_signature"])
    if args.json:
        print(json.dumps(res))
        return 0
    print(f"BLEU  {res['bleu']:.2f}   {res['bleu_signature']}")
    print(f"      {res['bleu_detail']}")
    print(f"chrF  {res['chrf']:.2f}   {res['chrf_signature']}")
    if args.lowercase:
        print(f"BLEU (lowercased)  {res['bleu_lowercase']:.2f}   {res['bleu_lowercase_signature']}")
        print(f"chrF (lowercased)  {res['chrf_lowercase']:.2f}   {res['chrf_lowercase_signature']}")
    return 0
