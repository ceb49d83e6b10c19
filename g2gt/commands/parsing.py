"""``g2gt train parser``, ``g2gt parse``, ``g2gt demo`` and ``g2gt attention``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

EWT_TRAIN = "ud-en-ewt/en_ewt-ud-train.conllu"
EWT_DEV = "ud-en-ewt/en_ewt-ud-dev.conllu"
REPO = Path(__file__).resolve().parents[2]
SAMPLE_TRAIN = REPO / "data/ud-en-ewt/en_ewt-ud-train.sample.conllu"
SAMPLE_DEV = REPO / "data/ud-en-ewt/en_ewt-ud-dev.sample.conllu"
ATTRIBUTION = ("Data: Universal Dependencies English Web Treebank (UD_English-EWT), CC BY-SA 4.0, "
               "https://github.com/UniversalDependencies/UD_English-EWT")


def default_data(rel: str) -> Path | None:
    """``$G2GT_DATA/rel``, else ``../shared/data/rel`` relative to the repository or the cwd."""
    cands = []
    if os.environ.get("G2GT_DATA"):
        cands.append(Path(os.environ["G2GT_DATA"]) / rel)
    cands += [REPO.parent / "shared/data" / rel, Path.cwd().parent / "shared/data" / rel,
              Path.cwd() / "data" / rel]
    for c in cands:
        if c.exists():
            return c
    return None


def _data_arg(value: str | None, rel: str, flag: str) -> Path:
    if value:
        p = Path(value)
        if not p.exists():
            raise FileNotFoundError(f"{flag} {value}: no such file")
        return p
    p = default_data(rel)
    if p is None:
        raise FileNotFoundError(
            f"{flag} not given and the default {rel} was not found under $G2GT_DATA or ../shared/data "
            f"(set G2GT_DATA or pass {flag} PATH)")
    return p


def register(subparsers, train_subparsers) -> None:
    # ---------------------------------------------------------------- train parser
    tp = train_subparsers.add_parser(
        "parser", help="train a graph-to-graph dependency parser on CoNLL-U",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Train an RNGTr-style graph-to-graph Transformer dependency parser from scratch.\n"
            "Words (+ a ROOT node) are graph nodes; attention sees the relative position and the\n"
            "current dependency graph. Iteration 0 parses from the empty graph, later iterations\n"
            "refine the previous tree. Writes OUT/best.pt, last.pt, log.jsonl and config.json."),
        epilog=(
            "examples:\n"
            "  g2gt train parser --out runs/parser --max-minutes 40 --threads 1\n"
            "  g2gt train parser --train train.conllu --dev dev.conllu --out runs/p --epochs 30\n"
            "  g2gt train parser --out runs/p --resume          # continue an interrupted run\n"
            "Defaults for --train/--dev: $G2GT_DATA/" + EWT_TRAIN + " (or ../shared/data/...)."))
    tp.add_argument("--train", help="training CoNLL-U (default: UD EWT train, see below)")
    tp.add_argument("--dev", help="development CoNLL-U for model selection (default: UD EWT dev)")
    tp.add_argument("--out", required=True, help="model directory")
    tp.add_argument("--max-minutes", type=float, default=0.0, help="wall-clock budget (0 = none)")
    tp.add_argument("--epochs", type=int, default=1000, help="maximum epochs")
    tp.add_argument("--max-steps", type=int, default=0, help="maximum optimizer steps (0 = none)")
    tp.add_argument("--refine-steps", type=int, default=2,
                    help="refinement iterations after iteration 0 used in dev evaluation and saved as the "
                         "default for 'g2gt parse' (default 2)")
    tp.add_argument("--refine-train", choices=["self", "corrupt", "none"], default="self",
                    help="refinement input graphs in training: the model's own first-pass predictions (self, "
                         "default), corrupted gold graphs (corrupt), or no refinement training (none)")
    tp.add_argument("--corrupt-max", type=float, default=0.3, help="max fraction of corrupted heads/labels")
    tp.add_argument("--value-labels", dest="value_labels", action="store_true", default=True,
                    help="label embeddings in keys and values (default)")
    tp.add_argument("--no-value-labels", dest="value_labels", action="store_false",
                    help="label embeddings in keys only")
    tp.add_argument("--no-graph-channel", action="store_true",
                    help="ablation: no dependency-graph channel (relative positions only; no refinement)")
    tp.add_argument("--d-model", type=int, default=256)
    tp.add_argument("--layers", type=int, default=4)
    tp.add_argument("--heads", type=int, default=8)
    tp.add_argument("--ffn-dim", type=int, default=512)
    tp.add_argument("--dropout", type=float, default=0.15)
    tp.add_argument("--max-distance", type=int, default=8, help="clip distance of relative positions")
    tp.add_argument("--min-freq", type=int, default=2, help="min train frequency of a word embedding")
    tp.add_argument("--cased", action="store_true", help="case-sensitive word embeddings (default: lowercased)")
    tp.add_argument("--word-dropout", type=float, default=0.2, help="prob. of replacing a word by <unk>")
    tp.add_argument("--lr", type=float, default=1.5e-3)
    tp.add_argument("--warmup", type=int, default=200, help="warmup steps")
    tp.add_argument("--cooldown", type=float, default=0.0,
                    help="final fraction of the budget (--max-steps, else --max-minutes) over which the learning "
                         "rate decays linearly to 0; e.g. 0.3 (default 0 = inverse-sqrt decay only)")
    tp.add_argument("--batch-tokens", type=int, default=1500, help="padded tokens per batch")
    tp.add_argument("--eval-every", type=int, default=200, help="steps between dev evaluations")
    tp.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    tp.add_argument("--seed", type=int, default=1)
    tp.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    tp.add_argument("--resume", action="store_true", help="continue from OUT/last.pt")
    tp.add_argument("--no-progress", action="store_true", help="no progress bar")
    tp.set_defaults(func=run_train)

    # ---------------------------------------------------------------- parse
    pp = subparsers.add_parser(
        "parse", help="parse CoNLL-U or raw text with a trained parser",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Parse sentences with a trained parser and write CoNLL-U. HEAD, DEPREL and UPOS are\n"
            "predicted; every other column, comment, multiword token and empty node is kept. Each\n"
            "input sentence yields exactly one single-rooted tree, in input order."),
        epilog=(
            "examples:\n"
            "  g2gt parse --model runs/parser dev.conllu -o pred.conllu\n"
            "  g2gt parse --model runs/parser --text 'The cat sat on the mat.'\n"
            "  g2gt parse --model runs/parser --lines train.en.gz -o train.en.conllu   # one sentence a line\n"
            "  cat in.conllu | g2gt parse --model runs/parser - --refine-steps 3\n"
            "  g2gt parse --model runs/parser other_parser.conllu --refine   # refine another parser's trees\n"
            "--refine: the HEAD/DEPREL columns of the input are iteration 0's graph; they must form one\n"
            "single-rooted tree per sentence, otherwise parsing stops with an error naming FILE:LINE\n"
            "(no silent fallback). Relations unknown to the model enter the graph as unlabelled-like\n"
            "edges of the first relation in the model's list."))
    pp.add_argument("--model", required=True, help="model directory (best.pt) or checkpoint file")
    pp.add_argument("input", nargs="?", help="CoNLL-U file, or - for stdin (omit with --text)")
    pp.add_argument("-o", "--output", help="output CoNLL-U (default stdout)")
    pp.add_argument("--text", help="raw text to tokenize, split and parse instead of an input file")
    pp.add_argument("--lines", metavar="FILE", default=None,
                    help="raw text file (plain or .gz), one sentence per line: tokenized but never split, "
                         "so line k becomes sentence k (sent_id = k), e.g. to parse the source side of a "
                         "parallel corpus for 'g2gt train seq2seq --src-graphs'")
    pp.add_argument("--tokenizer", choices=["rule", "stanza", "auto"], default="auto",
                    help="raw-text tokenizer: rule-based, stanza (installed model only) or auto (default)")
    pp.add_argument("--refine", action="store_true",
                    help="start from the input's HEAD/DEPREL graph instead of the empty graph")
    pp.add_argument("--refine-steps", type=int, default=None,
                    help="refinement iterations (default: the model's, usually 2; 0 = one pass)")
    pp.add_argument("--algorithm", choices=["mst", "eisner"], default="mst",
                    help="tree decoder: Chu-Liu-Edmonds (non-projective, default) or Eisner (projective)")
    pp.add_argument("--batch-size", type=int, default=3000, help="padded tokens per batch")
    pp.add_argument("--keep-upos", action="store_true", help="keep the input UPOS instead of predicting it")
    pp.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    pp.add_argument("--device", default="cpu")
    pp.add_argument("--dtype", choices=["float32", "bfloat16", "auto"], default="float32",
                    help="weights' precision for parsing: bfloat16 is ~1.5x faster on CPUs with AMX and on GPUs "
                         "(same EWT dev LAS as float32 in our measurement, see README); auto = bfloat16 where "
                         "it is fast, else float32")
    pp.set_defaults(func=run_parse)

    # ---------------------------------------------------------------- demo
    dp = subparsers.add_parser(
        "demo", help="train a small parser for a few minutes on the shipped sample and show trees",
        description=("Train a small parser on data/ud-en-ewt/en_ewt-ud-train.sample.conllu for --minutes, "
                     "parse a few sentences, print them as trees and score the dev sample. " + ATTRIBUTION),
        epilog="example: g2gt demo --minutes 2")
    dp.add_argument("--minutes", type=float, default=2.0, help="training time (default 2)")
    dp.add_argument("--out", default=None, help="model directory (default: a temporary one)")
    dp.add_argument("--threads", type=int, default=0)
    dp.add_argument("--text", default=None, help="extra raw text to parse")
    dp.set_defaults(func=run_demo)

    # ---------------------------------------------------------------- attention
    ap = subparsers.add_parser(
        "attention", help="plot attention heatmaps of a trained parser",
        description="Plot every head of every layer (or one --layer) over the words of a sentence.",
        epilog="example: g2gt attention --model runs/parser --text 'She reads books .' -o heads.png --layer 0")
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True, help="one sentence of raw text")
    ap.add_argument("-o", "--output", required=True, help="image file (png, pdf, svg)")
    ap.add_argument("--layer", type=int, default=None, help="only this layer (0-based; default all)")
    ap.add_argument("--refine-steps", type=int, default=0,
                    help="show the pass that sees the graph after this many passes (0 = iteration 0)")
    ap.set_defaults(func=run_attention)


# --------------------------------------------------------------------------- implementations
def _threads(n: int) -> None:
    import torch

    if n and n > 0:
        torch.set_num_threads(n)


def run_train(args: argparse.Namespace) -> int:
    _threads(args.threads)
    from ..io.conllu import read_conllu
    from ..tasks.parsing import train_parser
    from ..train import TrainConfig

    train_path = _data_arg(args.train, EWT_TRAIN, "--train")
    dev_path = _data_arg(args.dev, EWT_DEV, "--dev")
    t0 = time.time()
    train = read_conllu(train_path, require_heads=True)
    dev = read_conllu(dev_path, require_heads=True)
    print(f"train: {train_path} ({len(train)} sentences), dev: {dev_path} ({len(dev)} sentences)",
          file=sys.stderr)
    tc = TrainConfig(lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01, warmup_steps=args.warmup,
                     schedule="inverse_sqrt", max_steps=args.max_steps, epochs=args.epochs,
                     max_minutes=args.max_minutes, cooldown=args.cooldown, eval_every=args.eval_every, metric="las", metric_mode="max",
                     seed=args.seed, device=args.device, progress=not args.no_progress, grad_clip=5.0)
    model_cfg = dict(d_model=args.d_model, num_layers=args.layers, num_heads=args.heads, ffn_dim=args.ffn_dim,
                     dropout=args.dropout, max_distance=args.max_distance, value_labels=args.value_labels,
                     graph_channel=not args.no_graph_channel)
    parser, history = train_parser(
        train, dev, args.out, model_cfg, tc, refine_train=args.refine_train, refine_steps=args.refine_steps,
        max_tokens=args.batch_tokens, min_freq=args.min_freq, lowercase=not args.cased,
        word_dropout=args.word_dropout, corrupt_max=args.corrupt_max, resume=args.resume)
    best = max(history, key=lambda h: h.get("las", 0)) if history else {}
    print(f"done in {(time.time() - t0) / 60:.1f} min; best dev (internal) "
          f"UAS {best.get('uas', 0):.2f} LAS {best.get('las', 0):.2f} UPOS {best.get('upos', 0):.2f}; "
          f"model in {args.out}", file=sys.stderr)
    return 0


def _read_input(args: argparse.Namespace):
    from ..io.conllu import read_conllu

    lines = args.lines
    if sum(x is not None for x in (args.input, args.text, lines)) > 1:
        raise ValueError("give only one of: an input file, --text, --lines")
    if args.text is not None:
        from ..io.text import text_to_sentences

        sents = text_to_sentences(args.text, tokenizer=args.tokenizer)
        if not sents:
            raise ValueError("--text contains no words")
        return sents
    if lines is not None:
        from ..io.text import lines_to_sentences
        from ..tasks.seq2seq import read_lines

        return lines_to_sentences(read_lines(lines), lines, tokenizer=args.tokenizer)
    if not args.input:
        raise ValueError("no input: give a CoNLL-U file, - for stdin, --text or --lines")
    if args.input == "-":
        return read_conllu(sys.stdin, name="<stdin>")
    return read_conllu(args.input)


def run_parse(args: argparse.Namespace) -> int:
    _threads(args.threads)
    from ..io.conllu import write_conllu
    from ..tasks.parsing import Parser

    if args.refine and (args.text is not None or args.lines is not None):
        raise ValueError("--refine needs CoNLL-U input with HEAD/DEPREL (not --text or --lines)")
    parser = Parser.load(args.model, args.device, args.dtype)
    sents = _read_input(args)
    t0 = time.time()
    out = parser.parse(sents, refine_steps=args.refine_steps, algorithm=args.algorithm,
                       use_input_graph=args.refine, max_tokens=args.batch_size, progress=sys.stderr.isatty(),
                       predict_upos=not args.keep_upos)
    dt = time.time() - t0
    if args.output:
        write_conllu(out, args.output)
    else:
        write_conllu(out, sys.stdout)
    nw = sum(len(s) for s in sents)
    print(f"parsed {len(sents)} sentences, {nw} words in {dt:.2f}s ({nw / max(dt, 1e-9):.0f} words/s)",
          file=sys.stderr)
    return 0


def tree_text(sentence) -> str:
    """An indented text-art tree of a parsed sentence (children under their head)."""
    forms, heads, rels, upos = sentence.forms, sentence.heads, sentence.deprels, sentence.upos
    children: dict[int, list[int]] = {}
    for i, h in enumerate(heads, start=1):
        children.setdefault(int(h or 0), []).append(i)
    lines: list[str] = []

    def walk(node: int, prefix: str, last: bool, depth: int) -> None:
        if depth > len(forms) + 1:
            return
        branch = "" if depth == 0 else ("└── " if last else "├── ")
        lines.append(f"{prefix}{branch}{forms[node - 1]} ({rels[node - 1]}, {upos[node - 1]})")
        kids = children.get(node, [])
        for k, c in enumerate(kids):
            walk(c, prefix + ("" if depth == 0 else ("    " if last else "│   ")), k == len(kids) - 1, depth + 1)

    for r in children.get(0, []):
        walk(r, "", True, 0)
    return "\n".join(lines)


def run_demo(args: argparse.Namespace) -> int:
    _threads(args.threads)
    import tempfile

    from ..io.conllu import read_conllu, write_conllu
    from ..io.text import text_to_sentences
    from ..tasks.parsing import train_parser
    from ..train import TrainConfig

    print(ATTRIBUTION)
    for p in (SAMPLE_TRAIN, SAMPLE_DEV):
        if not p.exists():
            raise FileNotFoundError(f"shipped sample missing: {p}")
    train = read_conllu(SAMPLE_TRAIN, require_heads=True)
    dev = read_conllu(SAMPLE_DEV, require_heads=True)
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="g2gt-demo-"))
    print(f"training a small parser for {args.minutes:g} min on {len(train)} sample sentences -> {out_dir}")
    tc = TrainConfig(lr=2e-3, betas=(0.9, 0.98), warmup_steps=50, max_minutes=args.minutes, eval_every=0,
                     metric="las", metric_mode="max", progress=sys.stderr.isatty(), grad_clip=5.0)
    cfg = dict(d_model=128, num_layers=3, num_heads=4, ffn_dim=256, dropout=0.1, arc_dim=128, char_filters=128)
    parser, history = train_parser(train, dev[:100], out_dir, cfg, tc, refine_train="self", refine_steps=1,
                                   max_tokens=1500)
    text = args.text or "The dog chased the cat into the garden. I don't think it will rain tomorrow."
    for s in parser.parse(text_to_sentences(text, tokenizer="rule"), progress=False):
        print()
        print("# text =", s.text)
        print(tree_text(s))
    pred = parser.parse(dev, progress=False)
    pred_path = out_dir / "dev.pred.conllu"
    write_conllu(pred, pred_path)
    try:
        from ..evaluate import evaluate

        ev = evaluate(SAMPLE_DEV, pred_path)
        print(f"\ndev sample ({len(dev)} sentences, official CoNLL 2018 scorer): "
              f"UAS {ev.uas:.2f}  LAS {ev.las:.2f}  UPOS {ev.upos:.2f}")
    except ImportError:
        from ..tasks.parsing import attachment_scores

        s = attachment_scores(dev, [(p.heads, p.deprels, p.upos) for p in pred])
        print(f"\ndev sample (internal scorer): UAS {s['uas']:.2f}  LAS {s['las']:.2f}  UPOS {s['upos']:.2f}")
    print(f"model: {out_dir}  (try: g2gt parse --model {out_dir} --text 'Your sentence.')")
    return 0


def run_attention(args: argparse.Namespace) -> int:
    from ..io.text import text_to_sentences
    from ..plot import plot_attention
    from ..tasks.parsing import Parser

    parser = Parser.load(args.model)
    sents = text_to_sentences(args.text, tokenizer="rule")
    if not sents:
        raise ValueError("--text contains no words")
    tokens, weights = parser.attention(sents[0], refine_steps=args.refine_steps)
    if args.layer is not None:
        if not 0 <= args.layer < len(weights):
            raise ValueError(f"--layer {args.layer}: the model has layers 0..{len(weights) - 1}")
        weights = {args.layer: weights[args.layer]}
    else:
        weights = dict(enumerate(weights))
    plot_attention(tokens, weights, args.output)
    print(f"wrote {args.output} ({len(weights)} layer(s) x {next(iter(weights.values())).shape[0]} heads)",
          file=sys.stderr)
    return 0
