"""examples/own_graph_task.py (a user's own graph-to-graph task on the coreference pieces) runs and learns."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "own_graph_task.py"


def test_own_graph_task_runs_and_improves(tmp_path):
    out = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "60", "--train-size", "400", "--out",
                          str(tmp_path / "run")], capture_output=True, text=True, timeout=600, check=True).stdout
    acc = [float(x) for x in re.findall(r"'accuracy': ([0-9.]+)", out)]
    assert len(acc) == 2 and acc[1] > acc[0] + 20
    assert (tmp_path / "run" / "best.pt").is_file()
    assert len(EXAMPLE.read_text().splitlines()) < 200
