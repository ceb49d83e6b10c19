"""Size limits of every input reader (g2gt.core.files): a line longer than $G2GT_MAX_LINE_BYTES after decompression
and a whole text over $G2GT_MAX_TEXT_BYTES are refused with one line naming FILE:LINE, the limit and how to raise
it, before the line is ever held in memory."""

from __future__ import annotations

import gzip
import io

import pytest

from g2gt.cli.main import main
from g2gt.core.files import InputError, iter_lines, max_line_bytes, max_text_bytes, read_text
from g2gt.ud.io.conllu import read_conllu


def test_the_limits_default_and_follow_the_environment(monkeypatch):
    monkeypatch.delenv("G2GT_MAX_LINE_BYTES", raising=False)
    monkeypatch.delenv("G2GT_MAX_TEXT_BYTES", raising=False)
    assert max_line_bytes() == 1 << 20 and max_text_bytes() == 256 << 20
    monkeypatch.setenv("G2GT_MAX_LINE_BYTES", "0")
    assert max_line_bytes() == 0
    monkeypatch.setenv("G2GT_MAX_LINE_BYTES", "lots")
    with pytest.raises(ValueError, match="G2GT_MAX_LINE_BYTES must be a whole number"):
        max_line_bytes()


@pytest.mark.parametrize("size", [101, 5000, 70_000, 200_000])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_fuzz_a_gzip_bomb_line_is_refused_naming_file_and_line(monkeypatch, tmp_path, size, where):
    """Attack: a small .gz whose one line unpacks past the limit, at the start, middle or end of the file."""
    monkeypatch.setenv("G2GT_MAX_LINE_BYTES", "100")
    short = ["a short line"] * 3
    lines = {"first": [], "middle": short[:2], "last": short}[where]
    line_no = len(lines) + 1
    path = tmp_path / "bomb.txt.gz"
    path.write_bytes(gzip.compress(("\n".join(lines + ["x" * size] + short) + "\n").encode()))
    with pytest.raises(InputError) as e:
        list(iter_lines(path))
    msg = str(e.value)
    assert msg.startswith(f"{path}:{line_no}: line longer than 100 bytes") and "G2GT_MAX_LINE_BYTES" in msg
    assert "\n" not in msg


def test_a_line_at_the_limit_is_read(monkeypatch, tmp_path):
    monkeypatch.setenv("G2GT_MAX_LINE_BYTES", "100")
    path = tmp_path / "ok.txt"
    path.write_text("y" * 100 + "\n" + "z" * 100)
    assert [len(x) for x in iter_lines(path)] == [100, 100]


def test_every_reader_applies_the_line_limit(monkeypatch, tmp_path):
    monkeypatch.setenv("G2GT_MAX_LINE_BYTES", "50")
    conllu = tmp_path / "long.conllu"
    conllu.write_text("# text = " + "w" * 60 + "\n1\tw\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    with pytest.raises(InputError, match=r"long\.conllu:1: line longer than 50 bytes"):
        read_conllu(conllu)
    with pytest.raises(InputError, match=r"<stream>:2: line longer than 50 bytes"):
        list(iter_lines(io.BytesIO(b"ok\n" + b"v" * 51 + b"\n")))
    with pytest.raises(InputError, match=r"<stream>:1: line longer than 50 bytes"):
        list(iter_lines(io.StringIO("\u00e9" * 30 + "\n")))  # 60 bytes in UTF-8


def test_a_whole_text_over_the_limit_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("G2GT_MAX_TEXT_BYTES", "1000")
    path = tmp_path / "big.txt"
    path.write_text("word " * 100 + "\n" + "word " * 200 + "\n")
    with pytest.raises(InputError, match=r"big\.txt: text larger than 1,000 bytes.*G2GT_MAX_TEXT_BYTES"):
        read_text(path)
    monkeypatch.setenv("G2GT_MAX_TEXT_BYTES", "0")
    assert len(read_text(path)) == 1502


@pytest.mark.parametrize("flag", ["--raw", "--lines", None])
def test_the_parse_command_says_it_in_one_line(monkeypatch, tmp_path, capsys, flag):
    monkeypatch.setenv("G2GT_MAX_LINE_BYTES", "1000")
    path = tmp_path / "bomb.gz"
    path.write_bytes(gzip.compress(b"Hello there.\n" + b"a " * 5000 + b"\n"))
    argv = ["parse", *([flag] if flag else []), str(path), "-o", str(tmp_path / "out.conllu")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}:2: line longer than 1,000 bytes" in err[0] and "G2GT_MAX_LINE_BYTES" in err[0]
    assert not (tmp_path / "out.conllu").exists()
