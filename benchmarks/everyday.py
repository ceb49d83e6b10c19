"""Everyday input: each model on short texts people type first ("Hi.", "Thanks!", "Hi. How are you?").

Treebank dev sets are long documents of edited or web text; a model can score well on them and still cut
``Hi.`` wrong. The everyday sets (``g2gt/data/everyday/LANG_everyday.conllu``, written and checked by hand
following the UD guidelines and the conventions of the language's training treebank: EWT for English,
Sequoia for French) hold about 30-40 short texts each: greetings, thanks, short commands, questions, short
statements, a few lines of two sentences. Each text (one line of ``LANG_everyday.txt``) is parsed *alone*, as
``g2gt parse --text "..."`` or ``nlp(text)`` does, and the outputs together are scored against the gold file
with the official CoNLL 2018 scorer (:func:`g2gt.ud.evaluate.evaluate`): Tokens, Sentences, UPOS, UAS, LAS
(also Words, Lemmas, CLAS and BLEX with ``--json``; the sets have no XPOS or features).

    python benchmarks/everyday.py                      # every shipped or installed model with a set
    python benchmarks/everyday.py --model en_ewt --model runs/fr/model
    python benchmarks/everyday.py --update-cards       # write the scores into each model's model.json

The sets are small (a sentence is 2-3 % of a set): compare models on them, do not tune on them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import g2gt.data  # noqa: E402

EVERYDAY_DIR = Path(g2gt.data.__file__).resolve().parent / "everyday"
SHOWN = ("Tokens", "Sentences", "UPOS", "UAS", "LAS")
#: the metrics the gold files support (their XPOS, FEATS and DEPS are ``_``)
SCORED = ("Tokens", "Sentences", "Words", "UPOS", "Lemmas", "UAS", "LAS", "CLAS", "BLEX")
CARD_KEY = "everyday_scores_official_scorer"


def everyday_set(language: str) -> tuple[Path, Path] | None:
    """``(gold CoNLL-U, raw text)`` of a language's everyday set, or None when it has none."""
    gold, raw = EVERYDAY_DIR / f"{language}_everyday.conllu", EVERYDAY_DIR / f"{language}_everyday.txt"
    return (gold, raw) if gold.is_file() and raw.is_file() else None


def texts_of(raw: Path) -> list[str]:
    """The set's input texts: one per non-empty line."""
    return [line for line in raw.read_text(encoding="utf-8").splitlines() if line.strip()]


def score_model(model: str, dtype: str = "auto") -> tuple[str, dict] | None:
    """``(language, {metric: F1 x 100})`` of ``model`` on its language's everyday set; None without a set."""
    from g2gt.ud.evaluate import evaluate
    from g2gt.ud.io.conllu import read_conllu
    from g2gt.core.registry import model_card
    from g2gt.ud.pipeline import Pipeline

    language = model_card(model).get("language")
    found = everyday_set(language) if language else None
    if found is None:
        return None
    gold_file, raw = found
    nlp = Pipeline.load(model, dtype=dtype)
    pred = [s for text in texts_of(raw) for s in nlp(text)]  # each text alone
    ev = evaluate(read_conllu(gold_file), pred, gold_name=str(gold_file), pred_name=str(model))
    return language, {k: round(ev.scores[k].f1 * 100, 2) for k in SCORED}


def card_entry(language: str, scores: dict) -> dict:
    """What ``--update-cards`` writes under :data:`CARD_KEY`."""
    gold, raw = everyday_set(language)
    n_texts = len(texts_of(raw))
    n_sents = sum(1 for line in gold.read_text(encoding="utf-8").splitlines() if line.startswith("# sent_id"))
    return {"raw text, each text alone": scores,
            "set": f"g2gt/data/everyday/{gold.name} ({n_texts} texts, {n_sents} sentences, written by hand)",
            "command": "python benchmarks/everyday.py --update-cards"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", default=None,
                    help="a model's name or folder (repeatable; default: every shipped or installed model)")
    ap.add_argument("--dtype", default="auto", help="inference precision, as g2gt.load (default: auto)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print every metric as JSON")
    ap.add_argument("--update-cards", action="store_true",
                    help=f"write the scores into each model folder's model.json (key {CARD_KEY!r})")
    args = ap.parse_args(argv)

    import torch

    from g2gt.core.registry import available_models, find_model, write_card

    torch.set_num_threads(args.threads)
    results = {}
    for model in args.model or available_models():
        got = score_model(model, args.dtype)
        if got is None:
            print(f"{model}: no everyday set for its language (in {EVERYDAY_DIR})", file=sys.stderr)
            continue
        results[model] = got
        if args.update_cards:
            write_card(find_model(model), {CARD_KEY: card_entry(*got)})
    if args.json:
        print(json.dumps({m: {"language": lang, "scores": sc} for m, (lang, sc) in results.items()}, indent=2))
        return 0
    print("| model | language | " + " | ".join(SHOWN) + " |")
    print("|---|---|" + "---:|" * len(SHOWN))
    for model, (lang, sc) in results.items():
        print(f"| {model} | {lang} | " + " | ".join(f"{sc[k]:.2f}" for k in SHOWN) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
