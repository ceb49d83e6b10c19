"""Hidden old option spellings still work for one release, and each use prints one line naming the new option
(the list is the changelog's "Renamed options" table)."""

from __future__ import annotations

import pytest

from g2gt.cli.main import build_parser

# (command, old spelling with its value, destination, value it must store, the new option the notice names)
OLD = [
    (["train", "seq2seq", "--out", "o"], ["--ffn", "64"], "ffn_dim", 64, "--ffn-dim"),
    (["train", "seq2seq", "--out", "o"], ["--accum", "2"], "accum_steps", 2, "--accum-steps"),
    (["train", "seq2seq", "--out", "o"], ["--lenpen", "0.5"], "length_penalty", 0.5, "--length-penalty"),
    (["train", "seq2seq", "--out", "o"], ["--max-tokens", "99"], "batch_tokens", 99, "--batch-tokens"),
    (["translate", "--model", "m"], ["--lenpen", "0.7"], "length_penalty", 0.7, "--length-penalty"),
    (["parse", "--model", "m", "in.conllu"], ["--batch-size", "500"], "batch_tokens", 500, "--batch-tokens"),
    (["parse", "--model", "m", "in.conllu"], ["--keep-upos"], "keep_upos", True, "--keep upos"),
    (["train", "parser", "--out", "o"], ["--cased"], "lowercase", False, "--no-lowercase"),
    (["train", "segmenter", "--out", "o"], ["--num-layers", "2"], "num_layers", 2, "--layers"),
    (["train", "segmenter", "--out", "o"], ["--num-heads", "3"], "num_heads", 3, "--heads"),
    (["train", "segmenter", "--out", "o"], ["--batch-windows", "8"], "batch_windows", 8,
     "--batch-tokens (characters: windows * --window)"),
]


@pytest.mark.parametrize("command, old, dest, value, new", OLD, ids=[" ".join(o[:1] + c[:2]) for c, o, *_ in OLD])
def test_old_spelling_works_and_names_the_new_option(command, old, dest, value, new, capsys):
    args, extra = build_parser().parse_known_args(command + old)
    assert extra == [] and getattr(args, dest) == value
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"g2gt: {old[0]} is deprecated and will be removed in the next release; use {new}"]


@pytest.mark.parametrize("command, old, dest, value, new", OLD[:1] + OLD[-5:])
def test_new_spelling_is_silent_and_old_one_is_hidden(command, old, dest, value, new, capsys):
    build_parser().parse_known_args(command)
    assert capsys.readouterr().err == ""
    with pytest.raises(SystemExit):
        build_parser().parse_args(command[:2] + ["--help"] if command[0] == "train" else command[:1] + ["--help"])
    assert old[0] + " " not in capsys.readouterr().out.replace(",", " ")
