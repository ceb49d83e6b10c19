"""``g2gt evaluate`` (official CoNLL 2018 UD scorer + extras) and ``g2gt draw`` (tree -> SVG)."""

from __future__ import annotations

import argparse
import json
import sys

from .common import UsageError, add_common_options, check_input_path, check_output_path, positive_int
from ..core.registry import DEFAULT_MODEL


def register(subparsers) -> None:
    subparsers.add_parser("evaluate", help="score a parsed CoNLL-U file against gold (UAS, LAS, UPOS, MLAS, BLEX ...)",
                          configure=_configure_evaluate)
    subparsers.add_parser("draw", help="draw one sentence of a CoNLL-U file as an SVG dependency tree",
                          configure=_configure_draw)


def _configure_evaluate(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Score PRED against GOLD with the official CoNLL 2018 UD scorer (udtools.udeval, shipped with stanza): "
        "Tokens, Sentences, Words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS, LAS, CLAS, MLAS, BLEX, and ELAS / "
        "EULAS on the enhanced graphs (DEPS), as precision / recall / F1. Words are aligned on the underlying "
        "text, so PRED may be tokenised differently, but both files must contain the same characters. LAS "
        "ignores relation subtypes. --no-punct and --per-relation need PRED to have GOLD's words (gold "
        "tokenisation).")
    p.epilog = "example: g2gt evaluate en_ewt-ud-dev.conllu pred.conllu --no-punct --per-relation"
    p.add_argument("gold", metavar="GOLD", help="gold CoNLL-U file")
    p.add_argument("pred", metavar="PRED", help="predicted (system) CoNLL-U file")
    p.add_argument("--no-punct", action="store_true",
                   help="also print UAS/LAS without punctuation (words whose gold UPOS is PUNCT)")
    p.add_argument("--per-relation", action="store_true",
                   help="also print per-relation gold/predicted counts and head+label precision/recall/F1")
    p.add_argument("--json", action="store_true",
                   help="print every figure (counts and fractions in [0, 1]) as JSON instead of tables")
    p.add_argument("--validate", action="store_true",
                   help="also run the official UD validator (level 2) on PRED and list its errors")
    add_common_options(p, uses=("debug",))
    p.set_defaults(func=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> int:
    from ..ud.evaluate import evaluate, validate_file

    check_input_path(args.gold, "GOLD")
    check_input_path(args.pred, "PRED")
    result = evaluate(args.gold, args.pred)
    if (args.no_punct or args.per_relation) and not result.same_words:
        raise UsageError(f"--no-punct and --per-relation need {args.pred} to have exactly the words of {args.gold} "
                         "(gold tokenisation); the official scores (without those options) work for any tokenisation")
    problems = validate_file(args.pred) if args.validate else None
    coref = _coref_report(args.gold, args.pred)
    if args.json:
        d = result.as_dict()
        if problems is not None:
            d["validation_errors"] = problems
        if coref is not None:
            d["coreference"] = coref
        print(json.dumps(d, indent=2))
        return 0
    print(result.table(no_punct=args.no_punct, per_relation=args.per_relation))
    if coref is not None:
        from ..ud.coref.metrics import coref_table

        print("\n" + coref_table(coref))
    if problems is not None:
        print(f"\nUD validator (level 2) on {args.pred}: {len(problems)} error(s)")
        for p in problems[:50]:
            print("  " + p)
        if len(problems) > 50:
            print(f"  ... {len(problems) - 50} more")
    return 0


def _coref_report(gold: str, pred: str) -> dict | None:
    """The coreference scores when both files carry CorefUD ``Entity=`` annotations (else None)."""
    from ..ud.coref.metrics import coref_report, has_entities
    from ..ud.io.conllu import read_conllu

    g, p = read_conllu(gold), read_conllu(pred)
    if not (has_entities(g) and has_entities(p)):
        return None
    try:
        return coref_report(g, p)
    except ValueError as e:  # the UD scores still count; say why coreference has none
        print(f"coreference not scored: {e}", file=sys.stderr)
        return None


def _configure_draw(p: argparse.ArgumentParser) -> None:
    p.description = ("Write an SVG picture of one dependency tree: words left to right with UPOS beneath, an arc "
                     "from each head to its dependent labelled with the relation, and a root arrow.")
    p.epilog = ("examples:\n  g2gt draw pred.conllu --sentence 3 -o tree.svg\n"
                "  g2gt draw --text 'The cat sat on the mat.' -o tree.svg     # parsed by the shipped en_combined model\n"
                "  g2gt draw --coref --text 'Mary met John. She gave him her book.' --sentence 2 -o tree.svg")
    p.add_argument("input", nargs="?", metavar="INPUT.conllu", help="CoNLL-U file (or give --text)")
    p.add_argument("--text", help="raw text to parse with --model and draw (instead of INPUT)")
    p.add_argument("--model", default=DEFAULT_MODEL, metavar="NAME|DIR",
                   help="the model that parses --text (default: en_combined, shipped)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--sentence", type=positive_int, metavar="N", help="1-based sentence number (default: 1)")
    group.add_argument("--sent-id", metavar="ID", help="pick the sentence by its '# sent_id'")
    p.add_argument("-o", "--output", default="-", metavar="FILE.svg", help="output file ('-' = stdout, default)")
    p.add_argument("--no-upos", action="store_true", help="do not print UPOS under the words")
    p.add_argument("--coref", action="store_true",
                   help="mark coreference mentions under the words, one colour per entity (singletons unmarked): "
                        "the Entity= items of INPUT's MISC, or --text resolved by the model's coref stage")
    add_common_options(p, uses=("debug",))
    p.set_defaults(func=run_draw)


def run_draw(args: argparse.Namespace) -> int:
    if (args.input is None) == (args.text is None):
        raise UsageError("give either INPUT.conllu or --text")
    check_input_path(args.input, "INPUT")
    check_output_path(args.output, "-o", inputs=(args.input,))
    from ..ud.draw import draw_conllu, draw_sentences
    from ..core.output import open_output

    kw = dict(sentence=args.sentence, sent_id=args.sent_id, show_upos=not args.no_upos, coref=args.coref)
    if args.text is not None:
        from .parsing import load_pipeline

        sents = load_pipeline(args, "cpu")(args.text, coref=args.coref)
        if not sents:
            raise UsageError("--text contains no words")
        svg = draw_sentences(sents, "--text", **kw)
    else:
        svg = draw_conllu(args.input, **kw)
    if not svg:
        raise UsageError(f"{args.input or '--text'}: nothing to draw")
    with open_output(args.output) as f:
        f.write(svg)
    if args.output != "-":
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
