"""--workers is capped by the CPUs and the available memory, with one line saying what was used and why."""

from __future__ import annotations

import pytest

from g2gt.cli.main import main
from g2gt.core.pool import available_memory_mb, fit_workers


def test_workers_that_fit_are_kept():
    assert fit_workers(1) == (1, None)
    assert fit_workers(2, cpus=4, available_mb=8000, per_worker_mb=500) == (2, None)


@pytest.mark.parametrize("n, cpus, mb, used", [(16, 2, 100_000, 2), (16, 64, 4800, 9), (16, 64, 100, 1),
                                              (3, 2, 300, 1), (64, 1, 100_000, 1)])
def test_fuzz_too_many_workers_are_capped_saying_why(n, cpus, mb, used):
    """Attack: far more workers than CPUs or memory allow."""
    got, why = fit_workers(n, cpus=cpus, available_mb=mb, per_worker_mb=500)
    assert got == used and why is not None and f"{cpus} CPU" in why
    assert "memory available" in why


def test_available_memory_is_known_here():
    mb = available_memory_mb()
    assert mb is None or mb > 0


def test_the_command_says_what_it_used_instead(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("G2GT_WORKER_MB", str(10 ** 7))  # no room for a second worker
    out = tmp_path / "out.conllu"
    assert main(["parse", "--text", "He sat.", "-o", str(out), "--workers", "16", "--threads", "1"]) == 0
    notes = [ln for ln in capsys.readouterr().err.splitlines() if "--workers" in ln]
    assert len(notes) == 1 and notes[0].startswith("g2gt: --workers 16: using 1 worker process instead (")
    assert "G2GT_WORKER_MB" in notes[0] and "\n" not in notes[0]
    assert out.read_text().count("\t") > 0
