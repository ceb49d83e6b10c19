"""`g2gt train pipeline --resume` with stages made elsewhere: a finished segmenter without the expander its
treebank needs gets only the expander trained, an expander whose segmenter never started is reused, and the
card lists the command of every stage (those trained on their own included) and the pipeline's.

A tiny treebank: the 49 sentences of the shipped EWT sample that bring its first 50 different multiword tokens
(the expander's threshold), every run capped at 2 updates (--max-steps)."""

from __future__ import annotations

import json
import os
import shlex
import shutil

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu, write_conllu
from g2gt.core.run_folder import run_commands, run_state
from g2gt.ud.tokenize.data import surface_tokens
from g2gt.ud.tokenize.train import EXPANDER_MIN_TYPES, lacks_expander

COMMON = ["--threads", "1", "--no-progress"]


def _mwt_treebank(folder):
    """The first training sentences of the EWT sample that bring new multiword tokens, up to the threshold."""
    seen, picked = set(), []
    for s in read_conllu(EWT_SAMPLE_TRAIN):
        new = {t.form.lower() for t in surface_tokens(s) if t.is_mwt} - seen
        if new:
            picked.append(s)
            seen |= new
        if len(seen) >= EXPANDER_MIN_TYPES:
            break
    assert len(seen) >= EXPANDER_MIN_TYPES
    folder.mkdir(parents=True)
    write_conllu(picked, folder / "en_mwt-ud-train.conllu")
    write_conllu(read_conllu(EWT_SAMPLE_DEV)[:8], folder / "en_mwt-ud-dev.conllu")
    return folder


def _g2gt(*argv) -> str:
    """Run ``g2gt argv`` (exit 0 expected); returns the command as the run folders record it."""
    argv = [str(a) for a in argv]
    assert main(argv) == 0, argv
    return shlex.join(["g2gt", *argv])


