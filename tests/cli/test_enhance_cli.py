"""``g2gt train enhancer`` and ``g2gt enhance`` end to end on a tiny model: only DEPS changes, the output is
valid, empty nodes are kept, bad trees / bad DEPS are one-line FILE:LINE errors with no output file."""

from __future__ import annotations

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.enhance.decode import deps_problems
from g2gt.ud.io.conllu import read_conllu, write_conllu

TINY = ["--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim", "64", "--edge-dim", "32", "--label-dim",
        "16", "--char-filters", "16", "--max-steps", "3", "--eval-every", "0", "--batch-tokens", "800",
        "--no-progress", "--threads", "1", "--device", "cpu"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("enh")
    write_conllu(read_conllu(EWT_SAMPLE_TRAIN)[:60], d / "train.conllu")
    write_conllu(read_conllu(EWT_SAMPLE_DEV)[:10], d / "dev.conllu")
    rc = main(["train", "enhancer", "--train", str(d / "train.conllu"), "--dev", str(d / "dev.conllu"),
               "--out", str(d / "model"), *TINY])
    assert rc == 0
    return d


def _same_but_deps(a: str, b: str) -> None:
    la, lb = a.split("\n"), b.split("\n")
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        cx, cy = x.split("\t"), y.split("\t")
        if len(cx) == 10 and "-" not in cx[0]:
            assert cx[:8] + cx[9:] == cy[:8] + cy[9:]
        else:
            assert x == y


def test_enhance_changes_only_deps_and_writes_a_valid_file(files, tmp_path):
    out = tmp_path / "out.conllu"
    assert main(["enhance", "--model", str(files / "model"), str(EWT_SAMPLE_DEV), "-o", str(out), "--threads", "1"]) == 0
    src = EWT_SAMPLE_DEV.read_bytes().decode("utf-8")
    _same_but_deps(src, out.read_bytes().decode("utf-8"))
    pred = read_conllu(out)
    assert all(deps_problems(s) == [] for s in pred)
    from g2gt.ud.enhance import Enhancer
    from g2gt.ud.evaluate import validate_file

    assert validate_file(out, lang="en", level=2) == []
    lib = Enhancer.load(files / "model").enhance(read_conllu(EWT_SAMPLE_DEV))
    assert [[w["deps"] for w in s.words] for s in pred] == [[w["deps"] for w in s.words] for s in lib]  # the library's


def test_enhance_keeps_the_inputs_empty_nodes(files, tmp_path):
    with_empty = [s for s in read_conllu(EWT_SAMPLE_TRAIN)
                  if any(isinstance(t["id"], tuple) and t["id"][1] == "." for t in s.rows)]
    assert with_empty
    inp, out = tmp_path / "e.conllu", tmp_path / "e.out.conllu"
    write_conllu(with_empty, inp)
    assert main(["enhance", "--model", str(files / "model"), str(inp), "-o", str(out)]) == 0
    src = inp.read_text(encoding="utf-8").split("\n")
    got = out.read_text(encoding="utf-8").split("\n")
    empty_lines = [x for x in src if x.split("\t")[0].count(".") == 1]
    assert empty_lines and all(x in got for x in empty_lines)
    for s_in, s_out in zip(read_conllu(inp), read_conllu(out)):
        for t_in, t_out in zip(s_in.words, s_out.words):
            kept = [(lab, h) for lab, h in t_in["deps"] if isinstance(h, tuple)]
            assert all(k in t_out["deps"] for k in kept)
        assert deps_problems(s_out) == []


def test_copy_basic_baseline_scores_and_keeps_columns(tmp_path):
    out = tmp_path / "copy.conllu"
    assert main(["enhance", "--copy-basic", str(EWT_SAMPLE_DEV), "-o", str(out)]) == 0
    _same_but_deps(EWT_SAMPLE_DEV.read_text(encoding="utf-8"), out.read_text(encoding="utf-8"))
    from g2gt.ud.evaluate import evaluate

    ev = evaluate(EWT_SAMPLE_DEV, out)
    assert 0.9 < ev.scores["ELAS"].f1 < 1.0  # case-marked labels are filled; extra edges are missing


def test_enhance_rejects_a_non_tree_with_file_line_and_writes_nothing(files, tmp_path, capsys):
    text = EWT_SAMPLE_DEV.read_text(encoding="utf-8").split("\n")
    first_word = next(i for i, x in enumerate(text) if x[:2] == "1\t")
    cols = text[first_word].split("\t")
    cols[6] = "1"  # word 1 is its own head
    text[first_word] = "\t".join(cols)
    bad, out = tmp_path / "bad.conllu", tmp_path / "never.conllu"
    bad.write_text("\n".join(text), encoding="utf-8")
    assert main(["enhance", "--model", str(files / "model"), str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:" in err and "tree" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_train_rejects_bad_deps_with_file_line(files, tmp_path, capsys):
    text = (files / "train.conllu").read_text(encoding="utf-8").split("\n")
    k = next(i for i, x in enumerate(text) if x[:2] == "2\t")
    cols = text[k].split("\t")
    cols[8] = "2:nsubj"  # a self loop
    text[k] = "\t".join(cols)
    bad = tmp_path / "bad.conllu"
    bad.write_text("\n".join(text), encoding="utf-8")
    rc = main(["train", "enhancer", "--train", str(bad), "--dev", str(files / "dev.conllu"),
               "--out", str(tmp_path / "m"), *TINY])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{bad}:{k + 1}:" in err and "self loop" in err


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_enhance_dtype_is_the_libraries(files, tmp_path, dtype):
    """``g2gt enhance --dtype D`` writes what ``Enhancer.load(model, dtype=D)`` predicts."""
    out = tmp_path / f"{dtype}.conllu"
    assert main(["enhance", "--model", str(files / "model"), str(EWT_SAMPLE_DEV), "-o", str(out), "--dtype", dtype,
                 "--threads", "1"]) == 0
    from g2gt.ud.enhance import Enhancer
    from g2gt.ud.io.conllu import to_conllu_string

    lib = Enhancer.load(files / "model", "cpu", dtype).enhance(read_conllu(EWT_SAMPLE_DEV))
    assert out.read_text(encoding="utf-8") == to_conllu_string(lib)
