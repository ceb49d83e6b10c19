"""Worker processes from a program read from standard input: one clear error, never a cascade of dying workers."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
from g2gt.core.pool import ProcessPool
try:
    with ProcessPool(dict, 2) as pool:
        pool.wait_ready()
except Exception as e:
    print(type(e).__name__, e)
"""


def test_a_program_from_stdin_gets_one_error_naming_the_fix():
    run = subprocess.run([sys.executable, "-"], input=PROGRAM, capture_output=True, text=True, timeout=120)
    assert run.stdout.startswith("WorkersCannotStart worker processes cannot start from this program")
    assert "script file" in run.stdout and "n_process=1" in run.stdout
    assert "Traceback" not in run.stderr  # no worker was started, so none died


def test_python_c_starts_workers():
    code = ("from g2gt.core.pool import ProcessPool\n"
            "with ProcessPool(dict, 1) as pool:\n"
            "    pool.wait_ready()\n"
            "print('ready')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "ready", run.stderr
