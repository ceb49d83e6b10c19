"""Training-step time under CPU bfloat16 autocast against float32, on the default models.

For each model this times ``--steps`` optimizer updates (forward, backward, AdamW) on the same real
batches twice per repeat, once in float32 (the baseline) and once under
``torch.autocast("cpu", torch.bfloat16)`` -- what ``amp='auto'`` picks on CPUs with native bfloat16
(:func:`g2gt.core._compat.cpu_bf16_supported`). Both run interleaved in one process, from the same initial
weights, so machine load hits them alike; the table shows the median seconds per update, the speed-up
(float32 time / bf16 time) and the mean training loss of each (they should agree closely).

* ``seq2seq``: the default ``g2gt train seq2seq`` model (Seq2SeqConfig defaults) on the first
  ``--sentences`` Multi30k En->De training pairs, batches of ``batch_tokens`` target subwords;
* ``parser``: the default ``g2gt train parser`` model (ParserConfig defaults, 4,000-word batches) on
  the first ``--sentences`` EWT training sentences.

Example::

    OMP_NUM_THREADS=1 python benchmarks/amp.py --threads 1 --data $G2GT_DATA

On a CPU without native bfloat16 the bf16 column is emulated and slower: ``amp='auto'`` stays off there.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from g2gt.core._compat import cpu_bf16_supported
from g2gt.seq2seq import read_lines
from g2gt.core.train import autocast_context, set_threads


def seq2seq_setup(data: Path, n: int):
    """(model factory, task) for the default translation recipe."""
    from g2gt.nn.transformer import G2GTransformer
    from g2gt.seq2seq.config import Seq2SeqConfig
    from g2gt.seq2seq.recipe import _new_task

    src = read_lines(data / "multi30k" / "train.en.gz")[:n]
    tgt = read_lines(data / "multi30k" / "train.de.gz")[:n]
    cfg = Seq2SeqConfig()
    task = _new_task(src, tgt, False, cfg, seed=1)
    task.train = task.encode_pairs(src, tgt, "train")
    config = task.model_config(**cfg.model_kwargs())
    return (lambda: G2GTransformer(config)), task


def parser_setup(data: Path, n: int):
    """(model factory, task) for the default parser (ParserConfig defaults, as ``g2gt train parser``)."""
    from g2gt.ud.io.conllu import read_conllu
    from g2gt.ud.parse.model import ParserModel
    from g2gt.ud.parse.task import ParsingTask
    from g2gt.ud.parse.vocab import ParserVocab

    sents = read_conllu(data / "ud-en-ewt" / "en_ewt-ud-train.conllu")[:n]
    vocab = ParserVocab.build(sents, min_freq=2, lowercase=True, tags=True)
    config = vocab.config()
    task = ParsingTask(sents, sents[:50], vocab, config.max_distance, graph_channel=config.graph_channel)
    return (lambda: ParserModel(config)), task


def time_steps(make_model, task, batches, bf16: bool) -> tuple[float, float]:
    """(median seconds per update, mean loss per token) over ``batches``, from fresh weights."""
    torch.manual_seed(0)
    model = make_model()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times, losses = [], []
    for batch in batches:
        t0 = time.perf_counter()
        with autocast_context("cpu", torch.bfloat16 if bf16 else None):
            loss = task.loss(model, batch) / max(1, task.num_tokens(batch))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
        losses.append(float(loss.detach()))
    return statistics.median(times[1:] or times), statistics.fmean(losses)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.environ.get("G2GT_DATA", "data"), help="folder with multi30k/ and ud-en-ewt/")
    ap.add_argument("--models", default="seq2seq,parser", help="comma-separated: seq2seq, parser")
    ap.add_argument("--sentences", type=int, default=4000, help="training sentences to batch from")
    ap.add_argument("--steps", type=int, default=8, help="updates timed per model, dtype and repeat")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    set_threads(args.threads)
    data = Path(args.data)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), native CPU bf16: {cpu_bf16_supported()}")
    print("| model | float32 s/update | bf16 s/update | speed-up | float32 loss | bf16 loss |")
    print("|---|---|---|---|---|---|")
    for name in args.models.split(","):
        setup = {"seq2seq": seq2seq_setup, "parser": parser_setup}.get(name)
        if setup is None:
            print(f"error: unknown model {name!r} (expected seq2seq or parser)", file=sys.stderr)
            return 2
        make_model, task = setup(data, args.sentences)
        batches = [b for _, b in zip(range(args.steps), task.train_batches(0, 0, 1))]
        res = {False: [], True: []}
        for _ in range(args.repeats):
            for bf16 in (False, True):
                res[bf16].append(time_steps(make_model, task, batches, bf16))
        f32 = statistics.median(t for t, _ in res[False])
        b16 = statistics.median(t for t, _ in res[True])
        print(f"| {name} | {f32:.3f} | {b16:.3f} | {f32 / b16:.2f}x | {res[False][0][1]:.4f} | {res[True][0][1]:.4f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
