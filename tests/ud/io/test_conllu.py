"""Tests for g2gt.ud.io.conllu: round trip, views, with_parse, validation errors."""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import pytest

from g2gt.core.graph import LabelVocab, UP, DOWN, ChainChannel, EdgeChannel
from g2gt.ud.io import (
    CoNLLUError,
    Sentence,
    check_tree,
    iter_conllu,
    parse_conllu_string,
    read_conllu,
    sentence_from_words,
    write_conllu,
)
from g2gt.data import SAMPLES_DIR
from g2gt.ud.io.conllu import to_conllu_string
from fixture_paths import FIXTURES

FIX = FIXTURES
SAMPLES = sorted(SAMPLES_DIR.glob("*.sample.conllu"))
FULL_DIR = Path(os.environ.get("G2GT_DATA", "/nonexistent")) / "ud-en-ewt"


@pytest.mark.parametrize("path", SAMPLES + [FIX / "mwt_empty.conllu"], ids=lambda p: p.name)
def test_round_trip_byte_identical(path: Path, tmp_path: Path) -> None:
    sents = read_conllu(path)
    out = tmp_path / "out.conllu"
    write_conllu(sents, out)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    "name", ["en_ewt-ud-dev.conllu", pytest.param("en_ewt-ud-train.conllu", marks=pytest.mark.slow)]
)
def test_round_trip_full_ewt(name: str) -> None:
    path = FULL_DIR / name
    if not path.exists():
        pytest.skip(f"full UD EWT file {path} not present")
    sents = read_conllu(path)
    assert to_conllu_string(sents).encode("utf-8") == path.read_bytes()


def test_views_mwt_and_empty_nodes() -> None:
    s1, s2 = read_conllu(FIX / "mwt_empty.conllu")
    assert len(s1) == 5 and len(s1.rows) == 6 and len(s1.tokens) == 4  # the 2-3 range line is a token, not a word
    assert s1.forms == ["I", "do", "n't", "know", "."]
    assert s1.heads == [4, 4, 4, 0, 4]
    assert s1.deprels == ["nsubj", "aux", "advmod", "root", "punct"]
    assert s1.upos[0] == "PRON"
    assert s1.text == "I don't know." and s1.sent_id == "mwt-1"
    assert s1.space_after == [True, False, True, False, True]  # none inside "don't"
    assert s1.line == 1 and s1.word_line(0) == 4 and s1.word_line(1) == 6
    assert len(s2) == 5 and s2.forms[-1] == "too"  # the empty node 5.1 is not a word
    assert s2.line == 11


def test_with_parse_changes_only_head_deprel(tmp_path: Path) -> None:
    sents = read_conllu(FIX / "mwt_empty.conllu")
    new = [s.with_parse([0] + [1] * (len(s) - 1), ["root"] + ["dep"] * (len(s) - 1), upos=["X"] * len(s))
           for s in sents]
    # originals untouched (deep copy)
    assert sents[0].heads == [4, 4, 4, 0, 4]
    out = tmp_path / "p.conllu"
    write_conllu(new, out)
    orig_lines = (FIX / "mwt_empty.conllu").read_text(encoding="utf-8").split("\n")
    new_lines = out.read_text(encoding="utf-8").split("\n")
    assert len(orig_lines) == len(new_lines)
    for a, b in zip(orig_lines, new_lines):
        ca, cb = a.split("\t"), b.split("\t")
        if len(ca) != 10 or not ca[0].isdigit():
            assert a == b  # comments, blank lines, MWT ranges, empty nodes
            continue
        for c in (0, 1, 2, 4, 5, 8, 9):
            assert ca[c] == cb[c]
        assert cb[3] == "X"
    again = read_conllu(out)
    assert again[0].heads == [0, 1, 1, 1, 1] and again[0].deprels[1] == "dep"
    with pytest.raises(ValueError, match="5 words"):
        sents[0].with_parse([0, 1], ["root", "dep"])


def test_with_parse_on_samples_preserves_other_columns() -> None:
    sents = read_conllu(SAMPLES[0])[:50]
    rng = random.Random(0)
    for s in sents:
        n = len(s)
        heads = [0] + [rng.randint(1, n) for _ in range(n - 1)]
        p = s.with_parse(heads, ["x"] * n)
        a = s.serialize().split("\n")
        b = p.serialize().split("\n")
        assert len(a) == len(b)
        for la, lb in zip(a, b):
            if la.startswith("#") or "\t" not in la:
                assert la == lb
            else:
                ca, cb = la.split("\t"), lb.split("\t")
                assert ca[:6] == cb[:6] and ca[8:] == cb[8:]


