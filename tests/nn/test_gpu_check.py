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


def test_gpu_check_training_summary_of_both_presets(tmp_path):
    gc = _module()
    (tmp_path / "config.json").write_text(json.dumps({"task": {"refine_train": "self"}}))
    assert gc._passes(tmp_path) == 2  # the parser's tokens/s counts each word once per pass
    log = tmp_path / "log.jsonl"
    rows = [{"kind": "train", "step": 10, "tokens_per_s": 1.0}] + [
        {"kind": "train", "step": 10 * k, "tokens_per_s": 1000.0 * k} for k in (2, 3, 4)] + [
        {"kind": "eval", "step": 40, "dev_loss": 3.5, "bleu": 12.25}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parser = gc._training_summary(log, "las", "words", gc._passes(tmp_path))
    assert parser[-1] == "training speed 1,500 words/s"  # the median after the first line, halved
    mt = gc._training_summary(log, "bleu", "target tokens")
    assert "best dev BLEU 12.25 at step 40 (dev loss 3.500)" in mt and mt[-1] == "training speed 3,000 target tokens/s"


@pytest.mark.slow
def test_gpu_check_runs_both_training_steps_on_a_cpu(tmp_path):
    """``--device cpu``: the two preset trainings on the shipped samples, a few seconds each (about 90 s)."""
    env = {**os.environ, "G2GT_DATA": str(tmp_path / "no-data"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--minutes", "0.05", "--skip-final",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "## train parser (preset gpu): ok" in done.stdout and "## train seq2seq (preset gpu): ok" in done.stdout
    assert (tmp_path / "out" / "parser-gpu" / "best.pt").is_file()
    assert (tmp_path / "out" / "seq2seq-gpu" / "best.pt").is_file()
