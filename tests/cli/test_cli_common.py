"""What every g2gt command shares: common options, --version, lazy help, options generated from config
dataclasses, and one-line errors (exit 2) for everything a user can get wrong."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import g2gt
from g2gt.cli.main import build_parser, main, user_error_message
from g2gt.cli.common import UsageError, add_dataclass_options
from g2gt.data import EWT_SAMPLE_DEV
from fixture_paths import FIXTURES

FIX = FIXTURES
ROOT = Path(g2gt.__file__).resolve().parent.parent

# one invocation per command with its required arguments (files need not exist: only parsing is checked)
COMMANDS = {
    "train parser": ["train", "parser", "--out", "o"],
    "train distill": ["train", "distill", "--teacher", "t", "--out", "o"],
    "train seq2seq": ["train", "seq2seq", "--out", "o"],
    "train enhancer": ["train", "enhancer", "--out", "o"],
    "enhance": ["enhance", "--copy-basic", "in.conllu"],
    "train coref": ["train", "coref", "--out", "o"],
    "train lemmatizer": ["train", "lemmatizer", "--train", "t.conllu", "--out", "o"],
    "coref": ["coref", "--model", "m", "in.conllu"],
    "parse": ["parse", "--model", "m", "in.conllu"],
    "demo": ["demo"],
    "attention": ["attention", "--model", "m", "--text", "t", "-o", "x.png"],
    "translate": ["translate", "--model", "m"],
    "evaluate-mt": ["evaluate-mt", "r", "h"],
    "evaluate": ["evaluate", "g", "p"],
    "draw": ["draw", "x.conllu"],
    "bench": ["bench"],
    "models": ["models"],
    "export-model": ["export-model", "--parser", "p", "-o", "o"],
    "train segmenter": ["train", "segmenter", "--out", "o"],
    "train pipeline": ["train", "pipeline", "--out", "o"],
    "package": ["package", "m", "--name", "x", "-o", "o"],
    "average": ["average", "a.pt", "-o", "b.pt"],
    "serve": ["serve"],
    "build-kernel": ["build-kernel"],
}
COMMON = ["--device", "cpu", "--threads", "1", "--batch-tokens", "123", "--no-progress", "--debug"]


def _run(*argv: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "g2gt", *argv], capture_output=True, text=True, env=env,
                          timeout=120, **kw)


def _one_error_line(err: str, command: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"g2gt {command}: error: "), err
    return lines[0]


# ---------------------------------------------------------------------------- options and help
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_takes_the_common_options(name):
    args, extra = build_parser().parse_known_args(COMMANDS[name] + COMMON)
    assert extra == []
    assert (args.device, args.threads, args.batch_tokens, args.progress, args.debug) == ("cpu", 1, 123, False, True)
    assert callable(args.func)


def _listed(argv: list[str], capsys) -> list[str]:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = capsys.readouterr().out
    block = text.split("positional arguments:")[1].split("\n\n")[0].splitlines()[2:]
    return [line.split()[0] for line in block if line.startswith("    ") and not line.startswith("     ")]


def test_the_table_above_covers_every_command(capsys):
    commands = {c for c in _listed([], capsys) if c != "train"} | {f"train {t}" for t in _listed(["train"], capsys)}
    assert commands == set(COMMANDS)


def test_common_option_defaults():
    args, _ = build_parser().parse_known_args(COMMANDS["parse"])
    assert (args.device, args.threads, args.batch_tokens, args.progress, args.debug) == ("auto", 0, None, None, False)
    args, _ = build_parser().parse_known_args(COMMANDS["translate"] + ["--progress"])
    assert args.progress is True


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"g2gt {g2gt.__version__}"


LAZY_SCRIPT = """
import sys
from g2gt.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(sorted(m for m in ("torch", "g2gt.core.graph", "g2gt.ud.parse.model", "sacrebleu", "stanza") if m in sys.modules))
"""


HELP_ARGVS = [["--help"], ["--version"], ["train", "--help"]] + [
    [*COMMANDS[c][: 2 if c.startswith("train") else 1], "--help"] for c in sorted(COMMANDS)]


@pytest.mark.parametrize("argv", HELP_ARGVS, ids=" ".join)
def test_help_and_version_do_not_import_torch(argv):
    """In a fresh interpreter, the help (or --version) loads no torch and no other heavy module."""
    proc = subprocess.run([sys.executable, "-c", LAZY_SCRIPT, *argv], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_shows_no_absolute_paths_of_this_machine(name, capsys):
    with pytest.raises(SystemExit):
        main([*COMMANDS[name][: 2 if name.startswith("train") else 1], "--help"])
    text = capsys.readouterr().out
    assert "usage: g2gt" in text
    for path in {str(ROOT), str(ROOT.parent), str(Path.home()), str(Path.cwd())} - {"/"}:
        assert path + "/" not in text and not text.rstrip().endswith(path)


def test_seq2seq_options_come_from_the_config_dataclasses():
    from g2gt.cli.seq2seq import TRAIN_OPTIONS
    from g2gt.seq2seq import Seq2SeqConfig, seq2seq_train_config

    args, _ = build_parser().parse_known_args(COMMANDS["train seq2seq"])
    for f in dataclasses.fields(Seq2SeqConfig):  # batch_tokens: None, sized to the device (the field's on a CPU)
        assert getattr(args, f.name) == (None if f.name == "batch_tokens" else f.default), f.name
    recipe = seq2seq_train_config()
    for name in TRAIN_OPTIONS:  # TrainConfig's own names (--metric, --average-last ...)
        assert getattr(args, name) == getattr(recipe, name), name


def test_parser_options_come_from_the_config_dataclasses():
    from g2gt.cli import parsing as cmd
    from g2gt.ud.parse import ParserConfig
    from g2gt.core.config import TrainConfig

    args, _ = build_parser().parse_known_args(COMMANDS["train parser"])
    model = {f.name: f.default for f in dataclasses.fields(ParserConfig)}
    for name in cmd.MODEL_OPTIONS:
        assert getattr(args, name) == cmd.MODEL_CLI_DEFAULTS.get(name, model[name]), name
    train = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for name in cmd.TRAIN_OPTIONS:
        assert getattr(args, name) == cmd.TRAIN_CLI_DEFAULTS.get(name, train[name]), name
    assert args.batch_tokens is None  # sized to the device: cmd.TRAIN_BATCH_TOKENS on a CPU (tests/cli/test_presets.py)
    args, _ = build_parser().parse_known_args(COMMANDS["train parser"] + ["--layers", "2", "--no-graph-channel",
                                                                           "--no-lowercase", "--warmup-steps", "7"])
    assert (args.num_layers, args.graph_channel, args.lowercase, args.warmup_steps) == (2, False, False, 7)


def test_add_dataclass_options_types_defaults_and_help(capsys):
    from g2gt.cli.common import CommandParser

    @dataclasses.dataclass
    class Toy:
        width: int = dataclasses.field(default=8, metadata={"help": "how wide"})
        rate: float = 0.5
        name: str = dataclasses.field(default="a", metadata={"choices": ("a", "b")})
        flag: bool = True
        limit: int | None = None

    p = CommandParser(prog="toy")
    names = add_dataclass_options(p, Toy, defaults={"rate": 0.25}, flags={"width": "--w"})
    assert names == ["width", "rate", "name", "flag", "limit"]
    assert vars(p.parse_args([])) == {"width": 8, "rate": 0.25, "name": "a", "flag": True, "limit": None}
    got = vars(p.parse_args(["--w", "3", "--rate", "1e-3", "--name", "b", "--no-flag", "--limit", "5"]))
    assert got == {"width": 3, "rate": 1e-3, "name": "b", "flag": False, "limit": 5}
    text = p.format_help()
    assert "how wide (default: 8)" in text and "--width" not in text and "(default: 0.25)" in text
    with pytest.raises(SystemExit):
        p.parse_args(["--name", "c"])
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(ValueError, match="no field"):
        add_dataclass_options(CommandParser(prog="t"), Toy, ["nope"])


# ---------------------------------------------------------------------------- one-line errors
def test_usage_errors_are_one_line(capsys):
    for argv, command in ((["parse", "--bogus"], "parse"), (["translate", "--model", "m", "--beam", "0"], "translate"),
                          (["translate", "--model", "m", "--beam", "-2"], "translate"),
                          (["parse", "--model", "m", "x", "--batch-tokens", "0"], "parse"),
                          (["train", "parser"], "train parser"), (["train"], "train")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        _one_error_line(capsys.readouterr().err, command)
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2 and capsys.readouterr().err.startswith("g2gt: error: ")


def test_beam_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        main(["translate", "--model", "m", "--beam", "0"])
    assert "--beam" in _one_error_line(capsys.readouterr().err, "translate")


def test_directory_as_input_or_output(tmp_path, capsys):
    d = tmp_path / "folder"
    d.mkdir()
    good = tmp_path / "in.txt"
    good.write_text("A dog.\n", encoding="utf-8")
    cases = [(["parse", "--model", "m", str(d)], "parse"), (["parse", "--model", "m", str(EWT_SAMPLE_DEV), "-o", str(d)],
                                                            "parse"),
             (["translate", "--model", "m", "-i", str(d)], "translate"),
             (["translate", "--model", "m", "-i", str(good), "-o", str(d)], "translate"),
             (["evaluate", str(d), str(EWT_SAMPLE_DEV)], "evaluate"), (["draw", str(d)], "draw"),
             (["evaluate-mt", str(d), str(good)], "evaluate-mt"),
             (["train", "parser", "--train", str(d), "--out", str(tmp_path / "o")], "train parser")]
    for argv, command in cases:
        assert main(argv) == 2, argv
        assert "is a directory" in _one_error_line(capsys.readouterr().err, command)


def test_output_equal_to_input_is_refused(tmp_path, capsys):
    src = tmp_path / "in.conllu"
    src.write_bytes(EWT_SAMPLE_DEV.read_bytes())
    link = tmp_path / "link.conllu"
    link.symlink_to(src)
    txt = tmp_path / "in.en"
    txt.write_text("A dog.\n", encoding="utf-8")
    for argv, command in ((["parse", "--model", "m", str(src), "-o", str(src)], "parse"),
                          (["parse", "--model", "m", str(src), "-o", str(link)], "parse"),
                          (["translate", "--model", "m", "-i", str(txt), "-o", str(txt)], "translate")):
        assert main(argv) == 2
        assert "--in-place" in _one_error_line(capsys.readouterr().err, command)
    assert src.read_bytes() == EWT_SAMPLE_DEV.read_bytes() and txt.read_text() == "A dog.\n"


def test_not_gzip_gz_file(tmp_path, capsys):
    fake = tmp_path / "ref.de.gz"
    fake.write_text("not compressed\n", encoding="utf-8")
    hyp = tmp_path / "hyp.de"
    hyp.write_text("not compressed\n", encoding="utf-8")
    assert main(["evaluate-mt", str(fake), str(hyp)]) == 2
    assert "gzip" in _one_error_line(capsys.readouterr().err, "evaluate-mt")
    conllu = tmp_path / "in.conllu.gz"
    conllu.write_bytes(EWT_SAMPLE_DEV.read_bytes())
    assert main(["parse", "--model", str(tmp_path / "no-model"), str(conllu)]) == 2
    assert "gzip" in _one_error_line(capsys.readouterr().err, "parse")
    truncated = tmp_path / "cut.conllu.gz"
    truncated.write_bytes(gzip.compress(EWT_SAMPLE_DEV.read_bytes())[:2000])
    assert main(["evaluate-mt", str(truncated), str(hyp)]) == 2
    _one_error_line(capsys.readouterr().err, "evaluate-mt")


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 truncated zip"], ids=["empty", "truncated"])
def test_broken_checkpoint(tmp_path, capsys, content):
    model = tmp_path / "model"
    model.mkdir()
    (model / "best.pt").write_bytes(content)
    txt = tmp_path / "in.en"
    txt.write_text("A dog.\n", encoding="utf-8")
    for argv, command in ((["parse", "--model", str(model), "--text", "A dog.", "--tokenizer", "rule"], "parse"),
                          (["translate", "--model", str(model), "-i", str(txt)], "translate"),
                          (["attention", "--model", str(model), "--text", "A dog.", "-o", str(tmp_path / "a.png")],
                           "attention")):
        assert main(argv) == 2
        assert "not a readable g2gt checkpoint" in _one_error_line(capsys.readouterr().err, command)


def test_truncated_real_checkpoint(tmp_path, capsys):
    import torch

    model = tmp_path / "model"
    model.mkdir()
    torch.save({"model": {"w": torch.zeros(1000)}}, model / "best.pt")
    data = (model / "best.pt").read_bytes()
    (model / "best.pt").write_bytes(data[: len(data) // 2])
    assert main(["parse", "--model", str(model), "--text", "A dog.", "--tokenizer", "rule"]) == 2
    assert "best.pt" in _one_error_line(capsys.readouterr().err, "parse")


def test_device_cuda_without_cuda(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["parse", "--model", "m", "--text", "A dog.", "--device", "cuda"]) == 2
    assert "CUDA is not available" in _one_error_line(capsys.readouterr().err, "parse")
    assert main(["translate", "--model", "m", "--device", "cuda:1"]) == 2
    assert "CUDA is not available" in _one_error_line(capsys.readouterr().err, "translate")


def test_bad_device_name(capsys):
    assert main(["parse", "--model", "m", "--text", "A dog.", "--device", "gpu0"]) == 2
    assert "not a device" in _one_error_line(capsys.readouterr().err, "parse")


def test_stanza_tokenizer_without_its_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path / "no-stanza-models"))
    assert main(["parse", "--model", str(tmp_path / "m"), "--text", "A dog.", "--tokenizer", "stanza"]) == 2
    assert "stanza" in _one_error_line(capsys.readouterr().err, "parse")


def test_error_messages_classify_exceptions():
    from g2gt.core.checkpoint import TrainingFolderLocked

    assert user_error_message(UsageError("bad")) == "bad"
    assert user_error_message(IsADirectoryError(21, "Is a directory", "x")) == "x: Is a directory"
    assert user_error_message(ValueError("f.conllu:3: bad")) == "f.conllu:3: bad"
    assert "end of input" in user_error_message(EOFError("Compressed file ended"))
    assert user_error_message(TrainingFolderLocked("OUT is in use")) == "OUT is in use"
    assert "--batch-tokens" in user_error_message(MemoryError())
    assert user_error_message(TypeError("a bug")) is None
    assert user_error_message(KeyError("a bug")) is None


def test_debug_shows_the_traceback(tmp_path):
    missing = str(tmp_path / "missing.conllu")
    plain = _run("draw", missing)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    _one_error_line(plain.stderr, "draw")
    debug = _run("draw", missing, "--debug")
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr and "UsageError" in debug.stderr


@pytest.mark.parametrize("argv", [["bench"], ["draw", str(FIX / "eval_gold.conllu")]], ids=["bench", "draw"])
def test_closed_stdout_exits_quietly(argv):
    """`g2gt ... | head`: the reader goes away; no traceback, exit 141 (128 + SIGPIPE) like other Unix tools."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "g2gt", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    proc.stdout.close()  # before the command writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_closed_stdout_in_a_shell_pipeline(tmp_path):
    out = subprocess.run(f"{sys.executable} -m g2gt evaluate {FIX / 'eval_gold.conllu'} {FIX / 'eval_pred.conllu'} "
                         "--per-relation --json | head -n 2", shell=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines()[0] == "{" and "Traceback" not in out.stderr and "Error" not in out.stderr


# ---------------------------------------------------------------------------- bench
def test_bench_runs_the_package_benchmark_not_the_current_folder(tmp_path, monkeypatch, capsys):
    from g2gt.cli.bench import checkout_root, find_benchmark

    if checkout_root() is None:
        pytest.skip("g2gt is installed from a wheel (pip install .): benchmarks/ ship only with a source checkout")

    fake = tmp_path / "benchmarks"
    fake.mkdir()
    marker = tmp_path / "ran"
    (fake / "conv.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    path = find_benchmark("conv")
    assert path == ROOT / "benchmarks" / "conv.py"
    assert main(["bench", "conv", "--help"]) == 0
    assert not marker.exists()
    assert "usage" in capsys.readouterr().out


def test_bench_lists_benchmarks(capsys):
    assert main(["bench"]) == 0
    out = capsys.readouterr().out
    assert "attention" in out and "parse_speed" in out


def test_json_is_unchanged_by_common_options(capsys):
    gold, pred = str(FIX / "eval_gold.conllu"), str(FIX / "eval_pred.conllu")
    assert main(["evaluate", gold, pred, "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["evaluate", gold, pred, "--json", *COMMON]) == 0
    assert json.loads(capsys.readouterr().out) == a


def test_recorded_commands_name_data_through_g2gt_data(monkeypatch, tmp_path):
    from g2gt.cli.common import shell_words

    monkeypatch.setenv("G2GT_DATA", str(tmp_path / "data") + "/")
    line = shell_words(["g2gt", "train", "parser", "--train", str(tmp_path / "data" / "ud" / "a b.conllu"),
                        "--out", "runs/x y", str(tmp_path / "database")])
    assert line == ("g2gt train parser --train $G2GT_DATA'/ud/a b.conllu' --out 'runs/x y' "
                    + str(tmp_path / "database"))
    monkeypatch.delenv("G2GT_DATA")
    assert shell_words(["g2gt", "--out", "a b"]) == "g2gt --out 'a b'"
