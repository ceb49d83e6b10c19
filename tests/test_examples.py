"""The runnable examples run and print what they promise."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], tmp_path: Path, timeout: float = 300) -> str:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_reverse_help(tmp_path):
    out = _run([str(ROOT / "examples" / "reverse.py"), "--help"], tmp_path)
    assert "chain graph" in out and "--minutes" in out


def test_reverse(tmp_path):
    """A tiny budget: the script trains through the Trainer, evaluates and prints a real accuracy."""
    out = _run([str(ROOT / "examples" / "reverse.py"), "--steps", "30", "--eval-every", "15", "--train-size", "2000",
                "--dev-size", "50", "--d-model", "32", "--ffn", "64", "--batch-tokens", "256", "--threads", "1",
                "--quiet", "--out", str(tmp_path / "run")], tmp_path)
    m = re.search(r"^exact_match=([0-9.]+) on 50 held-out", out, re.M)
    assert m, out
    acc = float(m.group(1))
    # the accuracy printed is the Trainer's last evaluation, as its log recorded it (not a made-up number)
    evals = [r for r in map(json.loads, (tmp_path / "run" / "log.jsonl").read_text().splitlines()) if "exact_match" in r]
    assert evals and evals[-1]["step"] == 30 and f"{evals[-1]['exact_match']:.4f}" == m.group(1)
    assert math.isfinite(acc)
    assert (tmp_path / "run" / "best.pt").exists() and (tmp_path / "run" / "last.pt").exists()
