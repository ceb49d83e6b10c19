"""``g2gt train seq2seq``, ``g2gt translate`` and ``g2gt evaluate-mt``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

DEFAULT_PAIR = ("en", "de")


def default_data_dir() -> Path:
    """``$G2GT_DATA/multi30k`` if set, else ``../shared/data/multi30k`` relative to the repository root."""
    env = os.environ.get("G2GT_DATA")
    if env:
        return Path(env) / "multi30k"
    return Path(__file__).resolve().parents[2].parent / "shared" / "data" / "multi30k"


def _set_threads(n: int | None) -> None:
    if n:
        import torch

        torch.set_num_threads(n)
        os.environ.setdefault("RAYON_NUM_THREADS", str(n))  # the tokenizers library


# ---------------------------------------------------------------------------- train
def _add_train(train_sub) -> None:
    d = default_data_dir()
    s, t = DEFAULT_PAIR
    p = train_sub.add_parser(
        "seq2seq", help="train a translation model (sequence or graph to sequence)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Train an encoder-decoder G2GTransformer on aligned text files (plain or .gz, one sentence a "
        "line). The source is a chain graph with relative-position labels; with --src-graphs the encoder also "
        "reads the source dependency parse as a second label channel. Subwords: byte-level BPE trained on the "
        "training data and stored inside the checkpoint. Writes OUT/best.pt (best dev BLEU), OUT/last.pt "
        "(resumable), OUT/log.jsonl and, at the end, OUT/dev.hyp + OUT/final.json (full dev set, beam search).",
        epilog="Defaults read Multi30k en->de from $G2GT_DATA/multi30k or ../shared/data/multi30k.")
    io = p.add_argument_group("data")
    io.add_argument("--src-train", default=None,
                    help=f"training source sentences (default: {d / f'train.{s}.gz'}, unless --src-graphs is given)")
    io.add_argument("--tgt-train", default=str(d / f"train.{t}.gz"), help="training target sentences")
    io.add_argument("--src-dev", default=None,
                    help=f"dev source sentences (default: {d / f'val.{s}.gz'}, unless --src-dev-graphs is given)")
    io.add_argument("--tgt-dev", default=str(d / f"val.{t}.gz"), help="dev target sentences (references)")
    io.add_argument("--src-graphs", default=None, metavar="FILE.conllu",
                    help="parsed training source, one CoNLL-U sentence per target line: turns on the dependency "
                    "channel (the source words then come from this file, --src-train is only checked for count)")
    io.add_argument("--src-dev-graphs", default=None, metavar="FILE.conllu", help="parsed dev source (with --src-graphs)")
    io.add_argument("--out", required=True, help="output folder for checkpoints and logs")
    io.add_argument("--max-len", type=int, default=256, help="subwords kept per sentence (longer ones are truncated, "
                    "with a warning that counts them)")
    tok = p.add_argument_group("subwords")
    tok.add_argument("--bpe-vocab", type=int, default=8000, help="BPE vocabulary size (per side when separate)")
    tok.add_argument("--joint-vocab", action=argparse.BooleanOptionalAction, default=True,
                     help="one BPE vocabulary for both sides, with shared source/target embeddings")
    m = p.add_argument_group("model")
    m.add_argument("--d-model", type=int, default=256)
    m.add_argument("--layers", type=int, default=3, help="encoder and decoder layers (each)")
    m.add_argument("--encoder-layers", type=int, default=None, help="overrides --layers for the encoder")
    m.add_argument("--decoder-layers", type=int, default=None, help="overrides --layers for the decoder")
    m.add_argument("--heads", type=int, default=4)
    m.add_argument("--ffn", type=int, default=1024, help="feed-forward width")
    m.add_argument("--dropout", type=float, default=0.1)
    m.add_argument("--attention-dropout", type=float, default=0.0)
    m.add_argument("--positions", choices=["none", "sinusoidal", "learned"], default="none",
                   help="absolute position embeddings added to the token embeddings (none = relative labels only)")
    m.add_argument("--max-distance", type=int, default=16,
                   help="clip distance k of the relative-position labels (encoder chain channel and decoder); "
                   "0 = no relative labels (use with --positions sinusoidal)")
    m.add_argument("--value-labels", action=argparse.BooleanOptionalAction, default=False,
                   help="also add label embeddings to the attention values (Shaw et al.); keys only is faster")
    o = p.add_argument_group("optimisation")
    o.add_argument("--lr", type=float, default=1e-3)
    o.add_argument("--warmup", type=int, default=2000, help="warmup steps (then inverse square root decay)")
    o.add_argument("--cooldown", type=float, default=0.0,
                   help="final fraction of the budget (--max-steps, else --max-minutes) over which the learning "
                        "rate decays linearly to 0 (default 0: inverse square root decay only)")
    o.add_argument("--weight-decay", type=float, default=0.01)
    o.add_argument("--label-smoothing", type=float, default=0.1)
    o.add_argument("--max-tokens", type=int, default=4096, help="padded tokens per batch")
    o.add_argument("--accum", type=int, default=1, help="gradient accumulation steps")
    o.add_argument("--max-minutes", type=float, default=0.0, help="wall-clock training budget (0 = none)")
    o.add_argument("--max-steps", type=int, default=0)
    o.add_argument("--epochs", type=int, default=1000)
    o.add_argument("--seed", type=int, default=1)
    e = p.add_argument_group("evaluation")
    e.add_argument("--eval-every", type=int, default=1000, help="steps between dev evaluations")
    e.add_argument("--eval-sentences", type=int, default=500,
                   help="dev sentences translated (greedy) at each evaluation; 0 = all")
    e.add_argument("--final-beam", type=int, default=5, help="beam size of the final full-dev translation (0 = skip)")
    e.add_argument("--lenpen", type=float, default=1.0, help="length penalty exponent of beam search")
    r = p.add_argument_group("runtime")
    r.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    r.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1 ...")
    r.add_argument("--resume", action="store_true", help="continue from OUT/last.pt (same tokenizer and settings)")
    r.add_argument("--no-progress", action="store_true", help="no tqdm bars")
    r.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(func=run_train)


def _read_graphs(path: str):
    from ..io.conllu import read_conllu

    return read_conllu(path, require_heads=True)


def run_train(args) -> int:
    _set_threads(args.threads)
    import torch

    from ..graph import LabelVocab
    from ..tasks.seq2seq import (
        SUBWORD_LABEL, Seq2SeqSettings, Seq2SeqTask, check_aligned, corpus_scores, read_lines,
    )
    from ..tokenizer import SubwordTokenizer
    from ..train import TrainConfig, Trainer

    out = Path(args.out)
    graph = args.src_graphs is not None
    if graph and not args.src_dev_graphs:
        raise ValueError("--src-graphs needs --src-dev-graphs (the dev source must be parsed too)")
    # --- read and check everything before any training
    t0 = time.time()
    tgt_train = read_lines(args.tgt_train)
    tgt_dev = read_lines(args.tgt_dev)
    if graph:
        src_train = _read_graphs(args.src_graphs)
        check_aligned(len(src_train), args.src_graphs, len(tgt_train), args.tgt_train)
        src_dev = _read_graphs(args.src_dev_graphs)
        check_aligned(len(src_dev), args.src_dev_graphs, len(tgt_dev), args.tgt_dev)
        src_text = [" ".join(s.forms) for s in src_train]
        for plain, name in ((args.src_train, "src_train"), (args.src_dev, "src_dev")):
            if plain:  # given explicitly: must be aligned with the parsed file
                n = len(read_lines(plain))
                ref = len(src_train) if name == "src_train" else len(src_dev)
                check_aligned(n, plain, ref, args.src_graphs if name == "src_train" else args.src_dev_graphs)
    else:
        d, (s, _) = default_data_dir(), DEFAULT_PAIR
        args.src_train = args.src_train or str(d / f"train.{s}.gz")
        args.src_dev = args.src_dev or str(d / f"val.{s}.gz")
        src_train = read_lines(args.src_train)
        check_aligned(len(src_train), args.src_train, len(tgt_train), args.tgt_train)
        src_dev = read_lines(args.src_dev)
        check_aligned(len(src_dev), args.src_dev, len(tgt_dev), args.tgt_dev)
        src_text = src_train
    if not tgt_train:
        raise ValueError(f"{args.tgt_train}: no training sentences")

    settings = Seq2SeqSettings(
        max_distance=args.max_distance, graph=graph, joint_vocab=args.joint_vocab, max_src_len=args.max_len,
        max_tgt_len=args.max_len, label_smoothing=args.label_smoothing, max_tokens=args.max_tokens,
        eval_sentences=args.eval_sentences, length_penalty=args.lenpen)
    # --- tokenizers: trained once, reused on --resume
    out.mkdir(parents=True, exist_ok=True)
    tok_path = out / "tokenizers.json"
    if args.resume and tok_path.exists():
        saved = json.loads(tok_path.read_text(encoding="utf-8"))
        print(f"resuming: reusing the tokenizer(s) and data settings of {tok_path} (--bpe-vocab, --joint-vocab, "
              "--max-len, --max-distance and --label-smoothing come from there)", file=sys.stderr)
        src_tok = SubwordTokenizer.from_str(saved["src"])
        tgt_tok = src_tok if saved["tgt"] is None else SubwordTokenizer.from_str(saved["tgt"])
        rel_vocab = LabelVocab.from_list(saved["rel_vocab"]) if saved.get("rel_vocab") else None
        settings = Seq2SeqSettings.from_dict({**saved["settings"], "max_tokens": args.max_tokens,
                                              "eval_sentences": args.eval_sentences})
    else:
        if args.joint_vocab:
            src_tok = tgt_tok = SubwordTokenizer.train(list(src_text) + list(tgt_train), args.bpe_vocab)
        else:
            src_tok = SubwordTokenizer.train(src_text, args.bpe_vocab)
            tgt_tok = SubwordTokenizer.train(tgt_train, args.bpe_vocab)
        rel_vocab = None
        if graph:
            rels = sorted({r for s in src_train for r in s.deprels if r is not None})
            rel_vocab = LabelVocab.for_dependencies(rels)
            rel_vocab.add(SUBWORD_LABEL)
        tok_path.write_text(json.dumps({
            "src": src_tok.to_str(), "tgt": None if tgt_tok is src_tok else tgt_tok.to_str(),
            "rel_vocab": rel_vocab.to_list() if rel_vocab else None, "settings": settings.to_dict()},
            ensure_ascii=False), encoding="utf-8")
    task = Seq2SeqTask(src_tok, tgt_tok, settings, rel_vocab=rel_vocab, seed=args.seed)
    task.train = task.encode_pairs(src_train, tgt_train, "train")
    task.dev = task.encode_pairs(src_dev, tgt_dev, "dev")
    enc_layers = args.encoder_layers or args.layers
    dec_layers = args.decoder_layers or args.layers
    model = task.build_model(
        d_model=args.d_model, num_heads=args.heads, num_encoder_layers=enc_layers, num_decoder_layers=dec_layers,
        ffn_dim=args.ffn, dropout=args.dropout, attention_dropout=args.attention_dropout,
        decoder_max_distance=args.max_distance, value_labels=args.value_labels, positions=args.positions,
        max_positions=max(1024, args.max_len + 2))
    n_params = sum(p.numel() for p in model.parameters())
    n_src = sum(map(len, task.train.src))
    n_tgt = sum(map(len, task.train.tgt)) + len(task.train.tgt)
    print(f"data: {len(task.train)} train / {len(task.dev)} dev pairs, {n_src} source / {n_tgt} target subwords "
          f"(vocab {src_tok.vocab_size}{'' if tgt_tok is src_tok else f' + {tgt_tok.vocab_size}'}), "
          f"prepared in {time.time() - t0:.0f}s; model: {n_params / 1e6:.2f}M parameters, channels {task.channels}",
          file=sys.stderr)
    cfg = TrainConfig(
        lr=args.lr, warmup_steps=args.warmup, cooldown=args.cooldown, weight_decay=args.weight_decay,
        max_steps=args.max_steps,
        epochs=args.epochs, max_minutes=args.max_minutes, accum_steps=args.accum, eval_every=args.eval_every,
        metric="bleu", metric_mode="max", seed=args.seed, device=args.device, progress=not args.no_progress)
    trainer = Trainer(model, task, cfg, out)
    t_train = time.time()
    history = trainer.fit(resume=args.resume)
    train_s = time.time() - t_train
    if history:
        print(f"last evaluation: {json.dumps(history[-1])}", file=sys.stderr)
    if trainer.is_main and args.final_beam > 0:
        final = final_evaluation(out, src_dev, tgt_dev, args.final_beam, args.lenpen, device=trainer.device)
        final["train_seconds_this_run"] = train_s
        (out / "final.json").write_text(json.dumps(final, indent=2))
        print(json.dumps(final), file=sys.stderr)
    return 0


def final_evaluation(out: Path, src_dev, tgt_dev, beam: int, lenpen: float, device="cpu") -> dict:
    """Translate the full dev set with the best checkpoint and score it (cased + lowercased)."""
    from ..tasks.seq2seq import corpus_scores, load_seq2seq

    model, task = load_seq2seq(out, device)
    t = time.time()
    hyps = task.translate(model, src_dev, beam=beam, length_penalty=lenpen, batch_size=32, progress=True)
    secs = time.time() - t
    (out / "dev.hyp").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
    cased, lower = corpus_scores(hyps, tgt_dev), corpus_scores(hyps, tgt_dev, lowercase=True)
    return {"beam": beam, "lenpen": lenpen, "sentences": len(hyps), "bleu": cased["bleu"], "chrf": cased["chrf"],
            "bleu_lowercase": lower["bleu"], "chrf_lowercase": lower["chrf"], "translate_seconds": secs}


# ---------------------------------------------------------------------------- translate
def _add_translate(sub) -> None:
    p = sub.add_parser(
        "translate", help="translate text with a trained seq2seq model",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Translate one sentence per line. Writes exactly one line per input line, in order; an empty "
        "(or blank) input line gives an empty output line. Graph-to-sequence models read --graphs FILE.conllu "
        "instead (one output line per CoNLL-U sentence).")
    p.add_argument("--model", required=True, help="training folder (best.pt) or a checkpoint file")
    p.add_argument("-i", "--input", default="-", help="input file (plain or .gz), '-' = stdin")
    p.add_argument("-o", "--output", default="-", help="output file, '-' = stdout")
    p.add_argument("--graphs", default=None, metavar="FILE.conllu", help="parsed source for a graph-to-sequence model")
    p.add_argument("--beam", type=int, default=5, help="beam size (1 = greedy)")
    p.add_argument("--lenpen", type=float, default=1.0, help="length penalty: score / length ** lenpen")
    p.add_argument("--batch-size", type=int, default=32, help="sentences decoded together")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--device", default="auto")
    p.add_argument("--progress", action="store_true", help="tqdm bar on stderr")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(func=run_translate)


def _device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def run_translate(args) -> int:
    _set_threads(args.threads)
    from ..tasks.seq2seq import load_seq2seq, read_lines

    model, task = load_seq2seq(args.model, _device(args.device))
    if task.settings.graph:
        if not args.graphs:
            raise ValueError(f"{args.model} is a graph-to-sequence model: give the parsed source with --graphs FILE.conllu")
        items = _read_graphs(args.graphs)
        keep = list(range(len(items)))
        hyps = task.translate(model, items, beam=args.beam, length_penalty=args.lenpen,
                              batch_size=args.batch_size, progress=args.progress)
        outputs = hyps
    else:
        if args.graphs:
            raise ValueError(f"{args.model} is a plain sequence model; --graphs is only for graph-to-sequence models")
        lines = read_lines(sys.stdin, "<stdin>") if args.input == "-" else read_lines(args.input)
        keep = [i for i, line in enumerate(lines) if line.strip()]
        hyps = task.translate(model, [lines[i] for i in keep], beam=args.beam, length_penalty=args.lenpen,
                              batch_size=args.batch_size, progress=args.progress)
        outputs = [""] * len(lines)
        for i, h in zip(keep, hyps):
            outputs[i] = h.replace("\n", " ").replace("\r", " ")
    text = "".join(o + "\n" for o in outputs)
    if args.output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        Path(args.output).write_text(text, encoding="utf-8")
    return 0


# ---------------------------------------------------------------------------- evaluate-mt
def _add_evaluate(sub) -> None:
    p = sub.add_parser(
        "evaluate-mt", help="sacreBLEU BLEU and chrF of a translation against a reference",
        description="Corpus BLEU (sacreBLEU, 13a tokenization, cased) and chrF of detokenized hypotheses. "
        "Both files: one sentence per line, same number of lines (plain or .gz).")
    p.add_argument("ref", help="reference file")
    p.add_argument("hyp", help="hypothesis file")
    p.add_argument("--lowercase", action="store_true", help="also report case-insensitive BLEU / chrF")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(func=run_evaluate)


def run_evaluate(args) -> int:
    import sacrebleu

    from ..tasks.seq2seq import check_aligned, read_lines

    refs, hyps = read_lines(args.ref), read_lines(args.hyp)
    check_aligned(len(refs), args.ref, len(hyps), args.hyp)
    bleu = sacrebleu.corpus_bleu(hyps, [refs])
    chrf = sacrebleu.corpus_chrf(hyps, [refs])
    res = {"bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2), "sentences": len(refs),
           "bleu_signature": str(bleu.format(signature=True).split(" = ")[0]),
           "bleu_detail": str(bleu)}
    if args.lowercase:
        lb = sacrebleu.corpus_bleu(hyps, [refs], lowercase=True)
        lc = sacrebleu.corpus_chrf([h.lower() for h in hyps], [[r.lower() for r in refs]])
        res.update(bleu_lowercase=round(lb.score, 2), chrf_lowercase=round(lc.score, 2))
    if args.json:
        print(json.dumps(res))
    else:
        print(f"BLEU  {res['bleu']:.2f}   ({res['bleu_detail']})")
        print(f"chrF  {res['chrf']:.2f}")
        if args.lowercase:
            print(f"BLEU (lowercased)  {res['bleu_lowercase']:.2f}")
            print(f"chrF (lowercased)  {res['chrf_lowercase']:.2f}")
    return 0


def register(subparsers, train_subparsers) -> None:
    _add_train(train_subparsers)
    _add_translate(subparsers)
    _add_evaluate(subparsers)
