"""Parser inference on a CUDA device: words per second and peak memory for the batch budget and the batches
decoded ahead, and how often the tree decoder leaves the device.

Runs :func:`g2gt.ud.parse.decode.decode_sentences` (the path of ``Parser.predict``) on a CoNLL-U file (default:
UD EWT dev, gold tokenisation) with the shipped parser on ``cuda`` in its default precision, for

* ``batch_tokens=3000, ahead=1``: the CPU budget, one batch at a time;
* ``batch_tokens=None, ahead=1``: the device's budget (:func:`g2gt.core.batch.inference_batch_tokens`);
* ``batch_tokens=None, ahead=None``: and two batches in flight (:mod:`g2gt.ud.parse.overlap`);

each ``--repeats`` times (best wall time, after :func:`torch.cuda.synchronize`), with the peak memory
allocated, the heads' agreement with the first configuration (batch composition may move bfloat16 scores) and the
share of sentence passes whose greedy heads were no tree (decoded on the CPU). Without CUDA it says so and
exits 0::

    python benchmarks/gpu_inference.py                   # about a minute on an H100
    python benchmarks/gpu_inference.py --repeats 1 --sentences 500
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from g2gt.core.batch import inference_batch_tokens  # noqa: E402
from g2gt.data import EWT_DEV, EWT_SAMPLE_DEV, find_data  # noqa: E402
from g2gt.ud.io.conllu import read_conllu  # noqa: E402
from g2gt.ud.parse import Parser, trees  # noqa: E402
from g2gt.ud.parse.decode import decode_sentences  # noqa: E402

CONFIGS = ((3000, 1), (None, 1), (None, None))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="en_combined", help="a shipped parser's name or a model folder")
    ap.add_argument("--data", default=None, help="CoNLL-U to parse (default: UD EWT dev)")
    ap.add_argument("--sentences", type=int, default=None, help="the first N sentences only")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cuda", help="cuda (default); cpu for a dry run of this script")
    args = ap.parse_args(argv)
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        print("gpu_inference: no CUDA device, nothing to measure")
        return 0
    data = args.data or find_data(EWT_DEV) or EWT_SAMPLE_DEV
    sents = read_conllu(data)[: args.sentences]
    words = sum(len(s.forms) for s in sents)
    parser = Parser.load(args.model, device=args.device)
    name = torch.cuda.get_device_name(0) if cuda else "cpu"
    print(f"{name}, torch {torch.__version__}, {parser.dtype}; {len(sents)} sentences, {words} words; device "
          f"budget {inference_batch_tokens(args.device)} tokens")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    passes = {"all": 0, "cpu": 0}
    greedy = trees.greedy_heads

    def counting(scores, lengths):
        heads, ok = greedy(scores, lengths)
        passes["all"] += ok.numel()
        passes["cpu"] += int((~ok).sum())
        return heads, ok

    trees.greedy_heads = counting

    def run(bt, ahead):
        return decode_sentences(parser.model, parser.vocab, sents, parser.max_distance, parser.refine_steps,
                                batch_tokens=bt, lemmatizer=parser.lemmatizer, ahead=ahead)

    run(None, None)  # warm-up: kernels, allocator
    first = None
    for bt, ahead in CONFIGS:
        best, out = float("inf"), None
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        passes.update(all=0, cpu=0)
        for _ in range(args.repeats):
            sync()
            t0 = time.perf_counter()
            out = run(bt, ahead)
            sync()
            best = min(best, time.perf_counter() - t0)
        heads = [h for s in out for h in s.heads]
        first = heads if first is None else first
        agree = sum(a == b for a, b in zip(heads, first)) / max(len(heads), 1)
        peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else float("nan")
        print(f"batch_tokens={bt} ahead={ahead}: {words / best:,.0f} words/s, {best:.2f} s, peak "
              f"{peak:,.0f} MiB, heads as the first {100 * agree:.2f} %, "
              f"CPU tree decoding for {passes['cpu']} of {passes['all']} sentence passes")
    trees.greedy_heads = greedy
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
