"""Peak memory (resident set size) of parsing: one long sentence, and ``g2gt parse`` on short vs long files.

Every measurement runs in a fresh child process and reads that child's own peak RSS (``ru_maxrss`` from
``os.wait4``), so measurements never see each other's memory.

* ``long``: ``Parser.predict`` on ONE sentence of N words (words repeated from the shipped EWT sample) with
  a randomly initialised parser of the default :class:`g2gt.ud.parse.ParserConfig` (memory does not depend
  on the weights' values). Reported: the child's peak RSS, its RSS after loading (model + torch), and
  the difference, i.e. what parsing the sentence itself costs.
* ``stream``: ``g2gt parse --model M FILE -o OUT`` on files of S sentences, built by repeating a CoNLL-U
  file (default: UD EWT dev if found, else the shipped dev sample). Target: peak RSS within 150 MB of each
  other, whatever S.
* ``corpus``: ``g2gt parse`` with the shipped model on gold CoNLL-U of S sentences (UD EWT train + dev of
  ``$G2GT_DATA``, repeated), written as CoNLL-U and as JSON, and on raw text of B bytes (the treebank's
  ``# text`` lines, a paragraph per 5 sentences); a markdown table of peak RSS with the ratio to the smallest
  size of each kind. Target: flat (ratio within 1.1). Without ``$G2GT_DATA`` it says so and exits 0.
  ``--commands enhance coref`` measures ``g2gt enhance`` and ``g2gt coref`` on the same gold CoNLL-U as well
  (``parse``, the default, is ``g2gt parse``).

    python benchmarks/memory.py long --words 1000 2000 5000
    python benchmarks/memory.py stream --model runs/tiny --sentences 500 50000
    python benchmarks/memory.py stream --train-tiny /tmp/tiny --sentences 500 50000   # train a tiny model first
    python benchmarks/memory.py corpus --sentences 2000 56000 --raw-mb 1 16
    python benchmarks/memory.py corpus --sentences 2001 56028 --raw-mb --commands enhance coref

Run it with ``nice`` and ``OMP_NUM_THREADS=1`` on a shared machine; the numbers are memory, not time, and
depend little on the load (times are printed for information only).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MB = 1024 * 1024


def _rss_now() -> int:
    """Current resident set size in bytes (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_self() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _child(argv: list[str], env: dict | None = None) -> tuple[int, int, float, str]:
    """Run ``argv``; ``(exit status, the child's peak RSS in bytes, seconds, stderr)``."""
    t0 = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss * 1024, time.time() - t0, err


# ---------------------------------------------------------------------------- one long sentence
def _long_child(n: int, refine_steps: int) -> None:
    """In the child: parse one n-word sentence, print a JSON line with RSS figures."""
    import torch

    from g2gt.data import EWT_SAMPLE_TRAIN
    from g2gt.ud.io.conllu import read_conllu
    from g2gt.ud.io import sentence_from_words
    from g2gt.ud.parse import Parser, ParserModel, ParserVocab

    torch.set_num_threads(1)
    torch.manual_seed(0)
    train = read_conllu(EWT_SAMPLE_TRAIN)
    vocab = ParserVocab.build(train)
    model = ParserModel(vocab.config()).eval()  # default hyper-parameters, random weights
    forms = [f for s in train for f in s.forms]
    sent = sentence_from_words([forms[i % len(forms)] for i in range(n)], sent_id="long")
    parser = Parser(model, vocab, refine_steps=refine_steps)
    parser.predict([sentence_from_words(["A", "warm", "up", "."])])
    loaded = max(_rss_now(), _peak_self())
    t0 = time.time()
    res = parser.predict([sent])
    dt = time.time() - t0
    assert len(res[0].heads) == n
    print(json.dumps({"words": n, "loaded": loaded, "peak": _peak_self(), "seconds": dt}))


def run_long(words: list[int], refine_steps: int) -> list[dict]:
    """One child per length; each prints a JSON line (see :func:`_long_child`)."""
    rows = []
    for n in words:
        argv = [sys.executable, __file__, "_long", str(n), "--refine-steps", str(refine_steps)]
        proc = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if proc.returncode:
            raise SystemExit(f"{' '.join(argv)} failed:\n{proc.stderr}")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return rows


def print_long(rows: list[dict]) -> None:
    print("| words | peak RSS (MB) | after loading (MB) | parse cost (MB) | MB per 1k words | seconds |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cost = (r["peak"] - r["loaded"]) / MB
        print(f"| {r['words']:,} | {r['peak'] / MB:.0f} | {r['loaded'] / MB:.0f} | {cost:.0f} | "
              f"{cost / (r['words'] / 1000):.0f} | {r['seconds']:.1f} |")


# ---------------------------------------------------------------------------- g2gt parse on long files
def _source_file() -> Path:
    from g2gt.data import EWT_DEV, EWT_SAMPLE_DEV, find_data

    full = find_data(EWT_DEV)
    return full if full is not None and full.exists() else EWT_SAMPLE_DEV


def build_input(path: Path, sentences: int, source: Path) -> None:
    """Write ``sentences`` sentences to ``path``, repeating ``source`` (sentence blocks kept verbatim)."""
    blocks = [b + "\n\n" for b in source.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(sentences):
            f.write(blocks[i % len(blocks)])


def train_tiny(out: Path) -> None:
    """A tiny parser (seconds to train) for the streaming measurement: memory is dominated by data, not weights."""
    from g2gt.cli.main import main
    from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN

    if (out / "best.pt").exists():
        return
    rc = main(["train", "parser", "--train", str(EWT_SAMPLE_TRAIN), "--dev", str(EWT_SAMPLE_DEV), "--out", str(out),
               "--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim", "64", "--max-steps", "3",
               "--eval-every", "0", "--epochs", "1", "--no-progress", "--threads", "1"])
    if rc:
        raise SystemExit(f"training the tiny model into {out} failed (exit {rc})")


def run_stream(model: Path, counts: list[int], workdir: Path, refine_steps: int) -> list[dict]:
    source = _source_file()
    rows = []
    for s in counts:
        src, out = workdir / f"in-{s}.conllu", workdir / f"out-{s}.conllu"
        build_input(src, s, source)
        argv = [sys.executable, "-m", "g2gt", "parse", "--model", str(model), str(src), "-o", str(out),
                "--threads", "1", "--no-progress", "--refine-steps", str(refine_steps)]
        rc, peak, dt, err = _child(argv, env={"OMP_NUM_THREADS": "1"})
        if rc:
            raise SystemExit(f"{' '.join(argv)} failed (exit {rc}):\n{err}")
        n_in = sum(1 for line in open(src, encoding="utf-8") if line == "\n")
        n_out = sum(1 for line in open(out, encoding="utf-8") if line == "\n")
        rows.append({"sentences": s, "bytes": src.stat().st_size, "peak": peak, "seconds": dt,
                     "lost": n_in - n_out})
        src.unlink()
        out.unlink()
    return rows


def print_stream(rows: list[dict]) -> None:
    base = rows[0]
    print(f"| sentences | input (MB) | peak RSS (MB) | vs {base['sentences']:,} (MB) | ratio | lost | seconds |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['sentences']:,} | {r['bytes'] / MB:.1f} | {r['peak'] / MB:.0f} | "
              f"{(r['peak'] - base['peak']) / MB:+.0f} | {r['peak'] / base['peak']:.2f} | {r['lost']} | "
              f"{r['seconds']:.0f} |")


# ---------------------------------------------------------------------------- g2gt parse on a corpus, flat memory
def _treebank_blocks() -> list[str] | None:
    """The sentence blocks of UD EWT train + dev under $G2GT_DATA, or None without them."""
    from g2gt.data import EWT_DEV, EWT_TRAIN, find_data

    files = [find_data(EWT_TRAIN), find_data(EWT_DEV)]
    if any(f is None for f in files):
        return None
    return [b + "\n\n" for f in files for b in f.read_text(encoding="utf-8").split("\n\n") if b.strip()]


def _raw_text(blocks: list[str], size: int) -> str:
    """About ``size`` bytes of raw text: the ``# text`` of each sentence, 5 sentences a paragraph."""
    texts = [ln[len("# text = "):] for b in blocks for ln in b.split("\n") if ln.startswith("# text = ")]
    out, n, k = [], 0, 0
    while n < size:
        line = texts[k % len(texts)] + ("\n\n" if k % 5 == 4 else " ")
        out.append(line)
        n += len(line.encode("utf-8"))
        k += 1
    return "".join(out)


def run_corpus(counts: list[int], raw_mb: list[float], workdir: Path, formats: list[str],
               commands: tuple[str, ...] = ("parse",)) -> list[dict] | None:
    """One child per (command, input); ``commands``: ``parse`` (``g2gt parse`` in each of ``formats``, and raw
    text), ``enhance`` and ``coref`` (``g2gt enhance`` / ``g2gt coref`` on the gold CoNLL-U)."""
    blocks = _treebank_blocks()
    if blocks is None:
        return None
    rows = []
    jobs = [("conllu", s, fmt) for s in counts for fmt in formats] if "parse" in commands else []
    jobs += [("raw", mb, "conllu") for mb in raw_mb] if "parse" in commands else []
    jobs += [(c, s, "conllu") for c in commands if c != "parse" for s in counts]
    for kind, size, fmt in jobs:
        src = workdir / ("in.txt" if kind == "raw" else "in.conllu")
        out = workdir / f"out.{fmt}"
        if kind != "raw":
            with open(src, "w", encoding="utf-8") as f:
                for i in range(size):
                    f.write(blocks[i % len(blocks)])
            argv = [str(src)]
        else:
            src.write_text(_raw_text(blocks, int(size * MB)), encoding="utf-8")
            argv = ["--raw", str(src)]
        if kind in ("conllu", "raw"):
            cmd = [sys.executable, "-m", "g2gt", "parse", *argv, "-o", str(out), "--format", fmt]
        else:
            cmd = [sys.executable, "-m", "g2gt", kind, *argv, "-o", str(out)]
        rc, peak, dt, err = _child(cmd + ["--threads", "1", "--no-progress"], env={"OMP_NUM_THREADS": "1"})
        if rc:
            raise SystemExit(f"{' '.join(cmd)} failed (exit {rc}):\n{err}")
        done = [ln for ln in err.splitlines() if ln.startswith(("parsed ", "enhanced ", "resolved "))]
        label = {"raw": "raw", "conllu": f"CoNLL-U -> {fmt}"}.get(kind, f"g2gt {kind}: CoNLL-U -> conllu")
        rows.append({"kind": label, "size": size, "peak": peak,
                     "seconds": dt, "input": src.stat().st_size, "said": done[-1] if done else ""})
        src.unlink()
        out.unlink()
    return rows


def print_corpus(rows: list[dict]) -> None:
    print("| input | size | input (MB) | peak RSS (MB) | ratio to the smallest | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    first: dict[str, int] = {}
    for r in rows:
        base = first.setdefault(r["kind"], r["peak"])
        size = f"{r['size']:,} sentences" if r["kind"] != "raw" else f"{r['size']:g} MB raw text"
        print(f"| {r['kind'] if r['kind'] != 'raw' else 'raw text -> conllu'} | {size} | {r['input'] / MB:.1f} | "
              f"{r['peak'] / MB:.0f} | {r['peak'] / base:.2f} | {r['seconds']:.0f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    lo = sub.add_parser("long", help="one sentence of N words, randomly initialised default parser")
    lo.add_argument("--words", type=int, nargs="+", default=[1000, 2000, 5000])
    lo.add_argument("--refine-steps", type=int, default=2)
    st = sub.add_parser("stream", help="g2gt parse on files of S sentences")
    st.add_argument("--model", type=Path, help="parser model (training folder or checkpoint)")
    st.add_argument("--train-tiny", type=Path, metavar="DIR", help="train a tiny parser into DIR and use it")
    st.add_argument("--sentences", type=int, nargs="+", default=[500, 50000])
    st.add_argument("--refine-steps", type=int, default=2)
    st.add_argument("--workdir", type=Path, default=None, help="where the input files are built (default: a "
                                                                "temporary folder)")
    co = sub.add_parser("corpus", help="g2gt parse (shipped model) on S gold sentences and B MB of raw text")
    co.add_argument("--sentences", type=int, nargs="*", default=[2000, 56000])
    co.add_argument("--raw-mb", type=float, nargs="*", default=[1, 16])
    co.add_argument("--formats", nargs="+", default=["conllu", "json"], choices=["conllu", "json"])
    co.add_argument("--workdir", type=Path, default=None)
    co.add_argument("--commands", nargs="+", default=["parse"], choices=["parse", "enhance", "coref"],
                    help="the commands measured (default: parse)")
    child = sub.add_parser("_long", help=argparse.SUPPRESS)
    child.add_argument("n", type=int)
    child.add_argument("--refine-steps", type=int, default=2)
    args = ap.parse_args(argv)

    if args.what == "_long":
        _long_child(args.n, args.refine_steps)
        return 0
    if args.what == "long":
        print_long(run_long(args.words, args.refine_steps))
        return 0
    if args.what == "corpus":
        import tempfile

        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            rows = run_corpus(args.sentences, args.raw_mb, Path(tmp), args.formats, tuple(args.commands))
        if rows is None:
            print("skipped: set $G2GT_DATA to a data folder with ud-en-ewt/en_ewt-ud-{train,dev}.conllu "
                  "(data/README.md)")
            return 0
        print_corpus(rows)
        return 0
    if (args.model is None) == (args.train_tiny is None):
        ap.error("stream: pass exactly one of --model DIR or --train-tiny DIR")
    model = args.model
    if args.train_tiny is not None:
        train_tiny(args.train_tiny)
        model = args.train_tiny
    import tempfile

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        print_stream(run_stream(model, args.sentences, Path(tmp), args.refine_steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
