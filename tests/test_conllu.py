"""Tests for g2gt.io.conllu: round trip, views, with_parse, validation errors."""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import pytest

from g2gt.graph import LabelVocab, UP, DOWN, ChainChannel, EdgeChannel
from g2gt.io import (
    CoNLLUError,
    Sentence,
    check_tree,
    parse_conllu_string,
    read_conllu,
    sentence_from_words,
    write_conllu,
)
from g2gt.io.conllu import to_conllu_string

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).resolve().parent / "fixtures"
SAMPLES = sorted((ROOT / "data" / "ud-en-ewt").glob("*.sample.conllu"))
FULL_DIR = Path(os.environ.get("G2GT_DATA", ROOT.parent / "shared" / "data")) / "ud-en-ewt"


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
    assert len(s1) == 5 and len(s1.tokens) == 6  # the 2-3 range line is a token, not a word
    assert s1.forms == ["I", "do", "n't", "know", "."]
    assert s1.heads == [4, 4, 4, 0, 4]
    assert s1.deprels == ["nsubj", "aux", "advmod", "root", "punct"]
    assert s1.upos[0] == "PRON"
    assert s1.text == "I don't know." and s1.sent_id == "mwt-1"
    assert s1.space_after == [True, True, True, False, True]
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
        ("empty.conllu", 1, "empty file"),
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
    c.tokens[0]["feats"]["Case"] = "Acc"
    c.tokens.metadata["text"] = "changed"
    assert s.tokens[0]["feats"]["Case"] == "Nom" and s.text == "I don't know."
    # a changed comment is regenerated, the others stay verbatim
    lines = c.serialize().split("\n")
    assert "# text = changed" in lines and "# a free comment without equals" in lines
    assert "Case=Acc" in lines[3]
    assert isinstance(c, Sentence)
