"""Tests for g2gt.ud.draw and `g2gt draw`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.draw import draw_conllu, render_svg, tree_svg
from g2gt.ud.io import read_conllu, sentence_from_words
from fixture_paths import FIXTURES

FIX = FIXTURES
SAMPLE = EWT_SAMPLE_DEV
NS = "{http://www.w3.org/2000/svg}"


def _texts(root: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in root.iter(NS + "text") if t.get("class") == cls]


@pytest.mark.parametrize("k", [0, 2, 7])
def test_svg_valid_with_all_words_and_labels(k: int) -> None:
    s = read_conllu(SAMPLE)[k]
    root = ET.fromstring(render_svg(s))
    assert root.tag == NS + "svg"
    assert _texts(root, "word") == s.forms
    assert sorted(_texts(root, "label")) == sorted(r or "" for r in s.deprels)
    arcs = [p for p in root.iter(NS + "path") if "arc" in (p.get("class") or "")]
    assert len(arcs) == len(s)  # one arc per word, incl. the root arrow
    assert sum("root" in (p.get("class") or "") for p in arcs) == 1


def test_xml_escaping_and_width_grows() -> None:
    svg = tree_svg(["<a>", "&", '"q"'], [2, 0, 2], ["x<y", "root", "a&b"], ["X", "Y", "Z"], title="t<&>")
    root = ET.fromstring(svg)
    assert _texts(root, "word") == ["<a>", "&", '"q"']
    assert sorted(_texts(root, "label")) == sorted(["x<y", "root", "a&b"])
    short = ET.fromstring(tree_svg(["a", "b"], [0, 1], ["root", "dep"]))
    long = ET.fromstring(tree_svg(["a"] * 20, [0] + [1] * 19, ["root"] + ["dep"] * 19))
    assert float(long.get("width")) > 5 * float(short.get("width"))


def test_sentence_without_heads_draws_words_only() -> None:
    root = ET.fromstring(render_svg(sentence_from_words(["No", "parse"])))
    assert _texts(root, "word") == ["No", "parse"] and _texts(root, "label") == []


def test_pick_sentence_and_errors() -> None:
    by_num = draw_conllu(FIX / "mwt_empty.conllu", sentence=2)
    by_id = draw_conllu(FIX / "mwt_empty.conllu", sent_id="empty-1")
    assert by_num == by_id and "Mary" in by_num
    with pytest.raises(ValueError, match=r"has 2 sentence\(s\); sentence number 3 is outside 1\.\.2"):
        draw_conllu(FIX / "mwt_empty.conllu", sentence=3)
    with pytest.raises(ValueError, match="no sentence with sent_id"):
        draw_conllu(FIX / "mwt_empty.conllu", sent_id="nope")


def test_cli_draw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tree.svg"
    assert main(["draw", str(FIX / "mwt_empty.conllu"), "--sentence", "1", "-o", str(out)]) == 0
    root = ET.parse(out).getroot()
    assert "know" in _texts(root, "word")
    assert main(["draw", str(FIX / "mwt_empty.conllu"), "--sentence", "9", "-o", str(out)]) == 2
    assert "outside 1..2" in capsys.readouterr().err


def test_draw_text_parses_with_the_shipped_model(tmp_path):
    from g2gt.cli.main import main
    from g2gt.ud.models import DEFAULT_MODEL, available_models

    if DEFAULT_MODEL not in available_models():
        pytest.skip("the default model is not in this checkout")
    out = tmp_path / "t.svg"
    assert main(["draw", "--text", "The cat sat.", "-o", str(out)]) == 0
    svg = out.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and all(w in svg for w in ("The", "cat", "sat"))
    assert main(["draw", "--text", "The cat sat.", str(out)]) == 2  # INPUT and --text: one of them


def test_nothing_of_the_root_arrow_shows_above_its_label() -> None:
    """The root arrow starts below the white box behind its label (a line starting above the box showed as a
    stray dot over the label), and the title is one text line of its own class."""
    s = read_conllu(SAMPLE)[0]
    root = ET.fromstring(render_svg(s))
    arrow = next(p for p in root.iter(NS + "path") if "root" in (p.get("class") or ""))
    start_y = float(arrow.get("d").split()[2])
    label = next(t for t in root.iter(NS + "text") if t.get("class") == "label" and t.text == "root")
    box = next(r for r in root.iter(NS + "rect") if abs(float(r.get("x")) + float(r.get("width")) / 2
                                                         - float(label.get("x"))) < 0.2)
    assert start_y >= float(box.get("y")) + float(box.get("height"))
    assert _texts(root, "title") == [f"{s.sent_id}: {s.text}"]
