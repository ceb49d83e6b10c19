"""Property tests (hypothesis) for the CoNLL-U reader and writer.

* Random *valid* CoNLL-U (comments with repeated keys and free text, multiword tokens, empty
  nodes, CRLF or mixed line ends, several blank lines between sentences, odd Unicode in every
  column) is read and written back byte for byte, through a stream and through a file.
* A changed parse (``with_parse``) rewrites HEAD / DEPREL and nothing else.
* Random mutations of valid files (bytes inserted, deleted or replaced, lines swapped or
  duplicated, bad UTF-8, a BOM, tabs and newlines in odd places) either parse or raise
  :class:`CoNLLUError` (``FILE:LINE: ...``), never another exception; what parses writes
  CoNLL-U that reads back to the same text.

The default run checks a few hundred derandomized (reproducible) examples; ``-m slow`` runs
10,000 of each.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from g2gt.ud.io import CoNLLUError, iter_conllu, parse_conllu_string, read_conllu, to_conllu_string, write_conllu


from conllu_strategies import fuzz_settings, conllu_file

#: examples of each slow fuzz run (CI sets G2GT_FUZZ_EXAMPLES to fit its time budget)
SLOW_EXAMPLES = int(os.environ.get("G2GT_FUZZ_EXAMPLES", "10000"))


def _check_round_trip(case: tuple[bytes, list[list[str]], list[list[str]]], tmp: Path | None = None) -> None:
    data, comments, forms = case
    sents = read_conllu(io.BytesIO(data))
    assert [s.forms for s in sents] == forms
    assert [s.comments for s in sents] == [[c.rstrip("\r") for c in cs] for cs in comments]
    assert to_conllu_string(sents).encode("utf-8") == data
    assert to_conllu_string(parse_conllu_string(data.decode("utf-8"))).encode("utf-8") == data
    if tmp is not None:
        src, dst = tmp / "in.conllu", tmp / "out.conllu"
        src.write_bytes(data)
        write_conllu(iter_conllu(src), dst)
        assert dst.read_bytes() == data


@fuzz_settings(100)
@given(conllu_file())
def test_valid_conllu_round_trips_byte_for_byte(case) -> None:
    _check_round_trip(case)


@fuzz_settings(20)
@given(conllu_file())
def test_valid_conllu_round_trips_through_files(tmp_path_factory, case) -> None:
    _check_round_trip(case, tmp_path_factory.mktemp("rt"))


@fuzz_settings(60)
@given(conllu_file(), st.randoms(use_true_random=False))
def test_with_parse_changes_head_and_deprel_only(case, rnd) -> None:
    sents = read_conllu(io.BytesIO(case[0]))
    new = []
    for s in sents:
        n = len(s)
        heads = [rnd.randint(0, n) for _ in range(n)]
        rels = [rnd.choice(["nsubj", "obj", "root", "x:y"]) for _ in range(n)]
        new.append((s.with_parse(heads, rels), heads, rels))
    back = parse_conllu_string(to_conllu_string(p for p, _, _ in new))
    for (_, heads, rels), b, s in zip(new, back, sents, strict=True):
        assert b.heads == heads and b.deprels == rels and b.forms == s.forms and b.comments == s.comments
        for k, (t_old, t_new) in enumerate(zip(s.rows, b.rows, strict=True)):
            same = {name: t_old[name] == t_new[name] for name in t_old}
            if isinstance(t_old["id"], int):
                assert all(v for name, v in same.items() if name not in ("head", "deprel")), (k, same)
            else:
                assert all(same.values()), (k, same)


# --------------------------------------------------------------------------- mutations
SNIPPETS = [b"\t", b"\n", b"\r", b"\r\n", b"#", b"-", b".", b"_", b"0", b"1", b"9", b"10", b"=", b"|", b":", b" ",
            b"  ", b"\xff", b"\xc3", b"\xe2\x82", b"\xef\xbb\xbf", b"\x00", b"\x1f\x8b", b"\n\n", b"1-2", b"1.1",
            b"0.1", b"-1", b"2-1", b"5:x", b"1-2:x", b"# text = x\n", b"\t_\t_\t_\t_\t_\t_\t_\t_\t_\n"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(conllu_file())[0])
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "swap", "dup", "byte"]))
        i = draw(st.integers(0, len(data)))
        if op == "insert":
            data[i:i] = draw(st.sampled_from(SNIPPETS))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 12))]
        elif op == "replace" and i < len(data):
            data[i:i + 1] = draw(st.sampled_from(SNIPPETS))
        elif op == "byte" and i < len(data):
            data[i] = draw(st.integers(0, 255))
        elif op in ("swap", "dup"):
            lines = bytes(data).split(b"\n")
            a = draw(st.integers(0, len(lines) - 1))
            b = draw(st.integers(0, len(lines) - 1))
            if op == "swap":
                lines[a], lines[b] = lines[b], lines[a]
            else:
                lines.insert(b, lines[a])
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def _check_mutation(data: bytes) -> None:
    try:
        sents = read_conllu(io.BytesIO(data), name="m.conllu")
    except CoNLLUError as e:
        assert str(e).startswith("m.conllu:") and "\n" not in str(e)
        return
    text = to_conllu_string(sents)
    again = parse_conllu_string(text)  # what we write, we read
    assert to_conllu_string(again) == text
    assert [s.forms for s in again] == [s.forms for s in sents]


@fuzz_settings(100)
@given(mutated())
def test_mutated_conllu_parses_or_raises_conllu_error(data: bytes) -> None:
    _check_mutation(data)


@pytest.mark.slow
@fuzz_settings(SLOW_EXAMPLES)
@given(conllu_file())
def test_valid_conllu_round_trips_many(case) -> None:
    _check_round_trip(case)


@pytest.mark.slow
@fuzz_settings(SLOW_EXAMPLES)
@given(mutated())
def test_mutated_conllu_many(data: bytes) -> None:
    _check_mutation(data)
