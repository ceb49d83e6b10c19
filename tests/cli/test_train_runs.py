"""A training run is never overwritten: every ``g2gt train STAGE`` refuses an ``--out`` that holds a run unless
``--resume`` or ``--overwrite`` (one check, :func:`g2gt.core.run.check_run_folder`), in Python too."""

from __future__ import annotations

import json

import pytest

from fixture_paths import FIXTURES, FIXTURES_MT
from g2gt import Error
from g2gt.cli.main import main
from g2gt.core.run import RUN_FILES, RunExists, check_run_folder
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN

RUNTIME = ["--threads", "1", "--no-progress", "--device", "cpu"]
UD = ["--train", str(EWT_SAMPLE_TRAIN), "--dev", str(EWT_SAMPLE_DEV)]
TINY_PARSER = ["--d-model", "16", "--layers", "1", "--heads", "2", "--ffn-dim", "32", "--arc-dim", "16",
               "--label-dim", "8", "--char-dim", "8", "--char-filters", "8"]
COREF = FIXTURES / "coref_tiny.conllu"
MT = ["--src-train", str(FIXTURES_MT / "train.en"), "--tgt-train", str(FIXTURES_MT / "train.de"),
      "--src-dev", str(FIXTURES_MT / "train.en"), "--tgt-dev", str(FIXTURES_MT / "train.de")]

#: each ``g2gt train`` command with tiny data and budget; the folder inside --out that holds the run
COMMANDS = {
    "parser": (["train", "parser", *UD, "--max-steps", "1", *TINY_PARSER], "."),
    "enhancer": (["train", "enhancer", *UD, "--max-steps", "1", "--d-model", "16", "--layers", "1", "--heads", "2",
                  "--ffn-dim", "32"], "."),
    "coref": (["train", "coref", "--train", str(COREF), "--dev", str(COREF), "--max-steps", "1", "--d-model", "16",
               "--layers", "1", "--heads", "2", "--ffn-dim", "32"], "."),
    "distill": (["train", "distill", "--teacher", "not-a-model", *UD, "--max-steps", "1", *TINY_PARSER], "."),
    "segmenter": (["train", "segmenter", *UD, "--max-steps", "1", "--d-model", "16", "--layers", "1",
                   "--heads", "2", "--no-expander"], "."),
    "lemmatizer": (["train", "lemmatizer", "--train", str(EWT_SAMPLE_TRAIN), "--max-steps", "1", "--d-model", "16",
                    "--layers", "1", "--heads", "2", "--ffn-dim", "32"], "."),
    "seq2seq": (["train", "seq2seq", *MT, "--max-steps", "1", "--bpe-vocab", "300", "--d-model", "16", "--layers", "1",
                 "--heads", "2", "--ffn-dim", "32", "--final-beam", "0"], "."),
    "pipeline": (["train", "pipeline", *UD, "--max-steps", "1", "--no-eval"], "segmenter"),
}


@pytest.mark.parametrize("run_file", RUN_FILES)
def test_check_run_folder(tmp_path, run_file):
    check_run_folder(tmp_path)  # an empty folder (or none) is a fresh run
    check_run_folder(tmp_path / "missing")
    (tmp_path / "commands.jsonl").write_text("{}\n")  # a recorded command alone is no run
    check_run_folder(tmp_path)
    (tmp_path / run_file).write_text("{}\n")
    with pytest.raises(RunExists) as e:
        check_run_folder(tmp_path)
    assert isinstance(e.value, Error) and "\n" not in str(e.value)
    assert str(tmp_path) in str(e.value) and "--resume" in str(e.value) and "--overwrite" in str(e.value)
    assert "another --out" in str(e.value)
    check_run_folder(tmp_path, resume=True)
    check_run_folder(tmp_path, overwrite=True)


@pytest.mark.parametrize("stage", list(COMMANDS))
def test_every_train_command_refuses_an_out_that_holds_a_run(tmp_path, capsys, stage):
    argv, inner = COMMANDS[stage]
    out = tmp_path / "out"
    run = (out / inner).resolve()
    run.mkdir(parents=True)
    kept = {"log.jsonl": '{"kind": "eval", "step": 7}\n', "commands.jsonl": '{"command": "g2gt train earlier"}\n'}
    for name, text in kept.items():
        (run / name).write_text(text)
    assert main([*argv, "--out", str(out), *RUNTIME]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "already holds" in line]
    assert len(err) == 1 and str(run) in err[0], err  # one line, naming the folder
    assert "--resume" in err[0] and "--overwrite" in err[0] and "another --out" in err[0]
    assert sorted(p.name for p in run.iterdir()) == sorted(kept)  # nothing written, nothing changed
    for name, text in kept.items():
        assert (run / name).read_text() == text


def test_overwrite_replaces_the_run_and_resume_continues_it(tmp_path, capsys):
    argv = list(COMMANDS["lemmatizer"][0])
    out = tmp_path / "run"
    out.mkdir()
    (out / "log.jsonl").write_text('{"kind": "eval", "step": 7}\n')
    (out / "averaged.pt").write_text("an older run's average")
    (out / "best.pt").write_text("an older run's best")
    assert main([*argv, "--out", str(out), *RUNTIME, "--overwrite"]) == 0
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert log and all(e["step"] <= 1 for e in log)  # the earlier run's lines are gone
    assert not (out / "averaged.pt").exists() and (out / "config.json").is_file()
    assert (out / "best.pt").read_bytes() != b"an older run's best"
    argv[argv.index("--max-steps") + 1] = "2"
    assert main([*argv, "--out", str(out), *RUNTIME, "--resume"]) == 0
    assert json.loads((out / "config.json").read_text())["steps"] == 2
    assert main([*argv, "--out", str(out), *RUNTIME]) == 2


def test_python_training_functions_refuse_too(tmp_path):
    from g2gt.ud.lemma import LemmaConfig
    from g2gt.ud.lemma.config import lemma_train_config
    from g2gt.ud.lemma.train import lemma_examples, train_lemmatizer
    from g2gt.ud.io import read_conllu

    (tmp_path / "best.pt").write_bytes(b"")
    examples = lemma_examples(read_conllu(EWT_SAMPLE_TRAIN)[:20])
    with pytest.raises(RunExists, match="already holds a training run"):
        train_lemmatizer(examples, examples, tmp_path, LemmaConfig(d_model=16, num_layers=1, num_heads=2),
                         lemma_train_config(max_steps=1, progress=False))
    assert [p.name for p in tmp_path.iterdir()] == ["best.pt"]
