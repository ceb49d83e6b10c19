"""Hypothesis strategies for random valid CoNLL-U files, shared by the reader's property tests
(tests/ud/io/test_conllu_fuzz.py) and the CLI's robustness tests (tests/cli/test_robustness.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def fuzz_settings(n: int) -> settings:
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
