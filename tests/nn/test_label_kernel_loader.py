"""The C++ label-kernel loader (``g2gt.nn.cpp_build`` via ``label_cpp.build``) never waits without limit: a lock
left by a killed build (a dead owner, torch's own lock file) is taken over, a live builder is waited for at most
``G2GT_LABEL_BUILD_TIMEOUT`` seconds, and every failure ends in the torch path with one line of notice.

The fast tests never compile: they run without ``ninja`` / a compiler on PATH, or stop at the lock. The slow
test kills a real build half-way and checks that the next process builds the kernel."""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from g2gt.core._compat import extension_baton
from g2gt.nn import cpp_build, label_cpp

# Runs GraphAttention forward + backward with the kernel the environment allows; prints what it used.
SCRIPT = """
import logging
import warnings
import torch
logging.basicConfig(level=logging.INFO, format="g2gt: %(message)s")  # the library's notices, as the CLI shows them
from g2gt.nn import GraphAttention, label_cpp
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    torch.manual_seed(0)
    m = GraphAttention(16, 2, 7, value_labels=True).double()
    x = torch.randn(2, 9, 16, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(0, 7, (2, 9, 9))
    out = m(x, labels)
    out.sum().backward()
    ops = label_cpp.cpp_kernels()
notes = [str(w.message) for w in caught if str(w.message).startswith("g2gt:")]
print("KERNEL", "torch" if ops is None else "cpp")
print("FINITE", bool(torch.isfinite(out).all() and torch.isfinite(x.grad).all()))
print("NOTES", len(notes))
for n in notes:
    print("NOTE", repr(n))
"""


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _plant_stale_locks(directory: Path) -> Path:
    """What a build killed mid-way leaves: a g2gt lock file naming a dead process, torch's lock file."""
    directory.mkdir(parents=True)
    (directory / cpp_build.LOCK_NAME).write_text(f"{_dead_pid()} {os.uname().nodename} {time.time() - 3600:.0f}\n")
    baton = extension_baton(directory)
    assert baton is not None, "this torch has no FileBaton: the stale-lock case cannot arise"
    baton.touch()
    return baton


