"""Speed and accuracy of a trained segmenter on the raw text of a CoNLL-U file.

    python -m g2gt.ud.tokenize.bench --model runs/segmenter --conllu $G2GT_DATA/ud-en-ewt/en_ewt-ud-dev.conllu \\
        --threads 1 [--dtype bfloat16] [--styles para wrap flat]

For each rendering style (:data:`g2gt.ud.tokenize.data.STYLES`) the documents are joined into one raw text (a
blank line between documents) and segmented with one :meth:`Segmenter.segment` call, as ``g2gt parse --raw``
would; printed: gold words per second (wall clock and process CPU time, best of ``--repeats``; CPU time is
the better estimate on a machine shared with other jobs) and tokens / sentences / words F1 by character
spans. The CoNLL-U output of every run is checked to give the text back exactly.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence

__all__ = ["main", "measure"]


def measure(seg, docs, style: str = "para", repeats: int = 3) -> dict:
    """Words/s and F1 of ``seg`` on documents rendered in ``style`` and joined into one text."""
    from .data import render_document
    from .metrics import SpanScorer
    from ..io.surface import sentence_spans, surface_tokens
    from .output import text_from_sentences

    rendered = [render_document(d, style, random.Random(i)) for i, d in enumerate(docs)]
    parts, gold_tokens, gold_sents, off = [], [], [], 0
    for r in rendered:
        if parts:
            parts.append("\n\n")
            off += 2
        parts.append(r.text)
        gold_tokens += [(s + off, e + off, w) for s, e, w in r.tokens]
        gold_sents += [(s + off, e + off) for s, e in r.sentences]
        off += len(r.text)
    text = "".join(parts)
    words = sum(len(w) for _, _, w in gold_tokens)
    best_wall = best_cpu = float("inf")
    sents = []
    for _ in range(max(1, repeats)):
        w0, c0 = time.perf_counter(), time.process_time()
        sents = seg.segment(text)
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    if text_from_sentences(sents) != text:
        raise AssertionError("the segmentation does not give the text back")
    pred_tokens, pred_sents, pos = [], [], 0
    for s in sents:
        spans, pos = sentence_spans(s, text, pos)
        toks = surface_tokens(s)
        for t in toks:
            start, end = spans[t.row]
            pred_tokens.append((start, end, [s.rows[k]["form"] for k in t.word_rows]))
        pred_sents.append((spans[toks[0].row][0], pos))
    scorer = SpanScorer()
    scorer.add(gold_tokens, gold_sents, pred_tokens, pred_sents)
    out = {"style": style, "chars": len(text), "words": words, "sentences_out": len(sents),
           "words_per_s_wall": words / best_wall, "words_per_s_cpu": words / best_cpu}
    out.update(scorer.scores())
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m g2gt.ud.tokenize.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="segmenter training folder or checkpoint")
    p.add_argument("--conllu", required=True, help="CoNLL-U file whose documents give the raw text")
    p.add_argument("--styles", nargs="+", default=["para"], help="renderings to measure (default: para)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads (default: 1)")
    p.add_argument("--dtype", default=None, help="cast the weights, e.g. bfloat16")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per style (best is kept)")
    ns = p.parse_args(argv)

    from ..io import read_conllu
    from ...core.train import set_threads
    from .data import documents_from_sentences
    from .segmenter import Segmenter

    set_threads(ns.threads)
    seg = Segmenter.load(ns.model, dtype=ns.dtype)
    docs = documents_from_sentences(read_conllu(ns.conllu))
    seg.segment("Warm up. Twice.")
    for style in ns.styles:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v
                          for k, v in measure(seg, docs, style, ns.repeats).items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
