"""Atomic outputs leave nothing behind: SIGTERM during ``g2gt parse -o FILE`` removes the hidden temporary file
(the command turns SIGTERM into a clean exit), and a temporary file left by a killed process is removed by the
next output of the same target."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from fixture_paths import ROOT
from g2gt.core.output import AtomicOutput, remove_stale_temporaries
from g2gt.data import EWT_SAMPLE_DEV


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_dead_writers_temporary_is_removed_by_the_next_output(tmp_path):
    out = tmp_path / "x.conllu"
    stale = tmp_path / f".x.conllu.{_dead_pid()}.abc123.tmp"
    mine = tmp_path / f".x.conllu.{os.getppid()}.def456.tmp"  # a live process (our parent): kept
    other = tmp_path / f".y.conllu.{_dead_pid()}.abc123.tmp"  # another target: kept
    for f in (stale, mine, other):
        f.write_text("partial")
    with AtomicOutput(out) as f:
        f.write("done\n")
    assert out.read_text() == "done\n"
    assert not stale.exists() and mine.exists() and other.exists()
    assert remove_stale_temporaries(tmp_path / "y.conllu") == [str(other)]


def test_fuzz_sigterm_during_parse_leaves_no_temporary(tmp_path):
    """Attack: SIGTERM while the output is being written (after the temporary file appears)."""
    src = tmp_path / "in.conllu"
    src.write_text(EWT_SAMPLE_DEV.read_text(encoding="utf-8") * 20, encoding="utf-8")
    out = tmp_path / "x.conllu"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "g2gt", "parse", str(src), "-o", str(out), "--threads", "1",
                             "--no-progress"], env=env, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the parse finished before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err.decode()
    assert "terminated (SIGTERM)" in err.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.conllu"]
