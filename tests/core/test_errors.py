"""g2gt.Error is the base of the errors a user can cause; every checkpoint kind check names the file."""

from __future__ import annotations

import pytest
import torch

import g2gt
from g2gt.core.checkpoint import CheckpointError, TrainingFolderLocked, checkpoint_kind, expect_kind
from g2gt.core.files import InputError
from g2gt.core.output import OutputError


def test_error_is_a_value_error_exported_at_the_top():
    assert issubclass(g2gt.Error, ValueError) and "Error" in g2gt.__all__


@pytest.mark.parametrize("cls", [CheckpointError, TrainingFolderLocked, InputError, OutputError])
def test_user_facing_errors_are_g2gt_errors(cls):
    assert issubclass(cls, g2gt.Error)


def test_ud_and_cli_errors_are_g2gt_errors():
    from g2gt.cli.common import UsageError
    from g2gt.ud.evaluate import EvaluationError
    from g2gt.ud.io.conllu import CoNLLUError
    from g2gt.ud.tokenize.text import StanzaUnavailable

    for cls in (UsageError, EvaluationError, CoNLLUError, StanzaUnavailable):
        assert issubclass(cls, g2gt.Error), cls


@pytest.mark.parametrize("ck,kind", [
    ({"task": {"kind": "segmenter"}}, "segmenter"),
    ({"task": {"kind": "enhancer"}}, "enhancer"),
    ({"kind": "seq2seq", "task": {}}, "seq2seq"),
    ({"model_config": {"num_rels": 3}, "task": {"vocab": {"rels": ["a"]}}}, None),  # a kind is never guessed
    ({"model_config": {}, "task": {"vocab": {}}}, None),
])
def test_checkpoint_kind(ck, kind):
    assert checkpoint_kind(ck) == kind


def test_expect_kind_names_the_file_and_what_it_holds():
    expect_kind({"task": {"kind": "parser"}}, "m/parser.pt", "parser")
    with pytest.raises(CheckpointError, match=r"m/parser\.pt: not a parser checkpoint: it holds a segmenter"):
        expect_kind({"task": {"kind": "segmenter"}}, "m/parser.pt", "parser")
    with pytest.raises(g2gt.Error, match="not an enhancer checkpoint: it holds no kind"):
        expect_kind({"task": {}}, "e.pt", "enhancer")


def test_cli_exit_2_for_a_stage_file_of_the_wrong_kind(tmp_path, capsys):
    from g2gt.cli.main import main

    torch.save({"model": {}, "model_config": {}, "task": {"kind": "segmenter", "vocab": []}}, tmp_path / "parser.pt")
    assert main(["parse", "--model", str(tmp_path), "--text", "He sat."]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "parser.pt: not a parser checkpoint: it holds a segmenter" in err


def test_coref_loader_names_what_a_wrong_file_holds():
    """A parser where a coreference stage is expected: a g2gt.Error naming the file and what it holds."""
    from g2gt.ud.coref import Coreferencer
    from g2gt.core.registry import find_model

    file = find_model("en_combined") / "parser.pt"
    with pytest.raises(CheckpointError, match=r"parser\.pt: not a coreference checkpoint; it holds a parser"):
        Coreferencer.load(file)
