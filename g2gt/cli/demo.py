"""``g2gt demo`` (a small parser trained for a few minutes on the shipped sample) and ``g2gt attention``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.registry import DEFAULT_MODEL
from ..data import EWT_ATTRIBUTION, EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from .common import (
    UsageError, add_common_options, apply_runtime, check_folder_path, check_output_path, non_negative_int,
    progress_enabled,
)
from .training import add_overwrite_option

# demo: a small, fast model for a few minutes on the shipped sample
DEMO_MODEL = dict(d_model=128, num_layers=3, num_heads=4, ffn_dim=256, dropout=0.1, arc_dim=128, char_filters=128)
DEMO_TRAIN = dict(lr=2e-3, grad_clip=5.0, eval_every=0)
DEMO_BATCH_TOKENS = 1500


def register(subparsers) -> None:
    subparsers.add_parser("demo", help="train a small parser for a few minutes on the shipped sample and show trees",
                          configure=_configure_demo)
    subparsers.add_parser("attention", help="plot attention heatmaps of a trained parser",
                          configure=_configure_attention)


# ---------------------------------------------------------------------------- demo
def _configure_demo(p: argparse.ArgumentParser) -> None:
    p.description = ("Train a small parser on the shipped sample of UD English EWT (1,200 sentences) for "
                     "--minutes, parse a few sentences, print them as trees and score the dev sample (300 "
                     "sentences) with the official scorer. " + EWT_ATTRIBUTION)
    p.epilog = "example: g2gt demo --minutes 2"
    p.add_argument("--minutes", type=float, default=2.0, help="training time (default: 2)")
    p.add_argument("--out", default=None, metavar="DIR", help="training folder (default: a temporary one)")
    p.add_argument("--text", default=None, help="extra raw text to parse")
    add_overwrite_option(p)
    add_common_options(p, batch_tokens=DEMO_BATCH_TOKENS)
    p.set_defaults(func=run_demo)


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
    device = apply_runtime(args)
    import tempfile

    from ..ud.evaluate import evaluate
    from ..ud.io import read_conllu, write_conllu
    from ..ud.tokenize.text import text_to_sentences
    from ..ud.parse import ParserConfig, train_parser
    from ..core.config import TrainConfig

    print(EWT_ATTRIBUTION)
    for path in (EWT_SAMPLE_TRAIN, EWT_SAMPLE_DEV):
        if not path.exists():
            raise UsageError(f"shipped sample missing: {path} (reinstall g2gt)")
    check_folder_path(args.out, "--out")
    train = read_conllu(EWT_SAMPLE_TRAIN, require_heads=True)
    dev = read_conllu(EWT_SAMPLE_DEV, require_heads=True)
    out_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="g2gt-demo-"))
    print(f"training a small parser for {args.minutes:g} min on {len(train)} sample sentences -> {out_dir}")
    tc = TrainConfig(**DEMO_TRAIN, max_minutes=args.minutes, metric="las", metric_mode="max", device=device,
                     progress=progress_enabled(args))
    # a 2-minute budget buys more from more updates than from refinement training or the tag heads
    parser, _ = train_parser(train, dev[:100], out_dir, ParserConfig(**DEMO_MODEL), tc, refine_train="none",
                             refine_steps=0, batch_tokens=args.batch_tokens, tags=False, overwrite=args.overwrite)
    text = args.text or "The dog chased the cat into the garden. I don't think it will rain tomorrow."
    for s in parser.parse(text_to_sentences(text, tokenizer="rule"), progress=False):
        print()
        print("# text =", s.text)
        print(tree_text(s))
    pred_path = out_dir / "dev.pred.conllu"
    write_conllu(parser.parse(dev, progress=False), pred_path)
    ev = evaluate(EWT_SAMPLE_DEV, pred_path)
    print(f"\ndev sample ({len(dev)} sentences, official CoNLL 2018 scorer): "
          f"UAS {ev.uas:.2f}  LAS {ev.las:.2f}  UPOS {ev.upos:.2f}")
    print(f"model: {out_dir}  (try: g2gt parse --model {out_dir} --text 'Your sentence.')")
    return 0


# ---------------------------------------------------------------------------- attention
def _configure_attention(p: argparse.ArgumentParser) -> None:
    p.description = "Plot every head of every layer (or one --layer) over the words of a sentence."
    p.epilog = ("examples:\n  g2gt attention --text 'She reads books.' -o heads.png --layer 0\n"
                "  g2gt attention --model runs/parser --text 'She reads books.' -o heads.png")
    p.add_argument("--model", default=DEFAULT_MODEL, metavar="NAME|DIR",
                   help=f"a shipped model's name, a model or training folder, or a checkpoint file "
                        f"(default: {DEFAULT_MODEL})")
    p.add_argument("--text", required=True, help="one sentence of raw text (tokenized by the model's tokenizer)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="image file (png, pdf, svg)")
    p.add_argument("--layer", type=non_negative_int, default=None, help="only this layer (0-based; default: all)")
    p.add_argument("--refine-steps", type=non_negative_int, default=0, metavar="T",
                   help="show the pass that sees the graph after this many passes (default: 0 = iteration 0)")
    add_common_options(p, uses=("device", "threads", "debug"))
    p.set_defaults(func=run_attention)


def run_attention(args: argparse.Namespace) -> int:
    check_output_path(args.output, "-o")
    device = apply_runtime(args)
    from ..core.plot import plot_attention

    args.dtype = "float32"  # attention weights as trained
    from .parsing import load_pipeline

    nlp = load_pipeline(args, device)
    sents = nlp.text_sentences(args.text)
    if not sents:
        raise UsageError("--text contains no words")
    tokens, weights = nlp.parser.attention(sents[0], refine_steps=args.refine_steps)
    if args.layer is not None:
        if args.layer >= len(weights):
            raise UsageError(f"--layer {args.layer}: the model has layers 0..{len(weights) - 1}")
        layers = {args.layer: weights[args.layer]}
    else:
        layers = dict(enumerate(weights))
    plot_attention(tokens, layers, args.output)
    print(f"wrote {args.output} ({len(layers)} layer(s) x {next(iter(layers.values())).shape[0]} heads)",
          file=sys.stderr)
    return 0
