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
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g2gt.ud.io import CoNLLUError, iter_conllu, parse_conllu_string, read_conllu, to_conllu_string, write_conllu


def _settings(n: int) -> settings:
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------- valid CoNLL-U
ODD = "\u00a0\u0301\u200b\u200d\u200f\u2028\x85\x0b\x1c\ufeff\x00\r#=|:_-. 👍🏽🇺🇸日本שלום"
_chars = st.one_of(st.characters(codec="utf-8", exclude_characters="\t\n"), st.sampled_from(ODD))
# a column: no tab or newline, no whitespace at either end, not empty
COL = st.text(_chars, min_size=1, max_size=6).map(lambda s: s.strip() or "_")
NAME = st.text(st.characters(codec="utf-8", exclude_characters="\t\n=|"), min_size=1, max_size=5).map(
    lambda s: s.strip() or "K")
PAIRS = st.lists(st.tuples(NAME, st.one_of(st.none(), COL)), min_size=1, max_size=3).map(
    lambda kv: "|".join(k if v is None else f"{k}={v}" for k, v in kv))
DICT = st.one_of(st.just("_"), PAIRS, COL)  # FEATS / MISC: '_', key=value pairs, or anything
COMMENT = st.one_of(
    st.builds(lambda k, v: f"# {k} = {v}", st.sampled_from(["sent_id", "text", "newdoc id", "newpar", "x"]), COL),
    st.sampled_from(["# newdoc", "# newpar", "#", "# text =", "# = x", "#  sent_id=a  "]),
    st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=12).map(lambda s: "#" + s),
)


@st.composite
def sentence_lines(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """``(lines, comments, forms)`` of one valid sentence (lines without line ends)."""
    n = draw(st.integers(1, 6))
    comments = draw(st.lists(COMMENT, max_size=4))
    ranges: dict[int, int] = {}
    k = 1
    while k < n:
        if draw(st.booleans()) and draw(st.booleans()):
            end = draw(st.integers(k + 1, min(n, k + 2)))
            ranges[k] = end
            k = end + 1
        else:
            k += 1
    empties = {i: draw(st.sampled_from([0, 0, 0, 1, 2])) for i in range(n + 1)}
    ids = [f"{i}.{j}" for i in range(n + 1) for j in range(1, empties[i] + 1)]
    ids = [x for x in ids if x.startswith("0.")]
    for i in range(1, n + 1):
        if i in ranges:
            ids.append(f"{i}-{ranges[i]}")
        ids.append(str(i))
        ids.extend(f"{i}.{j}" for j in range(1, empties[i] + 1))
    head = st.one_of(st.just("_"), st.integers(0, n).map(str))
    deps = st.one_of(st.just("_"), COL, st.lists(st.tuples(st.sampled_from(ids + ["0"]), st.from_regex(
        r"[a-z][a-z:]{0,4}[a-z]|[A-Zé]", fullmatch=True)), min_size=1, max_size=2).map(
        lambda ps: "|".join(f"{h}:{r}" for h, r in ps)))
    lines, forms = [], []
    for tid in ids:
        form = draw(COL)
        cols = [tid, form, draw(COL), draw(COL), draw(COL), draw(DICT), draw(head), draw(COL), draw(deps), draw(DICT)]
        if tid.isdigit():
            forms.append(form)
        lines.append("\t".join(cols))
    return comments + lines, comments, forms


@st.composite
def conllu_file(draw: st.DrawFn) -> tuple[bytes, list[list[str]], list[list[str]]]:
    """``(bytes, comments per sentence, forms per sentence)`` of a valid CoNLL-U file."""
    sents = draw(st.lists(sentence_lines(), min_size=1, max_size=4))
    ends = draw(st.sampled_from(["lf", "crlf", "mixed"]))
    out = []

    def end() -> str:
        return {"lf": "\n", "crlf": "\r\n"}.get(ends) or draw(st.sampled_from(["\n", "\r\n"]))

    for lines, _, _ in sents:
        out.extend(line + end() for line in lines)
        for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
            out.append(draw(st.sampled_from(["", "", "", " ", "\t"])) + end())
    return "".join(out).encode("utf-8"), [c for _, c, _ in sents], [f for _, _, f in sents]


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


@_settings(100)
@given(conllu_file())
def test_valid_conllu_round_trips_byte_for_byte(case) -> None:
    _check_round_trip(case)


@_settings(20)
@given(conllu_file())
def test_valid_conllu_round_trips_through_files(tmp_path_factory, case) -> None:
    _check_round_trip(case, tmp_path_factory.mktemp("rt"))


@_settings(60)
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
        for k, (t_old, t_new) in enumerate(zip(s.tokens, b.tokens, strict=True)):
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


@_settings(100)
@given(mutated())
def test_mutated_conllu_parses_or_raises_conllu_error(data: bytes) -> None:
    _check_mutation(data)


@pytest.mark.slow
@_settings(10_000)
@given(conllu_file())
def test_valid_conllu_round_trips_10k(case) -> None:
    _check_round_trip(case)


@pytest.mark.slow
@_settings(10_000)
@given(mutated())
def test_mutated_conllu_10k(data: bytes) -> None:
    _check_mutation(data)
