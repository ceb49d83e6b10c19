"""``g2gt evaluate`` (official CoNLL 2018 UD scorer + extras) and ``g2gt draw`` (tree -> SVG)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any, train_subparsers: Any) -> None:
    ev = subparsers.add_parser(
        "evaluate",
        help="score a parsed CoNLL-U file against gold (UAS, LAS, UPOS, MLAS, BLEX ...)",
        description="Score PRED against GOLD with the official CoNLL 2018 UD scorer (udtools.udeval, shipped "
        "with stanza): Tokens, Sentences, Words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS, LAS, CLAS, MLAS, "
        "BLEX as precision/recall/F1. Words are aligned on the underlying text, so PRED may be tokenised "
        "differently, but both files must contain the same characters. LAS ignores relation subtypes.",
        epilog="Example: g2gt evaluate en_ewt-ud-dev.conllu pred.conllu --no-punct --per-relation",
    )
    ev.add_argument("gold", metavar="GOLD", help="gold CoNLL-U file")
    ev.add_argument("pred", metavar="PRED", help="predicted (system) CoNLL-U file")
    ev.add_argument("--no-punct", action="store_true",
                    help="also print UAS/LAS without punctuation (words whose gold UPOS is PUNCT)")
    ev.add_argument("--per-relation", action="store_true",
                    help="also print per-relation gold/predicted counts and head+label precision/recall/F1")
    ev.add_argument("--json", action="store_true",
                    help="print every figure (counts and fractions in [0, 1]) as JSON instead of tables")
    ev.add_argument("--validate", action="store_true",
                    help="also run the official UD validator (level 2) on PRED and list its errors")
    ev.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    ev.set_defaults(func=run_evaluate)

    dr = subparsers.add_parser(
        "draw",
        help="draw one sentence of a CoNLL-U file as an SVG dependency tree",
        description="Write an SVG picture of one dependency tree: words left to right with UPOS beneath, "
        "an arc from each head to its dependent labelled with the relation, and a root arrow.",
        epilog="Example: g2gt draw pred.conllu --sentence 3 -o tree.svg",
    )
    dr.add_argument("input", metavar="INPUT.conllu", help="CoNLL-U file")
    group = dr.add_mutually_exclusive_group()
    group.add_argument("--sentence", type=int, metavar="N", help="1-based sentence number (default: 1)")
    group.add_argument("--sent-id", metavar="ID", help="pick the sentence by its '# sent_id'")
    dr.add_argument("-o", "--output", default="-", metavar="FILE.svg", help="output file ('-' = stdout, default)")
    dr.add_argument("--no-upos", action="store_true", help="do not print UPOS under the words")
    dr.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    dr.set_defaults(func=run_draw)


def run_evaluate(args: argparse.Namespace) -> int:
    from ..evaluate import evaluate, validate_file

    result = evaluate(args.gold, args.pred)
    problems = validate_file(args.pred) if args.validate else None
    if args.json:
        d = result.as_dict()
        if problems is not None:
            d["validation_errors"] = problems
        print(result.to_json() if problems is None else __import__("json").dumps(d, indent=2))
        return 0
    print(result.table(no_punct=args.no_punct, per_relation=args.per_relation))
    if problems is not None:
        print(f"\nUD validator (level 2) on {args.pred}: {len(problems)} error(s)")
        for p in problems[:50]:
            print("  " + p)
        if len(problems) > 50:
            print(f"  ... {len(problems) - 50} more")
    return 0


def run_draw(args: argparse.Namespace) -> int:
    from ..draw import draw_conllu

    svg = draw_conllu(args.input, sentence=args.sentence, sent_id=args.sent_id, show_upos=not args.no_upos)
    if args.output == "-":
        sys.stdout.write(svg)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(svg)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
