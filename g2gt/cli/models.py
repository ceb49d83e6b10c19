"""``g2gt models`` (the shipped models and their cards) and ``g2gt export-model`` (training folders ->
one small model folder, the layout of :mod:`g2gt.core.registry`)."""

from __future__ import annotations

import argparse
import json

from ..core.registry import DEFAULT_MODEL
from .common import UsageError, add_common_options, check_folder_path

EXPORT_EXAMPLE = ("  g2gt export-model --parser runs/en_combined --segmenter runs/segmenter --enhancer runs/enhanced \\\n"
                  "      --card card.json -o g2gt/models/en_combined")


def register(subparsers) -> None:
    subparsers.add_parser("models", help="list the shipped and installed models (pipelines, translators)", configure=_configure_models)
    subparsers.add_parser("export-model", help="pack trained parts into a small model folder (float16)",
                          configure=_configure_export)


def _configure_models(p: argparse.ArgumentParser) -> None:
    p.description = ("List the models shipped inside the package (g2gt/models/NAME: no download needed) and "
                     "the model packages installed in this environment (pip install models/NAME; see "
                     "'g2gt package'): UD pipelines and translators, with their kind, language, licence (a model carries the licence of its "
                     "training data: check it before commercial use), size, parts and measured scores. Use a pipeline "
                     "with 'g2gt parse --model NAME' or g2gt.load(NAME) (a language code such as 'fr' names that "
                     "language's default model; the default is en_combined), a translator with 'g2gt translate "
                     "--model NAME'.")
    p.add_argument("name", nargs="?", help="show this model's whole card (model.json)")
    add_common_options(p)
    p.set_defaults(func=run_models)


def run_models(args: argparse.Namespace) -> int:
    from ..core.registry import (
        available_models, folder_kind, installed_models, license_name, model_card, model_size, shipped_models,
    )

    if args.name:
        try:
            card = model_card(args.name)
        except FileNotFoundError as e:
            raise UsageError(str(e)) from None
        print(json.dumps(card, indent=2, ensure_ascii=False))
        return 0
    names, shipped, installed = available_models(), shipped_models(None), installed_models(None)
    if not names:
        print("no shipped or installed models in this installation")
    for name in names:
        folder = shipped.get(name) or installed[name]
        kind = folder_kind(folder)
        card = model_card(folder)
        where = "shipped" if name in shipped else f"installed package: {installed[name]}"
        default = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name}{default}\t{kind}\tlanguage: {card.get('language') or '?'}\tlicence: "
              f"{license_name(card['license'])}\t{model_size(folder) / 2**20:.1f} MB\t({where})")
        parts = "; parts: " + (", ".join(card.get("parts", {})) or "?") if kind == "pipeline" else ""
        print(f"\t{card.get('description', '')}{parts}")
        print(f"\t{_score_line(card)}")
        print(f"\tlicence: {card['license']}")
    return 0


def _score_line(card: dict) -> str:
    """The card's headline scores: a pipeline's dev LAS, UPOS, Lemmas from raw text and with gold tokenisation;
    a translator's BLEU and chrF."""
    if card.get("kind") == "translator":
        kv = [f"{data}: BLEU {sc['bleu']:.2f}" + (f", chrF {sc['chrf']:.2f}" if isinstance(sc.get("chrf"), (int, float))
                                                  else "")
              for data, sc in (card.get("scores") or {}).items() if isinstance(sc, dict)
              and isinstance(sc.get("bleu"), (int, float))]
        return "; ".join(kv) or "no scores in its card"
    scores = card.get("dev_scores_official_scorer") or card.get("dev_scores") or {}
    out = []
    for setting, short in (("raw text", "raw text"), ("gold tokenisation", "gold tok.")):
        sc = scores.get(setting) or {}
        kv = [f"{m} {sc[m]:.2f}" for m in ("Tokens", "UPOS", "Lemmas", "LAS") if isinstance(sc.get(m), (int, float))]
        if kv:
            out.append(f"{short}: " + ", ".join(kv))
    return ("dev " + "; ".join(out)) if out else "no scores in its card"


def _configure_export(p: argparse.ArgumentParser) -> None:
    p.description = ("Pack a trained parser (and optionally a segmenter and an enhanced-UD model) into one "
                     "model folder: float16 weights, no optimizer state, a model.json card. 'g2gt parse "
                     "--model FOLDER' and g2gt.load(FOLDER) then use all parts; a folder under g2gt/models/ "
                     "ships with the package (at most 25 MB).")
    p.epilog = "example:\n" + EXPORT_EXAMPLE
    p.add_argument("--parser", required=True, metavar="DIR", help="parser training folder or checkpoint")
    p.add_argument("--segmenter", metavar="DIR", help="segmenter training folder or checkpoint (raw text)")
    p.add_argument("--enhancer", metavar="DIR", help="enhanced-UD training folder or checkpoint (DEPS)")
    p.add_argument("--card", metavar="JSON", help="a JSON file of facts for model.json (description, "
                   "training commands, scores)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="the model folder to write")
    p.add_argument("--storage-dtype", choices=["float16", "bfloat16", "float32"], default="float16",
                   help="how floating-point weights are stored (default: float16; loading casts them back)")
    p.add_argument("--max-mb", type=float, default=25.0, help="refuse larger models (default: 25)")
    add_common_options(p)
    p.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    check_folder_path(args.out, "-o")
    card = {}
    if args.card:
        try:
            with open(args.card, encoding="utf-8") as f:
                card = json.load(f)
        except json.JSONDecodeError as e:
            raise UsageError(f"--card {args.card}:{e.lineno}: not valid JSON ({e.msg})") from None
        if not isinstance(card, dict):
            raise UsageError(f"--card {args.card}: expected a JSON object")
    from ..ud.recipe.export import export_model

    written = export_model(args.out, args.parser, args.segmenter, args.enhancer, card, args.storage_dtype,
                           max_mb=args.max_mb)
    total = sum(p["bytes"] for p in written["parts"].values()) / 2**20
    print(f"wrote {args.out}: {', '.join(written['parts'])} ({total:.1f} MB)")
    return 0