def test_to_graph() -> None:
    s = read_conllu(FIX / "mwt_empty.conllu")[0]
    vocab = LabelVocab.for_dependencies(["nsubj", "aux", "advmod", "root", "punct"])
    g = s.to_graph(vocab, max_distance=4)
    assert g.tokens == s.forms and g.node_features["upos"] == s.upos
    assert isinstance(g.channels["position"], ChainChannel) and g.channels["position"].max_distance == 4
    deps = g.channels["deps"]
    assert isinstance(deps, EdgeChannel)
    dense = deps.dense(len(s))
    # word 1 (I) -> head 4 (know): nsubj↑ from 0 to 3, nsubj↓ from 3 to 0
    assert dense[0, 3] == vocab["nsubj" + UP] and dense[3, 0] == vocab["nsubj" + DOWN]
    assert int((dense > 0).sum()) == 2 * (len(s) - 1)  # no edge for the root
    assert g.meta["sent_id"] == "mwt-1"
    assert "deps" not in s.to_graph(graph_channel=False).channels
    raw = sentence_from_words(["Hi", "there"])
    assert "deps" not in raw.to_graph().channels


def test_sentence_from_words_round_trip() -> None:
    s = sentence_from_words(["Hello", ",", "world", "!"], sent_id="s1", space_after=[False, True, False, True])
    assert s.text == "Hello, world!"
    assert s.heads == [None] * 4 and s.deprels == [None] * 4
    text = to_conllu_string([s])
    back = parse_conllu_string(text)
    assert back[0].forms == s.forms and back[0].space_after == [False, True, False, True]
    assert back[0].sent_id == "s1"
    p = s.with_parse([2, 0, 2, 2], ["discourse", "root", "vocative", "punct"])
    assert parse_conllu_string(to_conllu_string([p]), require_heads=True)[0].heads == [2, 0, 2, 2]


def test_stream_input_and_name() -> None:
    text = (FIX / "mwt_empty.conllu").read_text(encoding="utf-8")
    sents = read_conllu(io.StringIO(text), name="memory.conllu")
    assert sents[0].path == "memory.conllu" and len(sents) == 2
    with pytest.raises(CoNLLUError, match=r"^bytes\.conllu:2: "):
        read_conllu(io.BytesIO((FIX / "bad_utf8.conllu").read_bytes()), name="bytes.conllu")


@pytest.mark.parametrize(
    "fixture, line, pattern",
    [
        ("bad_columns.conllu", 2, "9 tab-separated column"),
        ("bad_head_nonint.conllu", 2, "not an integer"),
        ("bad_head_range.conllu", 4, "out of range"),
        ("bad_id_order.conllu", 2, "out of order"),
        ("empty_sentence.conllu", 4, "empty sentence"),
        ("bad_utf8.conllu", 2, "not valid UTF-8"),
    ],
)
def test_malformed_inputs(fixture: str, line: int, pattern: str) -> None:
    path = FIX / fixture
    with pytest.raises(CoNLLUError, match=pattern) as info:
        read_conllu(path)
    err = info.value
    assert err.line == line and err.path == str(path)
    assert str(err).startswith(f"{path}:{line}: ")


