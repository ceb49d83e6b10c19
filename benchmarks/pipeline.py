"""The whole pipeline on raw text: speed and the 13 CoNLL 2018 metrics (plus ELAS / EULAS).

The documents of a CoNLL-U file (default: UD EWT dev) are rendered back to their raw text (``# text`` and
``SpaceAfter``; the sentences of a paragraph on one line, a line break between paragraphs, a blank line between
documents; ``--style wrap`` writes the text as UD's ``conllu_to_text.pl`` does for the raw-text test files: a blank
line between paragraphs, lines wrapped at 60-100 characters) and given to the model as
one string, exactly as ``g2gt parse --raw`` does: learned tokenizer + sentence splitter -> parser with its
tagger and lemma heads (-> enhanced UD with ``--enhanced``). The same model then parses the file's gold
tokenisation (the baseline of the speed ratio: the parser alone). Both outputs are scored with the official
scorer (``g2gt evaluate``).

    python benchmarks/pipeline.py --model en_ewt --threads 1 --out runs/pipeline_eval [--enhanced]

Speed is gold words per second, best of ``--repeats`` (wall clock and process CPU time; CPU time is the
better estimate on a machine shared with other jobs).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from g2gt.core._compat import keep_freed_memory  # noqa: E402
from g2gt.data import EWT_DEV, find_data  # noqa: E402
from g2gt.ud.evaluate import METRICS, evaluate  # noqa: E402
from g2gt.ud.io.conllu import read_conllu, write_conllu  # noqa: E402
from g2gt.ud.pipeline import Pipeline  # noqa: E402
from g2gt.ud.tokenize import text_from_sentences  # noqa: E402
from g2gt.ud.tokenize.data import STYLES, documents_from_sentences, render_document  # noqa: E402


def raw_text(gold, style: str = "para") -> str:
    """The documents of ``gold`` as one raw text, each rendered in ``style``
    (:data:`g2gt.ud.tokenize.data.STYLES`; ``para``: a line per paragraph), a blank line between documents."""
    docs = documents_from_sentences(gold)
    return "\n\n".join(render_document(d, style, random.Random(i)).text for i, d in enumerate(docs)) + "\n"


def timed(fn, repeats: int):
    best_wall = best_cpu = float("inf")
    out = None
    for _ in range(max(1, repeats)):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return out, best_wall, best_cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="en_ewt", help="shipped model name or model folder (default: en_ewt)")
    ap.add_argument("--data", default=None, help="gold CoNLL-U (default: UD EWT dev)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--refine-steps", type=int, default=None, help="default: the model's")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "int8", "auto"],
                    help="every stage's inference precision (g2gt.load(dtype=...)); default float32")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--enhanced", action="store_true", help="also predict DEPS (ELAS / EULAS)")
    ap.add_argument("--out", default=None, help="folder for the predicted files and scores.json")
    ap.add_argument("--json", action="store_true", help="print the scores as JSON")
    ap.add_argument("--limit", type=int, default=0, help="only the first N sentences (a quick check)")
    ap.add_argument("--style", default="para", choices=STYLES,
                    help="how the raw text is laid out (default para: a line per paragraph; wrap: blank lines "
                         "between paragraphs and wrapped lines, as UD's raw-text files)")
    args = ap.parse_args(argv)

    data = Path(args.data) if args.data else find_data(EWT_DEV)
    if data is None or not data.exists():
        print("no data: pass --data FILE or set G2GT_DATA", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as the g2gt command does
    gold = read_conllu(data)
    if args.limit:
        gold = gold[: args.limit]
    text = raw_text(gold, args.style)
    words = sum(len(s) for s in gold)
    nlp = Pipeline.load(args.model, dtype=args.dtype)
    kw = dict(refine_steps=args.refine_steps, enhanced=args.enhanced)
    with torch.inference_mode():
        nlp.parse("Warm up the kernels.", **kw)
        raw_pred, raw_wall, raw_cpu = timed(lambda: nlp.parse(text, **kw), args.repeats)
        gold_pred, gold_wall, gold_cpu = timed(lambda: nlp.parse(gold, **kw), args.repeats)
    if text_from_sentences(raw_pred) != text:
        raise AssertionError("the pipeline's output does not give the input text back")
    rows = {}
    for name, pred in (("raw text", raw_pred), ("gold tokenisation", gold_pred)):
        ev = evaluate(gold, pred, gold_name=str(data), pred_name=name)
        shown = [k for k in METRICS if k in ev.scores and (args.enhanced or k not in ("ELAS", "EULAS"))]
        rows[name] = {k: round(ev.scores[k].f1 * 100, 2) for k in shown}
    speed = {"raw text": (words / raw_wall, words / raw_cpu), "gold tokenisation": (words / gold_wall, words / gold_cpu)}
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_conllu(raw_pred, out / "pred_raw.conllu")
        write_conllu(gold_pred, out / "pred_gold_tok.conllu")
        (out / "scores.json").write_text(json.dumps({"scores": rows, "words_per_s": speed}, indent=2) + "\n")
    if args.json:
        print(json.dumps({"scores": rows, "words_per_s": speed}, indent=2))
        return 0
    print(f"{data.name}: {len(gold)} sentences, {words} words; model {args.model}, {args.threads} thread(s), "
          f"dtype {args.dtype}, refine steps {nlp.parser.refine_steps if args.refine_steps is None else args.refine_steps}")
    metrics = [k for k in METRICS if k in rows["raw text"]]
    print("| input | " + " | ".join(metrics) + " |")
    print("|---|" + "---:|" * len(metrics))
    for name, r in rows.items():
        print(f"| {name} | " + " | ".join(f"{r[k]:.2f}" for k in metrics) + " |")
    print()
    print("| input | words/s (wall) | words/s (CPU) | CPU speed / parser alone |")
    print("|---|---:|---:|---:|")
    base = speed["gold tokenisation"][1]
    for name, (w, c) in speed.items():
        print(f"| {name} | {w:,.0f} | {c:,.0f} | {c / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
