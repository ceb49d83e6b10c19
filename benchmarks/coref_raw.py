"""Coreference from raw text through the whole pipeline, scored against a CorefUD treebank, and its speed.

Each gold document's text (its sentences' ``# text`` joined by spaces) goes through ``nlp(text)`` and
``nlp(text, coref=True)`` of one model folder (with ``coref.pt``), interleaved document by document in one
process; the coreference output is scored against the gold file with mentions moved onto the gold words by
characters (:func:`g2gt.ud.coref.metrics.coref_report`), and both speeds are printed::

    python benchmarks/coref_raw.py --model MODEL_DIR --gold en_gum-ud-dev.conllu.gz --out pred_raw.conllu

``--gold-tokens`` runs the pipeline on the gold words instead (predicted tags and trees, gold tokenisation).
"""

from __future__ import annotations

import argparse
import time

import torch

import g2gt
from g2gt.ud.coref.io import documents
from g2gt.ud.coref.metrics import coref_report, coref_table
from g2gt.ud.io.conllu import read_conllu, write_conllu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a model folder with coref.pt")
    ap.add_argument("--gold", required=True, help="CoNLL-U with # newdoc, # text and Entity=")
    ap.add_argument("--out", required=True, help="the pipeline's CoNLL-U with Entity=")
    ap.add_argument("--gold-tokens", action="store_true", help="parse the gold words instead of the raw text")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    nlp = g2gt.load(args.model, device="cpu", threads=args.threads)
    gold = read_conllu(args.gold)
    out, t_plain, t_coref, words = [], 0.0, 0.0, 0
    for doc in documents(gold):
        x = [s.copy() for s in doc] if args.gold_tokens else " ".join(s.text or " ".join(s.forms) for s in doc)
        t0 = time.perf_counter()
        plain = nlp(x)
        t1 = time.perf_counter()
        res = list(nlp(x, coref=True))
        t2 = time.perf_counter()
        t_plain, t_coref = t_plain + t1 - t0, t_coref + t2 - t1
        words += sum(len(s) for s in plain)
        name = doc[0].metadata.get("newdoc id") or f"doc{len(out)}"
        res[0].metadata["newdoc id"] = name
        for s in res:  # sentence ids unique across documents, as the UD validator wants
            s.metadata["sent_id"] = f"{name}-{s.metadata.get('sent_id', '')}"
        out += res
    write_conllu(out, args.out)
    print(coref_table(coref_report(gold, out)))
    print(f"speed: {words / t_plain:.0f} words/s without coreference, {words / t_coref:.0f} words/s with it "
          f"(ratio {t_plain / t_coref:.2f}; {words} words, {args.threads} thread(s))")


if __name__ == "__main__":
    main()