def test_require_heads_and_mwt_errors() -> None:
    text = "1\tHi\thi\tINTJ\tUH\t_\t_\t_\t_\t_\n\n"
    assert parse_conllu_string(text)[0].heads == [None]
    with pytest.raises(CoNLLUError, match=r"<string>:1: HEAD is '_'"):
        parse_conllu_string(text, require_heads=True)
    with pytest.raises(CoNLLUError, match="multiword token ends at word 3"):
        parse_conllu_string("1-3\tab\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    with pytest.raises(CoNLLUError, match="empty node"):
        parse_conllu_string("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n1.2\tb\t_\t_\t_\t_\t_\t_\t_\t_\n\n")
    with pytest.raises(CoNLLUError, match="column 2"):
        parse_conllu_string("1\t\t_\t_\t_\t_\t0\troot\t_\t_\n\n")


def test_check_tree() -> None:
    assert check_tree([2, 0, 2]) is None
    s = read_conllu(FIX / "cycle.conllu")[0]
    reason = check_tree(s.heads)  # type: ignore[arg-type]
    assert reason is not None and reason.startswith("cycle") and "2" in reason and "3" in reason
    assert check_tree([0, 0, 2]) == "several roots: words 1, 2"
    assert "outside" in (check_tree([0, 5]) or "")
    assert "own head" in (check_tree([0, 2]) or "")
    rng = random.Random(1)
    for _ in range(200):  # property: check_tree agrees with a naive reachability test
        n = rng.randint(1, 7)
        heads = [rng.randint(0, n) for _ in range(n)]
        ok = sum(h == 0 for h in heads) == 1 and all(h != i + 1 for i, h in enumerate(heads))
        if ok:
            for i in range(n):
                v, steps = i + 1, 0
                while v != 0 and steps <= n:
                    v, steps = heads[v - 1], steps + 1
                ok = ok and v == 0
        assert (check_tree(heads) is None) == ok, heads


def test_sentence_is_deep_copied() -> None:
    s = read_conllu(FIX / "mwt_empty.conllu")[0]
    c = s.copy()
    c.rows[0]["feats"]["Case"] = "Acc"
    c.rows.metadata["text"] = "changed"
    assert s.rows[0]["feats"]["Case"] == "Nom" and s.text == "I don't know."
    # a changed comment is regenerated, the others stay verbatim
    lines = c.serialize().split("\n")
    assert "# text = changed" in lines and "# a free comment without equals" in lines
    assert "Case=Acc" in lines[3]
    assert isinstance(c, Sentence)


# --------------------------------------------------------------------------- comments, encodings, odd files
WORD = "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n"


def test_duplicate_comment_keys_pass_through_verbatim() -> None:
    text = "# sent_id = a\n# note\n# sent_id = b\n#  spaced  =  x \n" + WORD + "\n"
    s = parse_conllu_string(text)[0]
    assert to_conllu_string([s]) == text
    assert s.sent_id == "b" and s.comments == ["# sent_id = a", "# note", "# sent_id = b", "#  spaced  =  x "]


def test_changed_comment_regenerates_only_the_line_that_holds_the_value() -> None:
    text = "# sent_id = a\r\n# text = Hi\r\n# sent_id = b\r\n" + WORD.replace("\n", "\r\n") + "\r\n"
    s = parse_conllu_string(text)[0]
    s.metadata["sent_id"] = "c"
    s.metadata["new"] = "1"
    assert s.comments == ["# sent_id = a", "# text = Hi", "# sent_id = c", "# new = 1"]
    assert "# sent_id = c\r\n" in to_conllu_string([s])  # the line keeps its CRLF
    del s.metadata["sent_id"]
    assert s.comments == ["# text = Hi", "# new = 1"]  # a deleted key loses all its lines


def test_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    body = (FIX / "mwt_empty.conllu").read_bytes()
    p = tmp_path / "bom.conllu"
    p.write_bytes(b"\xef\xbb\xbf" + body)
    for src in (p, io.BytesIO(b"\xef\xbb\xbf" + body), io.StringIO("\ufeff" + body.decode())):
        sents = read_conllu(src)
        assert sents[0].sent_id == "mwt-1" and to_conllu_string(sents).encode() == body
    assert parse_conllu_string("\ufeff" + body.decode())[0].line == 1


@pytest.mark.parametrize("content", [b"", b"\n", b"\n\n  \n", b"\xef\xbb\xbf", b"\r\n\r\n"])
def test_empty_file_has_no_sentences(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "empty.conllu"
    p.write_bytes(content)
    assert read_conllu(p) == [] and list(iter_conllu(io.BytesIO(content))) == []
    out = tmp_path / "out.conllu"
    write_conllu(read_conllu(p), out)
    assert out.read_bytes() == b""


def test_non_utf8_stdin_fails_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    good = (FIX / "mwt_empty.conllu").read_bytes()
    data = good + b"# sent_id = late\n" + WORD.encode().replace(b"Hi", b"H\xe9") + b"\n"
    bad_line = good.count(b"\n") + 2
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    with pytest.raises(CoNLLUError, match=rf"^<stdin>:{bad_line}: not valid UTF-8 \(byte 0xe9 at byte column 4\)"):
        iter_conllu("-")  # the call itself fails: no sentence has been parsed yet


class _Pipe(io.RawIOBase):
    """A non-seekable byte stream (like a shell pipe)."""

    def __init__(self, data: bytes) -> None:
        self._src = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        chunk = self._src.read(min(len(b), 7))  # short reads, as pipes give
        b[: len(chunk)] = chunk
        return len(chunk)


def test_pipe_is_checked_then_streamed() -> None:
    good = (FIX / "mwt_empty.conllu").read_bytes()
    assert to_conllu_string(iter_conllu(io.BufferedReader(_Pipe(good)))).encode() == good
    bad = good.replace(b"Mary", b"M\xc3ry")  # a truncated 2-byte sequence, first on line 12 ("# text = Mary")
    with pytest.raises(CoNLLUError, match=r"^<stream>:12: not valid UTF-8 \(byte 0xc3 at byte column 11\)"):
        iter_conllu(io.BufferedReader(_Pipe(bad)))


def test_gzip_input(tmp_path: Path) -> None:
    import gzip

    body = (FIX / "mwt_empty.conllu").read_bytes()
    gz = tmp_path / "x.conllu.gz"
    gz.write_bytes(gzip.compress(body))
    assert to_conllu_string(read_conllu(gz)).encode() == body
    fake = tmp_path / "fake.conllu.gz"
    fake.write_bytes(body)
    with pytest.raises(CoNLLUError, match=r"fake\.conllu\.gz: is not gzip-compressed") as info:
        read_conllu(fake)
    assert "\n" not in str(info.value) and info.value.line == 0
    cut = tmp_path / "cut.conllu.gz"
    cut.write_bytes(gzip.compress(body * 50)[:-40])
    with pytest.raises(CoNLLUError, match=r"cut\.conllu\.gz: the gzip data is truncated"):
        read_conllu(cut)
    gzipped_plain_name = tmp_path / "plain.conllu"
    gzipped_plain_name.write_bytes(gzip.compress(body))
    with pytest.raises(CoNLLUError, match=r"plain\.conllu:1: not valid UTF-8 .* looks like gzip data"):
        read_conllu(gzipped_plain_name)


def test_directory_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CoNLLUError, match=rf"^{tmp_path}: is a directory, expected a CoNLL-U file$"):
        read_conllu(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"nope\.conllu: no such file"):
        read_conllu(tmp_path / "nope.conllu")


def test_raw_text_gets_a_hint() -> None:
    with pytest.raises(CoNLLUError, match=r"^<string>:1: .*looks like plain text, not CoNLL-U; use --raw"):
        parse_conllu_string("The cat sat.\n")
    with pytest.raises(CoNLLUError, match=r"^<string>:2: .*looks like plain text"):
        parse_conllu_string("# newdoc\nThe cat sat.\n")
    with pytest.raises(CoNLLUError, match=r"separated by spaces, expected 10 tab-separated"):
        parse_conllu_string("1 The the DET DT _ 0 root _ _\n\n")


def test_columns_split_on_tabs_only() -> None:
    # the conllu library also splits on runs of two spaces; a FORM "a  b" must stay one column
    s = parse_conllu_string("1\ta  b\ta\tX\t_\t_\t0\troot\t_\tTranslit=x=y|SpaceAfter=No\n\n")[0]
    assert s.forms == ["a  b"] and s.lemmas == ["a"] and s.words[0]["misc"]["Translit"] == "x=y"
    assert s.space_after == [False]


def test_with_parse_keeps_crlf_and_untouched_columns() -> None:
    text = "# x = 1\r\n1\tA\ta\tX\t_\t_\t2\tdep\t_\t_\r\n2\tB\tb\tX\t_\t_\t0\troot\t_\t_\r\n\r\n"
    s = parse_conllu_string(text)[0].with_parse([0, 1], ["root", "dep"])
    assert to_conllu_string([s]) == ("# x = 1\r\n1\tA\ta\tX\t_\t_\t0\troot\t_\t_\r\n"
                                     "2\tB\tb\tX\t_\t_\t1\tdep\t_\t_\r\n\r\n")


def test_missing_final_blank_line_is_added_once() -> None:
    a = parse_conllu_string(WORD)  # no blank line after the last sentence
    b = parse_conllu_string(WORD + "\n")
    assert to_conllu_string(a + b) == WORD + "\n" + WORD + "\n"


# --------------------------------------------------------------------------- streaming and atomic output
def _big_conllu(n: int) -> bytes:
    sent = (FIX / "mwt_empty.conllu").read_bytes()
    return sent * (n // 2)


def test_iter_conllu_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    import tracemalloc

    peaks = []
    for n in (200, 4000):
        p = tmp_path / f"{n}.conllu"
        p.write_bytes(_big_conllu(n))
        tracemalloc.start()
        count = sum(1 for _ in iter_conllu(p))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert count == n
    assert peaks[1] < peaks[0] + 256 * 1024, peaks  # 20x the file, (almost) the same peak


def test_iter_conllu_is_lazy() -> None:
    data = _big_conllu(4) + b"1\tbad\n\n"
    it = iter_conllu(io.BytesIO(data))
    assert next(it).sent_id == "mwt-1"  # the broken last sentence is not parsed yet
    bad_line = data.count(b"\n") - 1
    with pytest.raises(CoNLLUError, match=f":{bad_line}: found 2 tab-separated"):
        list(it)


def test_atomic_output(tmp_path: Path) -> None:
    from g2gt.core.output import OutputError, open_output

    target = tmp_path / "out.conllu"
    target.write_text("old\n")
    sents = read_conllu(FIX / "mwt_empty.conllu")

    def failing():
        yield sents[0]
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_conllu(failing(), target)
    assert target.read_text() == "old\n" and sorted(os.listdir(tmp_path)) == ["out.conllu"]
    write_conllu(sents, target)
    assert target.read_bytes() == (FIX / "mwt_empty.conllu").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["out.conllu"]
    new = tmp_path / "new.conllu"
    with open_output(new) as f:
        f.write("x\r\n")
    assert new.read_bytes() == b"x\r\n"
    umask = os.umask(0)
    os.umask(umask)
    assert (new.stat().st_mode & 0o777) == 0o666 & ~umask
    with pytest.raises(OutputError, match="is a directory"):
        write_conllu(sents, tmp_path)
    with pytest.raises(OutputError, match="does not exist"):
        write_conllu(sents, tmp_path / "no" / "x.conllu")


def test_output_dash_is_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    write_conllu(read_conllu(FIX / "mwt_empty.conllu"), "-")
    assert capsys.readouterr().out == (FIX / "mwt_empty.conllu").read_text(encoding="utf-8")


def test_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from g2gt.core.output import same_file

    a = tmp_path / "a.conllu"
    a.write_text("x")
    (tmp_path / "link.conllu").symlink_to(a)
    monkeypatch.chdir(tmp_path)
    assert same_file(a, "a.conllu") and same_file("link.conllu", str(a))
    assert not same_file(a, tmp_path / "b.conllu")  # the output does not exist yet
    assert not same_file("-", "-") and not same_file(a, io.StringIO())


def test_writer_never_writes_broken_columns() -> None:
    s = parse_conllu_string(WORD + "\n")[0]
    s.rows[0]["lemma"] = ""  # e.g. a lemma rule that stripped the whole form
    assert to_conllu_string([s]) == WORD.replace("\thi\t", "\t_\t") + "\n"
    s.rows[0]["deprel"] = "a\tb"
    with pytest.raises(ValueError, match=r"cannot write DEPREL 'a\\tb' of token 1"):
        to_conllu_string([s])
    with pytest.raises(ValueError, match="whitespace"):
        sentence_from_words(["ok", " padded"])


def test_fifo_input_and_device_output(tmp_path: Path) -> None:
    import threading

    body = (FIX / "mwt_empty.conllu").read_bytes()
    r, w = os.pipe()  # read through a path that can be read only once, like <(zcat x.gz) or /dev/stdin

    def feed() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(body)

    t = threading.Thread(target=feed)
    t.start()
    try:
        sents = read_conllu(f"/dev/fd/{r}")
    finally:
        t.join()
        os.close(r)
    assert to_conllu_string(sents).encode() == body
    write_conllu(sents, "/dev/null")  # written in place, not replaced by a regular file
    assert not Path("/dev/null").is_file()


def test_an_output_folder_that_cannot_be_written_names_the_output_not_a_temporary(tmp_path, monkeypatch):
    import tempfile

    from g2gt.core.output import OutputError, open_output

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # a read-only folder (root may write anywhere)
    target = tmp_path / "out.conllu"
    with pytest.raises(OutputError, match=r"out\.conllu: cannot write here \(Permission denied\)") as err:
        with open_output(target) as f:
            f.write("x")
    assert ".tmp" not in str(err.value) and not target.exists()
