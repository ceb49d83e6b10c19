"""Everything worth checking on a CUDA machine, in one command and one report.

On a machine with a CUDA device this runs, one after the other (each in its own process, with a time limit):

1. ``cuda tests``: the tests that need CUDA (the Triton label kernel compiled, against the float64 reference,
   forward and gradients; FlexAttention's label path with gradients, autocast training, checkpoints on the device;
   ``-k "cuda or flex or triton"`` over tests/nn and tests/core, the slow ones included), with their pass / skip /
   fail counts;
2. ``attention``: :mod:`benchmarks.attention` on the device, in float32 and in bfloat16, n = 128, 512, 2048,
   8192: plain SDPA (no graph) against GraphAttention's default label paths (the Triton kernel on CUDA, keys-only
   and keys + values), keys-only FlexAttention, the blocked label kernels in torch ops and the materialised
   ``[B, n, n, d_head]`` baseline (where it fits); milliseconds of forward + backward, the ratio to SDPA and peak
   memory;
3. ``parser``: ``g2gt train parser --preset gpu`` (a bigger parser under bfloat16 autocast with the device-sized
   batches, :data:`g2gt.ud.parse.config.PARSER_GPU`) for ``--minutes`` minutes (default 5) on ``$G2GT_DATA``'s UD
   English EWT (the shipped sample without it); steps, training words/s and the best dev LAS from its log;
4. ``seq2seq``: ``g2gt train seq2seq --preset gpu`` (:data:`g2gt.seq2seq.config.SEQ2SEQ_GPU`) for ``--minutes``
   minutes on ``$G2GT_DATA``'s Multi30k en->de (the tests' 50-pair corpus without it); steps, target tokens/s and
   the best dev loss / BLEU from its log;

then prints one report (and writes it to ``OUT/report.md``): the device, torch, each step's status, time and
result lines. Everything runs offline (no download: the data is local or shipped). On a machine without CUDA
it prints why there is nothing to check and exits 0, so it can sit in any script; ``--device cpu`` runs the two
training steps on the CPU instead (a smoke test of the same commands; the speeds mean nothing there)::

    python benchmarks/gpu_check.py                 # everything (about 25 minutes)
    python benchmarks/gpu_check.py --minutes 1 --skip train   # quick: no training ("train" = parser,seq2seq)
    python benchmarks/gpu_check.py --device cpu --minutes 0.05 --skip-final   # the training steps, on a CPU
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("tests", "attention", "parser", "seq2seq")
ALIASES = {"train": ("parser", "seq2seq")}


def cuda_device() -> str | None:
    """``"NVIDIA H100 ... (torch 2.x, CUDA 12.x)"``, or None without a usable CUDA device."""
    import torch

    if not torch.cuda.is_available():
        return None
    return f"{torch.cuda.get_device_name(0)} (torch {torch.__version__}, CUDA {torch.version.cuda})"


def run(name: str, argv: list[str], timeout: float, env: dict | None = None) -> dict:
    """Run ``argv`` from the repository root; its status, seconds and output (stdout + stderr)."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
        status, out = ("ok" if done.returncode == 0 else f"failed (exit {done.returncode})"), done.stdout + done.stderr
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"").decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or "")
        status = f"timed out after {timeout:.0f} s"
    return {"name": name, "status": status, "seconds": time.perf_counter() - t0, "output": out}


def tests_step(timeout: float) -> dict:
    r = run("cuda tests", [sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider", "-m",
                           "slow or not slow", "-k", "cuda or flex", "tests/nn", "tests/core"], timeout)
    lines = r["output"].strip().splitlines()
    r["summary"] = [ln for ln in lines if ln.startswith(("FAILED", "SKIPPED", "ERROR"))][:20] + lines[-1:]
    return r


ATTENTION_METHODS = "sdpa,keys,keys+vals,keys-flex,keys-blocked,keys+vals-blocked,material"


def attention_step(timeout: float) -> dict:
    """The attention table in float32 and in bfloat16 (one benchmark process each, half the time limit each)."""
    runs = [run(f"attention {dt}", [sys.executable, "benchmarks/attention.py", "--device", "cuda", "--sizes",
                                    "128,512,2048,8192", "--methods", ATTENTION_METHODS, "--dtype", dt, "--repeats",
                                    "5", "--max-gb", "40", "--markdown"], timeout / 2)
            for dt in ("float32", "bfloat16")]
    bad = [r for r in runs if r["status"] != "ok"]
    r = {"name": "attention", "status": bad[0]["status"] if bad else "ok",
         "seconds": sum(x["seconds"] for x in runs), "output": "\n".join(x["output"] for x in runs)}
    r["summary"] = [ln for ln in r["output"].splitlines() if ln.startswith("|") or "MiB" in ln]
    return r


def _data() -> Path:
    return Path(os.environ.get("G2GT_DATA", ROOT / "data"))


def train_step(out: Path, minutes: float, device: str = "cuda") -> dict:
    """``g2gt train parser --preset gpu`` for ``minutes``; its steps, words/s and best dev LAS."""
    ewt = _data() / "ud-en-ewt"
    files = []
    if not (ewt / "en_ewt-ud-train.conllu").is_file():
        from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN

        files = ["--train", str(EWT_SAMPLE_TRAIN), "--dev", str(EWT_SAMPLE_DEV)]
    folder = out / "parser-gpu"
    r = run("train parser (preset gpu)", [sys.executable, "-m", "g2gt", "train", "parser", "--preset", "gpu", *files,
                                          "--out", str(folder), "--overwrite", "--device", device, "--max-minutes",
                                          str(minutes), "--no-progress"],
            timeout=minutes * 60 + 600, env={"G2GT_DATA": str(_data())})
    r["summary"] = _training_summary(folder / "log.jsonl", "las", "words", _passes(folder)) + _tail(r)
    return r


