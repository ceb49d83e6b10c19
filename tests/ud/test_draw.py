"""Tests for g2gt.ud.draw and `g2gt draw`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.draw import coref_marks, draw_conllu
from g2gt.ud.io.svg import PALETTE, entity_color, render_svg, tree_svg
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
    from g2gt.core.registry import DEFAULT_MODEL, available_models

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


# --------------------------------------------------------------------------- coreference marks
COREF_DOC = """# newdoc id = d1
# global.Entity = eid-etype-head-other
# sent_id = d1-1
1	Mary	_	PROPN	_	_	2	nsubj	_	Entity=(1-person-1)
2	met	_	VERB	_	_	0	root	_	_
3	John	_	PROPN	_	_	2	obj	_	Entity=(2-person-1)
4	.	_	PUNCT	_	_	2	punct	_	_

# sent_id = d1-2
1	She	_	PRON	_	_	2	nsubj	_	Entity=(1-person-1)
2	gave	_	VERB	_	_	0	root	_	_
3	him	_	PRON	_	_	2	iobj	_	Entity=(2-person-1)
4	her	_	PRON	_	_	6	nmod:poss	_	Entity=(3-object-3(1-person-1)
5	old	_	ADJ	_	_	6	amod	_	_
6	book	_	NOUN	_	_	2	obj	_	Entity=3)
7	.	_	PUNCT	_	_	2	punct	_	_

# sent_id = d1-3
1	It	_	PRON	_	_	2	nsubj	_	Entity=(3-object-1)
2	was	_	AUX	_	_	0	root	_	_
3	red	_	ADJ	_	_	2	xcomp	_	Entity=(4-abstract-1)
4	.	_	PUNCT	_	_	2	punct	_	_

"""


@pytest.fixture
def coref_file(tmp_path: Path) -> Path:
    path = tmp_path / "coref.conllu"
    path.write_text(COREF_DOC, encoding="utf-8")
    return path


def _marks(svg: str) -> list[tuple[str, str, float, float, float]]:
    """``(entity, colour, x, width, y)`` of each coreference bar of a drawing."""
    out = []
    for g in ET.fromstring(svg).iter(NS + "g"):
        if g.get("class") == "mention":
            rect = g.find(NS + "rect")
            out.append((g.get("data-entity"), rect.get("fill"), float(rect.get("x")), float(rect.get("width")),
                        float(rect.get("y"))))
    return out


def test_coref_marks_one_colour_per_entity_and_no_singletons(coref_file: Path) -> None:
    marks = coref_marks(read_conllu(coref_file))
    assert [[(m.start, m.end, m.entity) for m in ms] for ms in marks] == [
        [(1, 1, "1"), (3, 3, "2")], [(1, 1, "1"), (3, 3, "2"), (4, 6, "3"), (4, 4, "1")], [(1, 1, "3")]]
    colour = {m.entity: m.color for ms in marks for m in ms}
    assert len(set(colour.values())) == 3  # entity 4 ("red") has one mention: no mark
    assert all(m.color == colour[m.entity] for ms in marks for m in ms)
    assert marks[1][2].etype == "object" and marks[1][2].text == "her old book"


def test_drawing_has_a_bar_per_mention_nested_below_the_words(coref_file: Path) -> None:
    svg = draw_conllu(coref_file, sentence=2, coref=True)
    bars = _marks(svg)
    assert sorted(e for e, *_ in bars) == ["1", "1", "2", "3"]
    she, her = sorted((b for b in bars if b[0] == "1"), key=lambda b: b[2])  # words 1 and 4
    (book,) = [b for b in bars if b[0] == "3"]  # words 4-6: "her old book"
    assert she[1] == her[1] != book[1]
    assert book[2] <= her[2] and book[2] + book[3] > her[2] + 2 * her[3]  # spans "her" and beyond
    assert book[4] > her[4] == she[4]  # the longer mention lies below the one inside it
    root = ET.fromstring(svg)
    words_y = max(float(t.get("y")) for t in root.iter(NS + "text") if t.get("class") in ("word", "upos"))
    assert all(y > words_y for *_, y in bars) and float(root.get("height")) > book[4]
    titles = [t.text for t in root.iter(NS + "title")]
    assert "entity 3 (object): her old book" in titles
    plain = draw_conllu(coref_file, sentence=2)
    assert not _marks(plain) and float(ET.fromstring(plain).get("height")) < float(root.get("height"))


def test_mention_across_sentences_is_marked_in_both() -> None:
    text = ("1\tA\t_\t_\t_\t_\t0\troot\t_\tEntity=(1-x(2-y)\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n"
            "1\tc\t_\t_\t_\t_\t0\troot\t_\tEntity=1)\n2\td\t_\t_\t_\t_\t1\tdep\t_\tEntity=(1-x)(2-y)\n\n")
    from g2gt.ud.io import parse_conllu_string

    marks = coref_marks(parse_conllu_string(text))
    assert [(m.start, m.end, m.entity) for m in marks[0]] == [(1, 2, "1"), (1, 1, "2")]
    assert [(m.start, m.end, m.entity) for m in marks[1]] == [(1, 1, "1"), (2, 2, "1"), (2, 2, "2")]


def test_entity_colours_are_distinct_past_the_palette() -> None:
    colours = [entity_color(k) for k in range(40)]
    assert colours[:len(PALETTE)] == list(PALETTE) and len(set(colours)) == 40


def test_coref_without_entities_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="no Entity= item"):
        draw_conllu(FIX / "mwt_empty.conllu", coref=True)
    assert main(["draw", "--coref", str(FIX / "mwt_empty.conllu"), "-o", str(tmp_path / "t.svg")]) == 2
    assert "no coreference to draw" in capsys.readouterr().err


def test_cli_draw_coref_file_and_text(coref_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.svg"
    assert main(["draw", "--coref", str(coref_file), "--sent-id", "d1-2", "-o", str(out)]) == 0
    assert [e for e, *_ in _marks(out.read_text(encoding="utf-8"))] == ["1", "2", "1", "3"]
    from g2gt.core.registry import DEFAULT_MODEL, available_models

    if DEFAULT_MODEL not in available_models():
        pytest.skip("the default model is not in this checkout")
    text = "Mary met John. She gave him her book."
    assert main(["draw", "--coref", "--text", text, "--sentence", "2", "-o", str(out)]) == 0
    import g2gt

    doc = g2gt.load(DEFAULT_MODEL, device="cpu", exclude=("enhance",))(text, coref=True)
    shared = {e["id"] for e in doc.to_dict()["entities"] if len(e["mentions"]) >= 2 and any(m["sentence"] == 1
                                                                               for m in e["mentions"])}
    assert shared and {e for e, *_ in _marks(out.read_text(encoding="utf-8"))} == shared
