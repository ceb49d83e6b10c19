"""Inputs a command must refuse rather than copy or learn from: --keep deps with DEPS that are not an enhanced
graph, and training trees with a self loop, a cycle or no root; each a one-line FILE:LINE error, no output."""

from __future__ import annotations

import pytest

from g2gt.cli.main import main

GOOD = ("# sent_id = 1\n"
        "1\tHe\the\tPRON\tPRP\t_\t2\tnsubj\t2:nsubj\t_\n"
        "2\tsat\tsit\tVERB\tVBD\t_\t0\troot\t0:root\t_\n"
        "3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t2:punct\t_\n\n")


def _with(column: int, word: int, value: str) -> str:
    lines = GOOD.split("\n")
    cols = lines[word].split("\t")
    cols[column] = value
    lines[word] = "\t".join(cols)
    return "\n".join(lines)


@pytest.mark.parametrize("deps, why", [
    ("99:obj", "head 99 is outside 0..3"),
    ("garbage", "is malformed"),
    ("2", "is malformed"),
    ("1:nsubj", "self loop"),
    ("2:nsubj|2:obj", "names head 2 twice"),
    ("5.1:nsubj", "empty node 5.1 does not exist"),
    ("2:NSUBJ", "is not lowercase"),
])
def test_fuzz_keep_deps_refuses_a_deps_value_that_is_not_a_graph(tmp_path, capsys, deps, why):
    """Attack: --keep deps with DEPS that would be copied into the output as they are."""
    inp, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    inp.write_text(GOOD + _with(8, 1, deps).replace("# sent_id = 1", "# sent_id = 2"), encoding="utf-8")
    assert main(["parse", str(inp), "--keep", "deps", "-o", str(out), "--threads", "1", "--no-progress"]) == 2
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("g2gt: ")]
    assert len(err) == 1 and f"{inp}:7:" in err[0] and why in err[0] and "expected" in err[0], err
    assert not out.exists()


def test_keep_deps_copies_a_valid_graph(tmp_path):
    inp, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    inp.write_text(GOOD, encoding="utf-8")
    assert main(["parse", str(inp), "--keep", "deps", "-o", str(out), "--threads", "1", "--no-progress"]) == 0
    assert [ln.split("\t")[8] for ln in out.read_text().splitlines() if ln and ln[0].isdigit()] == \
        ["2:nsubj", "0:root", "2:punct"]


@pytest.mark.parametrize("word, head, why", [
    (1, "1", "word 1 is its own head"),
    (2, "3", "cycle"),
    (3, "0", "several roots"),
])
def test_fuzz_train_parser_refuses_a_tree_that_is_not_one(tmp_path, capsys, word, head, why):
    """Attack: a training file with a self loop, a cycle or two roots."""
    train, dev = tmp_path / "train.conllu", tmp_path / "dev.conllu"
    bad = _with(6, word, head)
    if why == "cycle":  # 1 -> 2 -> 3 -> 2: no root and a cycle
        bad = _with(6, 3, "2").replace("\t0\troot", "\t3\troot")
    train.write_text(GOOD * 3 + bad, encoding="utf-8")
    dev.write_text(GOOD, encoding="utf-8")
    rc = main(["train", "parser", "--train", str(train), "--dev", str(dev), "--out", str(tmp_path / "run"),
               "--d-model", "16", "--layers", "1", "--heads", "2", "--ffn-dim", "32", "--max-steps", "1",
               "--no-progress", "--threads", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and f"{train}:16:" in err[-1] and why in err[-1] and "single-rooted tree" in err[-1], err
    assert not (tmp_path / "run" / "best.pt").exists()
