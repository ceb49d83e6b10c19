"""The ``g2gt`` command restarts itself once with glibc's malloc cache off (g2gt.core.malloc_tunables): only the
command itself (never ``main(argv)`` in a process, ``python -c`` or a script from stdin), never twice, never when
the user set the tunable or turned keeping freed memory off, and the command still answers the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import g2gt
from g2gt.core import malloc_tunables as mt

GLIBC = sys.platform.startswith("linux") and mt._glibc()


@pytest.mark.skipif(not GLIBC, reason="glibc Linux only")
def test_the_environment_adds_the_tunable_and_a_mark():
    env = mt.malloc_cache_environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "GLIBC_TUNABLES": mt.TUNABLE, mt._MARK: "1"}
    other = mt.malloc_cache_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert other["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:" + mt.TUNABLE


@pytest.mark.parametrize("env", [{mt._MARK: "1"}, {"G2GT_KEEP_FREED_MEMORY": "0"},
                                 {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=7"}])
def test_nothing_to_do_when_restarted_turned_off_or_set_by_the_user(env):
    assert mt.malloc_cache_environment(env) is None


def test_only_the_command_itself_restarts(tmp_path):
    main = Path(g2gt.__file__).parent / "__main__.py"
    assert mt._is_the_command(str(main))
    script = tmp_path / "g2gt"
    script.write_text("")
    assert mt._is_the_command(str(script))
    assert not mt._is_the_command("-c") and not mt._is_the_command("") and not mt._is_the_command("-")
    assert not mt._is_the_command(str(tmp_path / "other.py"))


def test_main_with_arguments_never_restarts(monkeypatch, capsys):
    from g2gt.cli.main import main

    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail("main(argv) restarted the process"))
    monkeypatch.delenv(mt._MARK, raising=False)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "g2gt" in capsys.readouterr().out


def test_the_restarted_command_answers_and_reads_stdin_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in (mt._MARK, "GLIBC_TUNABLES")}
    env["PYTHONPATH"] = str(Path(g2gt.__file__).parents[1])
    out = subprocess.run([sys.executable, "-m", "g2gt", "--version"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"g2gt {g2gt.__version__}"
    from g2gt.data import EWT_SAMPLE_DEV

    text = "\n\n".join(EWT_SAMPLE_DEV.read_text(encoding="utf-8").split("\n\n")[:3]) + "\n\n"
    got = subprocess.run([sys.executable, "-m", "g2gt", "enhance", "--copy-basic", "-"], input=text,
                         capture_output=True, text=True, env=env, timeout=300)
    assert got.returncode == 0, got.stderr
    assert got.stdout.count("\n\n") == text.count("\n\n") >= 1  # every sentence of stdin, once