def seq2seq_step(out: Path, minutes: float, device: str = "cuda", final: bool = True) -> dict:
    """``g2gt train seq2seq --preset gpu`` for ``minutes``; its steps, target tokens/s and best dev scores."""
    mt = _data() / "multi30k"
    if (mt / "train.en.gz").is_file():
        files = []
    else:  # the tests' small corpus (train and dev alike): the commands run, the scores mean nothing
        small = ROOT / "tests" / "fixtures_mt"
        files = ["--src-train", str(small / "train.en"), "--tgt-train", str(small / "train.de"),
                 "--src-dev", str(small / "train.en"), "--tgt-dev", str(small / "train.de"), "--bpe-vocab", "300"]
    folder = out / "seq2seq-gpu"
    r = run("train seq2seq (preset gpu)", [sys.executable, "-m", "g2gt", "train", "seq2seq", "--preset", "gpu",
                                           *files, "--out", str(folder), "--overwrite", "--device", device,
                                           "--max-minutes", str(minutes), "--no-progress",
                                           *([] if final else ["--final-beam", "0"])],
            timeout=minutes * 60 + 900, env={"G2GT_DATA": str(_data())})
    r["summary"] = _training_summary(folder / "log.jsonl", "bleu", "target tokens") + _tail(r)
    return r


def _tail(r: dict) -> list[str]:
    return r["output"].strip().splitlines()[-2:]


def _passes(folder: Path) -> int:
    """Encoder passes per training sentence of a parser run (its loss, and tokens/s, count each word per pass)."""
    try:
        task = json.loads((folder / "config.json").read_text()).get("task") or {}
    except (OSError, ValueError):
        return 1
    return 1 if task.get("refine_train", "self") == "none" else 2


def _training_summary(log: Path, metric: str = "las", unit: str = "words", passes: int = 1) -> list[str]:
    """Steps, speed (the median of the training lines after the first, ``tokens_per_s / passes`` in ``unit``/s)
    and the best dev ``metric`` from a training log (one JSON object per line)."""
    try:
        rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return [f"no training log at {log}"]
    evals = [r for r in rows if metric in r]
    last = rows[-1] if rows else {}
    out = [f"{len(rows)} log lines, last step {last.get('step', '?')}"]
    if evals:
        best = max(evals, key=lambda r: r[metric])
        more = f" (dev loss {best['dev_loss']:.3f})" if "dev_loss" in best else ""
        out.append(f"best dev {metric.upper()} {best[metric]:.2f} at step {best.get('step', '?')}{more}")
    speed = [r[k] / passes for r in rows for k in ("words_per_s", "tokens_per_s") if k in r]
    if speed:
        speed = sorted(speed[1:] or speed)
        out.append(f"training speed {speed[len(speed) // 2]:,.0f} {unit}/s")
    return out


def report(device: str, results: list[dict]) -> str:
    lines = [f"# g2gt GPU check: {device}", ""]
    for r in results:
        lines.append(f"## {r['name']}: {r['status']} ({r['seconds']:.0f} s)")
        lines += [f"    {s}" for s in r.get("summary", [])] or ["    (no output)"]
        lines.append("")
    bad = [r["name"] for r in results if r["status"] != "ok"]
    lines.append("all steps ok" if not bad else f"not ok: {', '.join(bad)} (full output in the report folder)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="budget of each training run (default: %(default)s)")
    ap.add_argument("--skip", default="", help=f"comma-separated steps to leave out: {', '.join(STEPS)} "
                                               "(train = parser,seq2seq)")
    ap.add_argument("--out", default="runs/gpu_check", help="folder for the training runs, outputs and report.md")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cuda (default; nothing to do without one) or cpu: the training steps only, as a smoke test")
    ap.add_argument("--skip-final", action="store_true", help="no final beam search of the translation run")
    args = ap.parse_args(argv)
    skip = {s for s in args.skip.split(",") if s}
    if skip - set(STEPS) - set(ALIASES):
        ap.error(f"--skip: unknown step(s) {sorted(skip - set(STEPS) - set(ALIASES))}; the steps are "
                 f"{', '.join(STEPS)} (train = parser,seq2seq)")
    for alias, steps in ALIASES.items():
        if alias in skip:
            skip |= set(steps)
    if args.device == "cpu":
        import torch

        device = f"CPU (torch {torch.__version__}; a smoke test: the speeds mean nothing)"
        skip |= {"tests", "attention"}
    else:
        device = cuda_device()
    if device is None:
        import torch

        print(f"gpu_check: no CUDA device on this machine (torch {torch.__version__}); nothing to check, "
              "run it on a machine with an NVIDIA GPU (or --device cpu for the training steps' smoke test)")
        return 0
    out = Path(args.out).resolve()  # the steps run from the repository root
    out.mkdir(parents=True, exist_ok=True)
    results = []
    if "tests" not in skip:
        results.append(tests_step(timeout=1800))
    if "attention" not in skip:
        results.append(attention_step(timeout=1200))
    if "parser" not in skip:
        results.append(train_step(out, args.minutes, args.device))
    if "seq2seq" not in skip:
        results.append(seq2seq_step(out, args.minutes, args.device, not args.skip_final))
    for r in results:
        (out / ("-".join(w.strip("()") for w in r["name"].split()[:2]) + ".log")).write_text(r["output"])
    text = report(device, results)
    (out / "report.md").write_text(text)
    print(text, end="")
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