def _env(ext_dir: Path, path: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G2GT_LABEL")}
    env.update(TORCH_EXTENSIONS_DIR=str(ext_dir), PATH=path, OMP_NUM_THREADS="1", PYTHONWARNINGS="always",
               G2GT_LABEL_BUILD="wait")
    return env


def _run(env: dict[str, str], timeout: float) -> dict[str, object]:
    """SCRIPT in a fresh process (its module caches are fresh too); fails the test if it hangs."""
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the label-kernel loader hung for {timeout} s (stale lock not taken over?): {err.stderr!r}")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    value = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in lines if not ln.startswith("NOTE ")}
    value["notes"] = [ast.literal_eval(ln.split(" ", 1)[1]) for ln in lines if ln.startswith("NOTE ")]
    return value


def test_stale_locks_without_a_compiler_fall_back_at_once(tmp_path):
    """A killed build's leftovers (dead owner, torch's lock) and no ninja / compiler: the torch path, one
    line of notice, torch's stale lock gone (so nothing else waits on it either)."""
    env = _env(tmp_path / "ext", str(tmp_path / "empty-bin"))
    (tmp_path / "empty-bin").mkdir()
    directory = _build_directory(env)
    baton = _plant_stale_locks(directory)
    got = _run(env, timeout=240)
    assert got["KERNEL"] == "torch" and got["FINITE"] == "True"
    assert got["NOTES"] == "1", got["notes"]
    note = got["notes"][0]
    assert "could not build the C++ label-attention kernel" in note and "\n" not in note
    assert "G2GT_LABEL_KERNEL=torch" in note
    assert not baton.exists()


def _build_directory(env: dict[str, str]) -> Path:
    """``label_cpp.build_directory()`` under ``env``'s TORCH_EXTENSIONS_DIR."""
    old = os.environ.get("TORCH_EXTENSIONS_DIR")
    os.environ["TORCH_EXTENSIONS_DIR"] = env["TORCH_EXTENSIONS_DIR"]
    try:
        return label_cpp.build_directory()
    finally:
        if old is None:
            del os.environ["TORCH_EXTENSIONS_DIR"]
        else:
            os.environ["TORCH_EXTENSIONS_DIR"] = old


@pytest.mark.skipif(cpp_build.fcntl is None, reason="no fcntl.flock here: no g2gt build lock to hold")
def test_a_live_builder_is_waited_for_at_most_the_timeout(tmp_path, monkeypatch):
    """Another (live) process holds the build lock: give up after G2GT_LABEL_BUILD_TIMEOUT with one line
    naming it, and use the torch path; the lock is still the other process's."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setenv("G2GT_LABEL_BUILD_TIMEOUT", "0.5")
    directory = label_cpp.build_directory()
    directory.mkdir(parents=True)
    holder = cpp_build.BuildLock(directory / cpp_build.LOCK_NAME)
    assert holder.acquire(time.monotonic() + 5)  # this process stands in for the other builder
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert label_cpp.build() is None
        notes = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(notes) == 1 and "\n" not in notes[0], notes
        assert f"process {os.getpid()}" in notes[0] and "G2GT_LABEL_BUILD_TIMEOUT" in notes[0]
        assert "torch label path" in notes[0]
        other = cpp_build.BuildLock(directory / cpp_build.LOCK_NAME)
        assert not other.acquire(time.monotonic())  # still held by the holder
    finally:
        holder.release()
    assert not (directory / cpp_build.MARKER_NAME).exists()


def test_build_timeout_setting(monkeypatch):
    monkeypatch.delenv("G2GT_LABEL_BUILD_TIMEOUT", raising=False)
    assert cpp_build.build_timeout() == cpp_build.DEFAULT_TIMEOUT
    monkeypatch.setenv("G2GT_LABEL_BUILD_TIMEOUT", "12.5")
    assert cpp_build.build_timeout() == 12.5
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("G2GT_LABEL_BUILD_TIMEOUT", bad)
        with pytest.raises(ValueError, match="G2GT_LABEL_BUILD_TIMEOUT must be a number of seconds"):
            cpp_build.build_timeout()


def test_build_root_follows_torch_extensions_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    assert cpp_build.build_root() == tmp_path / "g2gt"
    assert label_cpp.build_directory().parent == tmp_path / "g2gt"
    assert label_cpp.build_directory().name.startswith("g2gt_label_attention_")


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("ninja") and (shutil.which("c++") or shutil.which("g++"))),
                    reason="needs ninja and a C++ compiler")
def test_a_build_killed_half_way_does_not_block_the_next_one(tmp_path):
    """SIGKILL a real first-use build while it compiles (its g2gt lock and torch's lock file stay behind);
    the next process builds the kernel and uses it, with no notice. About two compiles: 1-3 minutes."""
    env = _env(tmp_path / "ext", os.environ["PATH"])
    directory = _build_directory(env)
    first = subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    baton = directory / "lock"
    try:
        deadline = time.monotonic() + 300
        while not baton.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert baton.exists(), "the first build never reached torch's compile step"
        time.sleep(1.0)  # the compiler is running
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the process and its ninja / compiler children
        first.wait()
    assert baton.exists() and not (directory / cpp_build.MARKER_NAME).exists()
    got = _run(env, timeout=900)
    assert got["KERNEL"] == "cpp" and got["FINITE"] == "True" and got["NOTES"] == "0", got
    assert (directory / cpp_build.MARKER_NAME).exists() and not baton.exists()



def _run_with_stderr(env: dict[str, str], timeout: float) -> tuple[dict[str, object], str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    value: dict[str, object] = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in lines if not ln.startswith("NOTE ")}
    value["notes"] = [ast.literal_eval(ln.split(" ", 1)[1]) for ln in lines if ln.startswith("NOTE ")]
    return value, done.stderr


def _wait_for(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return path.exists()


def test_background_build_never_waits_and_a_failure_is_one_line(tmp_path):
    """Default mode without a compiler: the first run says it builds in the background and uses the torch path
    at once; the build process records its failure, and the next run says so in one warning line (and does
    not start another build)."""
    (tmp_path / "empty-bin").mkdir()
    env = {**_env(tmp_path / "ext", str(tmp_path / "empty-bin")), "G2GT_LABEL_BUILD": "background"}
    directory = _build_directory(env)
    got, err = _run_with_stderr(env, timeout=240)
    assert got["KERNEL"] == "torch" and got["FINITE"] == "True"
    assert err.count(label_cpp.ANNOUNCE_BACKGROUND) == 1
    assert _wait_for(directory / label_cpp.FAILED_NAME, 240), "the background build left no failure record"
    got, err = _run_with_stderr(env, timeout=240)
    assert got["KERNEL"] == "torch" and label_cpp.ANNOUNCE_BACKGROUND not in err
    assert len(got["notes"]) == 1, got["notes"]
    note = got["notes"][0]
    assert "could not build the C++ label-attention kernel" in note and "g2gt build-kernel" in note
    assert "\n" not in note


def test_build_ahead_exits_non_zero_with_the_reason(tmp_path):
    """``g2gt build-kernel`` without a compiler: exit 1, the reason in one line on stderr."""
    (tmp_path / "empty-bin").mkdir()
    env = _env(tmp_path / "ext", str(tmp_path / "empty-bin"))
    done = subprocess.run([sys.executable, "-m", "g2gt.nn.label_cpp"], env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("g2gt:")]
    assert any("could not build the C++ label-attention kernel" in ln for ln in lines), done.stderr


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("ninja") and (shutil.which("c++") or shutil.which("g++"))),
                    reason="needs ninja and a C++ compiler")
def test_background_build_is_used_by_the_next_run(tmp_path):
    """Default mode with a compiler: the first run uses the torch path while a separate process compiles; once
    that is done the next run loads the kernel, silently. One compile: about a minute."""
    env = {**_env(tmp_path / "ext", os.environ["PATH"]), "G2GT_LABEL_BUILD": "background"}
    directory = _build_directory(env)
    got, err = _run_with_stderr(env, timeout=240)
    assert got["KERNEL"] == "torch" and err.count(label_cpp.ANNOUNCE_BACKGROUND) == 1
    assert _wait_for(directory / cpp_build.MARKER_NAME, 900), (directory / "build.log").read_text()[-2000:]
    got, err = _run_with_stderr(env, timeout=240)
    assert got["KERNEL"] == "cpp" and got["NOTES"] == "0" and "g2gt:" not in err, (got, err)
