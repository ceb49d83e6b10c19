"""Translation at an equal training budget: chain-graph labels vs absolute positions vs torch.nn.Transformer.

Systems (same data, BPE, batches, optimiser, schedule, model size and budget):

  (a) g2gt   G2GTransformer, relative-position chain labels in encoder and decoder, no absolute positions
  (b) abs    G2GTransformer, sinusoidal absolute positions, no labels (a plain Transformer on our core)
  (c) torch  torch.nn.Transformer (pre-LN, batch_first) with sinusoidal positions -- the baseline
  (g) graph  only with --src-graphs: (a) plus the source dependency channel; every system then reads
             the same CoNLL-U words, so (a) and (g) differ only in the parse channel

The systems train *interleaved* in one process, in slices of --slice seconds, each until it has used
--minutes of **process CPU time** (not wall time: the machine is shared, and CPU time is what a system
actually consumed). Training throughput = target tokens / CPU second. Then each translates the dev set
greedily and is scored with sacreBLEU (cased, detokenized BLEU and chrF). Ratios are to (c). Every system
trains under the CLI's autocast rule (``--amp``, default ``auto``: bf16 on CPUs with native bf16).

    OMP_NUM_THREADS=1 python benchmarks/seq2seq.py --minutes 5 --threads 1
    g2gt bench seq2seq --minutes 5 --threads 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
from torch import Tensor, nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from g2gt.core._compat import keep_freed_memory  # noqa: E402
from g2gt.core.graph import LabelVocab  # noqa: E402
from g2gt.nn.transformer import sinusoidal_positions  # noqa: E402
from g2gt.core.schedule import estimate_total_steps, lr_multiplier  # noqa: E402
from g2gt.seq2seq import (  # noqa: E402
    Seq2SeqConfig, Seq2SeqTask, mt_scores, read_lines, seq2seq_train_config,
)
from g2gt.seq2seq.task import SUBWORD_LABEL  # noqa: E402
from g2gt.seq2seq.subword import SubwordTokenizer  # noqa: E402
from g2gt.core.train import TrainConfig, autocast_context, autocast_dtype  # noqa: E402


class TorchTransformer(nn.Module):
    """``torch.nn.Transformer`` with shared, scaled embeddings, sinusoidal positions and a tied
    output layer, exposing the G2GTransformer interface the task and greedy search use
    (``forward``, ``encode``, ``init_cache``, ``decode``). Decoding re-runs the decoder on the
    whole prefix (nn.Transformer has no KV cache); only evaluation decodes."""

    def __init__(self, vocab: int, d_model: int, heads: int, enc_layers: int, dec_layers: int, ffn: int,
                 dropout: float, pad_id: int = 0) -> None:
        super().__init__()
        self.d_model, self.pad_id = d_model, pad_id
        self.embed = nn.Embedding(vocab, d_model, padding_idx=pad_id)
        self.drop = nn.Dropout(dropout)
        import warnings

        with warnings.catch_warnings():  # "enable_nested_tensor is True, but ... norm_first" is irrelevant here
            warnings.simplefilter("ignore", UserWarning)
            self.core = nn.Transformer(d_model, heads, enc_layers, dec_layers, ffn, dropout, batch_first=True,
                                       norm_first=True)
        self.output = nn.Linear(d_model, vocab, bias=False)
        self.output.weight = self.embed.weight
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.embed.weight, std=self.d_model**-0.5)
        with torch.no_grad():
            self.embed.weight[self.pad_id].zero_()
        for p in self.core.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def _emb(self, tokens: Tensor, offset: int = 0) -> Tensor:
        pos = torch.arange(offset, offset + tokens.shape[1], device=tokens.device)
        return self.drop(self.embed(tokens) * math.sqrt(self.d_model) + sinusoidal_positions(pos, self.d_model))

    def encode(self, tokens: Tensor, labels, padding_mask: Tensor | None = None) -> Tensor:
        return self.core.encoder(self._emb(tokens), src_key_padding_mask=padding_mask)

    def init_cache(self) -> dict:
        return {"prefix": None}

    def decode(self, tokens: Tensor, memory: Tensor, memory_padding_mask=None, tgt_padding_mask=None,
               cache: dict | None = None) -> Tensor:
        if cache is not None:
            prev = cache["prefix"]
            tokens = tokens if prev is None else torch.cat([prev, tokens], 1)
            cache["prefix"] = tokens
        m = tokens.shape[1]
        causal = torch.triu(torch.full((m, m), float("-inf"), device=tokens.device), 1)
        h = self.core.decoder(self._emb(tokens), memory, tgt_mask=causal, memory_key_padding_mask=memory_padding_mask)
        return self.output(h)

    def forward(self, src_tokens, src_labels, src_padding_mask, tgt_tokens, tgt_padding_mask=None) -> Tensor:
        return self.decode(tgt_tokens, self.encode(src_tokens, None, src_padding_mask), src_padding_mask)


class System:
    """One model + optimiser + schedule + data stream, trained slice by slice.

    The learning rate follows the Trainer's budget-fitted schedule (:func:`g2gt.core.schedule.lr_multiplier`),
    with the budget in CPU seconds: before update ``s`` the total is re-estimated as ``s * budget / cpu``."""

    def __init__(self, name: str, task: Seq2SeqTask, model: nn.Module, cfg: TrainConfig, seed: int,
                 budget: float) -> None:
        self.name, self.task, self.model, self.cfg, self.budget = name, task, model, cfg, budget
        torch.manual_seed(seed)
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n and "label_" not in n]
        ids = {id(p) for p in decay}
        rest = [p for p in model.parameters() if id(p) not in ids]
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                                      {"params": rest, "weight_decay": 0.0}], lr=cfg.lr, betas=cfg.betas)
        self.epoch, self.it = 0, iter(task.train_batches(0, 0, 1))
        self.cpu, self.wall, self.tokens, self.steps, self.loss_sum = 0.0, 0.0, 0, 0, 0.0
        self.rng = torch.get_rng_state()
        self.params = sum(p.numel() for p in model.parameters())
        self.amp = autocast_dtype(torch.device("cpu"), cfg.amp)  # the CLI's autocast rule, the same for every system

    def _next(self):
        try:
            return next(self.it)
        except StopIteration:
            self.epoch += 1
            self.it = iter(self.task.train_batches(self.epoch, 0, 1))
            return next(self.it)

    def train_for(self, seconds: float, budget: float) -> None:
        torch.set_rng_state(self.rng)  # each system keeps its own dropout stream
        self.model.train()
        start = time.process_time()
        while time.process_time() - start < seconds and self.cpu < budget:
            c0, w0 = time.process_time(), time.time()
            batch = self._next()
            with autocast_context("cpu", self.amp):
                loss = self.task.loss(self.model, batch)
            n = self.task.num_tokens(batch)
            (loss / max(n, 1)).backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
            total = estimate_total_steps(self.steps + 1, self.cpu + time.process_time() - c0, self.budget)
            for group in self.opt.param_groups:
                group["lr"] = self.cfg.lr * lr_multiplier(self.cfg, self.steps + 1, total)
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            self.cpu += time.process_time() - c0
            self.wall += time.time() - w0
            self.tokens += n
            self.steps += 1
            self.loss_sum += float(loss.detach())
        self.rng = torch.get_rng_state()

    def evaluate(self, dev_src, dev_refs, dev_deps=None, beam: int = 1) -> dict:
        t0 = time.process_time()
        hyps = self.task.tgt_tok.decode_batch(self.task.translate_ids(self.model, dev_src, dev_deps, beam=beam,
                                                                      batch_size=64))
        s = mt_scores(dev_refs, hyps)
        return {"bleu": s["bleu"], "chrf": s["chrf"], "bleu_signature": s["bleu_signature"],
                "eval_cpu_s": time.process_time() - t0}


def build_arg_parser() -> argparse.ArgumentParser:
    """The benchmark's options; the recipe's defaults come from :class:`Seq2SeqConfig` and
    :func:`seq2seq_train_config` (one source)."""
    data = Path(os.environ.get("G2GT_DATA", "data")) / "multi30k"
    rc, tc = Seq2SeqConfig(), seq2seq_train_config()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0, help="CPU minutes of training per system")
    ap.add_argument("--slice", type=float, default=20.0, help="CPU seconds per interleaved training slice")
    ap.add_argument("--systems", default="a,b,c", help="comma-separated subset of a,b,c (and g with --src-graphs)")
    ap.add_argument("--src-train", default=str(data / "train.en.gz"))
    ap.add_argument("--tgt-train", default=str(data / "train.de.gz"))
    ap.add_argument("--src-dev", default=str(data / "val.en.gz"))
    ap.add_argument("--tgt-dev", default=str(data / "val.de.gz"))
    ap.add_argument("--src-graphs", default=None, help="parsed training source (CoNLL-U): adds system g")
    ap.add_argument("--dev-graphs", default=None, help="parsed dev source (CoNLL-U)")
    ap.add_argument("--train-sentences", type=int, default=0, help="use only the first N training pairs (0 = all)")
    ap.add_argument("--dev-sentences", type=int, default=0, help="score only the first N dev pairs (0 = all)")
    ap.add_argument("--bpe-vocab", type=int, default=rc.bpe_vocab)
    ap.add_argument("--d-model", type=int, default=rc.d_model)
    ap.add_argument("--layers", dest="num_layers", type=int, default=rc.num_layers)
    ap.add_argument("--heads", dest="num_heads", type=int, default=rc.num_heads)
    ap.add_argument("--ffn-dim", type=int, default=rc.ffn_dim)
    ap.add_argument("--dropout", type=float, default=rc.dropout)
    ap.add_argument("--label-smoothing", type=float, default=rc.label_smoothing)
    ap.add_argument("--max-distance", type=int, default=rc.max_distance)
    ap.add_argument("--batch-tokens", type=int, default=rc.batch_tokens, help="padded tokens per batch")
    ap.add_argument("--lr", type=float, default=tc.lr)
    ap.add_argument("--warmup", type=float, default=tc.warmup, help="warmup, a fraction of the CPU budget")
    ap.add_argument("--cooldown", type=float, default=tc.cooldown,
                    help="final fraction of the CPU budget over which the lr decays linearly to ~0")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=tc.seed)
    ap.add_argument("--amp", default=tc.amp, choices=["auto", "bf16", "none"],
                    help="training autocast for every system, as the CLI's --amp (auto: bf16 on CPUs with native bf16)")
    ap.add_argument("--beam", type=int, default=1,
                    help="beam size for the final dev translation (1 = greedy; the CLI's final eval uses 5)")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    return ap


def main(argv=None) -> int:
    ap = build_arg_parser()
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as the g2gt command does
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    graph = args.src_graphs is not None
    if graph and "g" not in systems:
        systems.append("g")
    if "g" in systems and not (graph and args.dev_graphs):
        ap.error("system g needs --src-graphs and --dev-graphs")

    tgt_train, tgt_dev = read_lines(args.tgt_train), read_lines(args.tgt_dev)
    if graph:
        from g2gt.ud.io.conllu import read_conllu

        src_train, src_dev = read_conllu(args.src_graphs, require_heads=True), read_conllu(args.dev_graphs,
                                                                                           require_heads=True)
        src_text = [" ".join(s.forms) for s in src_train]
        src_dev_text = [" ".join(s.forms) for s in src_dev]
    else:
        src_train, src_dev = read_lines(args.src_train), read_lines(args.src_dev)
        src_text, src_dev_text = src_train, src_dev
    for a, b, what in ((src_train, tgt_train, "train"), (src_dev, tgt_dev, "dev")):
        if len(a) != len(b):
            raise SystemExit(f"{what}: {len(a)} source vs {len(b)} target sentences")
    if args.train_sentences:
        src_train, tgt_train, src_text = (src_train[: args.train_sentences], tgt_train[: args.train_sentences],
                                          src_text[: args.train_sentences])
    if args.dev_sentences:
        src_dev, tgt_dev, src_dev_text = (src_dev[: args.dev_sentences], tgt_dev[: args.dev_sentences],
                                          src_dev_text[: args.dev_sentences])
    tok = SubwordTokenizer.train(list(src_text) + list(tgt_train), args.bpe_vocab)
    rel_vocab = None
    if graph:
        rel_vocab = LabelVocab.for_dependencies(sorted({r for s in src_train for r in s.deprels if r}))
        rel_vocab.add(SUBWORD_LABEL)
    recipe = Seq2SeqConfig(
        bpe_vocab=args.bpe_vocab, d_model=args.d_model, num_layers=args.num_layers, num_heads=args.num_heads,
        ffn_dim=args.ffn_dim, dropout=args.dropout, label_smoothing=args.label_smoothing, max_distance=args.max_distance,
        batch_tokens=args.batch_tokens)
    cfg = seq2seq_train_config(lr=args.lr, warmup=args.warmup, cooldown=args.cooldown, seed=args.seed, amp=args.amp)
    size = dict(d_model=args.d_model, num_heads=args.num_heads, num_encoder_layers=args.num_layers,
                num_decoder_layers=args.num_layers, ffn_dim=args.ffn_dim, dropout=args.dropout)
    budget = args.minutes * 60

    runs: dict[str, System] = {}
    dev: dict[str, tuple] = {}
    for name in systems:
        md = args.max_distance if name in ("a", "g") else 0
        st = recipe.settings(graph=(name == "g"))
        st.max_distance = md
        task = Seq2SeqTask(tok, tok, st, rel_vocab=rel_vocab if name == "g" else None, seed=args.seed)
        if name == "g":
            task.train = task.encode_pairs(src_train, tgt_train, "train")
            dids, ddeps = task.encode_graph_sources(src_dev)
        else:  # with --src-graphs every other system reads the same CoNLL-U words as text
            task.train = task.encode_pairs(src_text, tgt_train, "train")
            dids, ddeps = task.encode_sources(src_dev_text), None
        dev[name] = (dids, ddeps)
        torch.manual_seed(args.seed)
        if name == "c":
            model = TorchTransformer(tok.vocab_size, args.d_model, args.num_heads, args.num_layers, args.num_layers,
                                     args.ffn_dim, args.dropout, tok.pad_id)
        elif name == "b":
            model = task.build_model(positions="sinusoidal", decoder_max_distance=0, **size)
        else:
            model = task.build_model(positions="none", decoder_max_distance=args.max_distance, **size)
        runs[name] = System(name, task, model, cfg, args.seed, budget)

    print(f"# {len(src_train)} train pairs, {len(tgt_dev)} dev, vocab {tok.vocab_size}, {args.threads} thread(s), "
          f"{args.minutes} CPU min per system, systems {systems}", flush=True)
    t0 = time.time()
    while any(r.cpu < budget for r in runs.values()):
        for r in runs.values():
            if r.cpu < budget:
                r.train_for(args.slice, budget)
        done = {k: f"{r.cpu / 60:.1f}m/{r.steps}st" for k, r in runs.items()}
        print(f"  [{(time.time() - t0) / 60:.1f} wall min] {done}", file=sys.stderr, flush=True)
    results = {}
    for name, r in runs.items():
        ev = r.evaluate(dev[name][0], tgt_dev, dev[name][1], beam=args.beam)
        results[name] = {"params": r.params, "steps": r.steps, "epochs": r.epoch, "train_cpu_s": r.cpu,
                         "train_wall_s": r.wall, "tokens": r.tokens, "tok_per_cpu_s": r.tokens / max(r.cpu, 1e-9),
                         "train_loss": r.loss_sum / max(r.tokens, 1), **ev}
    ref_name = "c" if "c" in results else next(iter(results))
    ref = results[ref_name]
    label = {"a": "(a) g2gt chain labels", "b": "(b) g2gt sinusoidal, no labels", "c": "(c) torch.nn.Transformer",
             "g": "(g) g2gt chain + source parse"}
    print(f"\n| system | params | steps | train tok/CPU-s | x ({ref_name}) | BLEU | x ({ref_name}) | chrF |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {label[name]} | {r['params'] / 1e6:.2f}M | {r['steps']} | {r['tok_per_cpu_s']:.0f} | "
              f"{r['tok_per_cpu_s'] / ref['tok_per_cpu_s']:.2f} | {r['bleu']:.2f} | "
              f"{r['bleu'] / max(ref['bleu'], 1e-9):.2f} | {r['chrf']:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
