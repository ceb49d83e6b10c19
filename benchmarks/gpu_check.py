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
3. ``train parser``: ``g2gt train parser`` for ``--minutes`` minutes (default 5) under bfloat16 autocast
   (``--amp bf16``) on ``$G2GT_DATA``'s UD English EWT (the shipped sample without it); steps, words/s and the
   best dev LAS from its log;

then prints one report (and writes it to ``OUT/report.md``): the device, torch, each step's status, time and
result lines. On a machine without CUDA it prints why there is nothing to check and exits 0, so it can sit in
any script::

    python benchmarks/gpu_check.py                 # everything (about 15 minutes)
    python benchmarks/gpu_check.py --minutes 1 --skip train   # quick
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
STEPS = ("tests", "attention", "train")


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


def train_step(out: Path, minutes: float) -> dict:
    data = Path(os.environ.get("G2GT_DATA", ROOT / "data"))
    ewt = data / "ud-en-ewt"
    files = []
    if not (ewt / "en_ewt-ud-train.conllu").is_file():
        from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN

        files = ["--train", str(EWT_SAMPLE_TRAIN), "--dev", str(EWT_SAMPLE_DEV)]
    folder = out / "parser-bf16"
    r = run("train parser (bf16)", [sys.executable, "-m", "g2gt", "train", "parser", *files, "--out", str(folder),
                                    "--device", "cuda", "--amp", "bf16", "--max-minutes", str(minutes),
                                    "--eval-every", "200"], timeout=minutes * 60 + 600,
            env={"G2GT_DATA": str(data)})
    r["summary"] = _training_summary(folder / "log.jsonl") + r["output"].strip().splitlines()[-2:]
    return r


def _training_summary(log: Path) -> list[str]:
    """Steps, speed and the best dev LAS from a training log (one JSON object per line)."""
    try:
        rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return [f"no training log at {log}"]
    evals = [r for r in rows if "las" in r]
    last = rows[-1] if rows else {}
    out = [f"{len(rows)} log lines, last step {last.get('step', '?')}"]
    if evals:
        best = max(evals, key=lambda r: r["las"])
        out.append(f"best dev LAS {best['las']:.2f} at step {best.get('step', '?')}")
    speed = [r[k] for r in rows for k in ("words_per_s", "tokens_per_s") if k in r]
    if speed:
        out.append(f"training speed {speed[-1]:,.0f} words/s")
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
    ap.add_argument("--minutes", type=float, default=5.0, help="parser training budget (default: %(default)s)")
    ap.add_argument("--skip", default="", help=f"comma-separated steps to leave out: {', '.join(STEPS)}")
    ap.add_argument("--out", default="runs/gpu_check", help="folder for the training run, outputs and report.md")
    args = ap.parse_args(argv)
    skip = {s for s in args.skip.split(",") if s}
    if skip - set(STEPS):
        ap.error(f"--skip: unknown step(s) {sorted(skip - set(STEPS))}; the steps are {', '.join(STEPS)}")
    device = cuda_device()
    if device is None:
        import torch

        print(f"gpu_check: no CUDA device on this machine (torch {torch.__version__}); nothing to check, "
              "run it on a machine with an NVIDIA GPU")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    if "tests" not in skip:
        results.append(tests_step(timeout=1800))
    if "attention" not in skip:
        results.append(attention_step(timeout=1200))
    if "train" not in skip:
        results.append(train_step(out, args.minutes))
    for r in results:
        (out / f"{r['name'].split()[0]}-{r['name'].split()[-1].strip('()')}.log").write_text(r["output"])
    text = report(device, results)
    (out / "report.md").write_text(text)
    print(text, end="")
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
