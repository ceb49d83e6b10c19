"""benchmarks/gpu_check.py: skips cleanly without CUDA; its report reads a training log and names what failed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


def _module():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_gpu_check_skips_cleanly_without_cuda(tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no device, even on a CUDA machine
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("gpu_check: no CUDA device on this machine")
    assert not (tmp_path / "out").exists()  # nothing run, nothing written


def test_gpu_check_report_and_training_summary(tmp_path):
    gc = _module()
    log = tmp_path / "log.jsonl"
    rows = [{"kind": "train", "step": 100, "tokens_per_s": 5000.0}, {"kind": "eval", "step": 200, "las": 71.5},
            {"kind": "eval", "step": 400, "las": 70.1}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = gc._training_summary(log)
    assert "best dev LAS 71.50 at step 200" in summary and "training speed 5,000 words/s" in summary
    assert gc._training_summary(tmp_path / "none.jsonl") == [f"no training log at {tmp_path / 'none.jsonl'}"]
    text = gc.report("GPU X", [{"name": "cuda tests", "status": "ok", "seconds": 3.0, "summary": ["5 passed"]},
                               {"name": "attention", "status": "failed (exit 1)", "seconds": 1.0, "summary": []}])
    assert text.startswith("# g2gt GPU check: GPU X") and "## cuda tests: ok (3 s)" in text
    assert text.rstrip().endswith("not ok: attention (full output in the report folder)")


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a CUDA machine the script runs everything")
def test_gpu_check_needs_no_device_to_refuse_a_bad_step_name():
    done = subprocess.run([sys.executable, str(SCRIPT), "--skip", "bogus"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and "unknown step(s) ['bogus']" in done.stderr