def _pipeline(tb, out, *extra) -> list[str]:
    return ["train", "pipeline", "--treebank", tb, "--out", out, "--segmenter-minutes", "2", "--max-minutes", "3",
            "--max-steps", "2", "--no-eval", *extra]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A segmenter trained on its own without an expander, a parser trained on its own, then the pipeline with
    --resume: ``(treebank, run folder, {stage: command}, mtimes before the pipeline)``."""
    root = tmp_path_factory.mktemp("recipe")
    tb = _mwt_treebank(root / "UD_English-Mwt")
    out = root / "run"
    data = ["--train", tb / "en_mwt-ud-train.conllu", "--dev", tb / "en_mwt-ud-dev.conllu"]
    cmds = {"segmenter": _g2gt("train", "segmenter", *data, "--out", out / "segmenter", "--max-steps", "2",
                               "--no-expander", *COMMON),
            "parser": _g2gt("train", "parser", *data, "--out", out / "parser", "--max-steps", "2", "--layers", "1",
                            "--d-model", "32", "--heads", "2", "--ffn-dim", "64", *COMMON)}
    assert lacks_expander(out / "segmenter")
    before = {p: os.stat(out / p).st_mtime_ns for p in ("segmenter/last.pt", "parser/last.pt")}
    cmds["pipeline"] = _pipeline(tb, out, "--resume", *COMMON)
    _g2gt(*cmds["pipeline"])
    cmds["pipeline"] = f"g2gt train pipeline --treebank {tb} --out {out} --max-minutes 3 --segmenter-minutes 2 " \
                       "--max-steps 2 --threads 1 --resume"  # as _pipeline_command writes it
    return tb, out, cmds, before


def test_finished_segmenter_without_expander_gets_only_the_expander(run):
    from g2gt.ud.tokenize import Segmenter

    _, out, _, before = run
    assert os.stat(out / "segmenter" / "last.pt").st_mtime_ns != before["segmenter/last.pt"]  # expander written in
    assert run_state(out / "segmenter").step == 2  # ... but the character model did not train again
    assert run_state(out / "segmenter" / "expander").finished and run_state(out / "segmenter" / "expander").step == 2
    assert not lacks_expander(out / "segmenter")
    assert Segmenter.load(out / "model").lexicon.expander is not None  # the exported model has it
    assert os.stat(out / "parser" / "last.pt").st_mtime_ns == before["parser/last.pt"]  # reused as it is
    card = json.loads((out / "model" / "model.json").read_text())
    seg = card["stages"]["segmenter"]
    assert seg["reused"] and seg["expander_added"] and seg["expander_parameters"] > 0
    assert card["stages"]["parser"]["reused"] and not card["stages"]["enhancer"]["reused"]


def test_card_lists_every_stage_command_and_the_pipeline(run, tmp_path):
    from g2gt.ud.recipe.export import package_pipeline

    _, out, cmds, _ = run
    card = json.loads((out / "model" / "model.json").read_text())
    assert card["commands"] == {
        "segmenter": cmds["segmenter"] + "\n" + cmds["pipeline"],  # trained on its own; the pipeline added a part
        "parser": cmds["parser"],  # trained on its own, reused
        "enhancer": cmds["pipeline"],  # trained by the pipeline
        "pipeline": cmds["pipeline"]}
    readme = (package_pipeline(out / "model", "en_mwt", tmp_path / "pkg") / "README.md").read_text()
    for text in cmds.values():
        assert f"\n{text}\n" in readme


def test_second_resume_reuses_every_part(run, capsys):
    tb, out, cmds, _ = run
    files = ["segmenter/best.pt", "segmenter/expander/last.pt", "parser/last.pt", "enhancer/last.pt"]
    stamps = {p: os.stat(out / p).st_mtime_ns for p in files}
    capsys.readouterr()
    _g2gt(*_pipeline(tb, out, "--resume", *COMMON))
    err = capsys.readouterr().err
    assert "training it alone" not in err and "training the" not in err  # nothing trains, not even the expander
    assert {p: os.stat(out / p).st_mtime_ns for p in files} == stamps
    card = json.loads((out / "model" / "model.json").read_text())
    assert all(card["stages"][s]["reused"] for s in ("segmenter", "parser", "enhancer"))
    assert not card["stages"]["segmenter"]["expander_added"]
    assert run_commands(out / "parser") == [cmds["parser"]]  # a reused stage records nothing new


def test_expander_of_a_stage_stopped_before_the_segmenter_is_reused(run, tmp_path, capsys):
    """A run stopped after the expander, before the character model: without --resume it is refused, with
    --resume the expander is reused and the character model trains."""
    tb, out, _, _ = run
    other = tmp_path / "run"
    shutil.copytree(out / "segmenter" / "expander", other / "segmenter" / "expander")
    shutil.copytree(out / "parser", other / "parser")
    stamp = os.stat(other / "segmenter" / "expander" / "last.pt").st_mtime_ns
    assert main([str(a) for a in _pipeline(tb, other, "--no-enhancer", *COMMON)]) == 2
    assert "part of a training run" in capsys.readouterr().err and not (other / "segmenter" / "last.pt").exists()
    _g2gt(*_pipeline(tb, other, "--no-enhancer", "--resume", *COMMON))
    assert "training the multiword-token expander" not in capsys.readouterr().err
    assert os.stat(other / "segmenter" / "expander" / "last.pt").st_mtime_ns == stamp
    assert run_state(other / "segmenter").step == 2 and not lacks_expander(other / "segmenter")


def test_record_command_starts_afresh_adds_on_resume_and_respects_the_lock(tmp_path):
    from g2gt.core.checkpoint import TrainingFolderLocked
    from g2gt.core.run_folder import record_command

    folder = tmp_path / "run"
    assert run_commands(folder) == []
    record_command(folder, "g2gt train parser --out run", resume=False)
    record_command(folder, "g2gt train parser --out run --resume", resume=True)
    record_command(folder, "g2gt train parser --out run --resume", resume=True)  # the same again: kept once
    assert run_commands(folder) == ["g2gt train parser --out run", "g2gt train parser --out run --resume"]
    record_command(folder, "g2gt train parser --out run --lr 1e-3", resume=False)  # a new run replaces the list
    assert run_commands(folder) == ["g2gt train parser --out run --lr 1e-3"]
    (folder / "commands.jsonl").write_text('{"command": "a"}\n["b"]\n')
    with pytest.raises(ValueError, match=r"commands\.jsonl:2: expected a JSON object"):
        run_commands(folder)
    (folder / ".lock").write_text("{}")  # held by another process (its flock is taken here by a second fd)
    import fcntl

    fd = os.open(folder / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(TrainingFolderLocked):
            record_command(folder, "g2gt train parser --out run", resume=False)
    finally:
        os.close(fd)
    assert (folder / "commands.jsonl").read_text() == '{"command": "a"}\n["b"]\n'  # left as it was
