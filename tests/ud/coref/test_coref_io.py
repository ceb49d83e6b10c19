"""Reading and writing CorefUD Entity= annotations."""

import pytest

from g2gt.ud.coref.io import (
    CorefFormatError, Mention, documents, entity_layout, format_entity, parse_entity, read_mentions, write_mentions,
)
from g2gt.ud.io.conllu import parse_conllu_string, to_conllu_string


def test_parse_entity_brackets():
    assert parse_entity("(7-abstract-new(3-abstract)") == [("7", "abstract-new", True, False),
                                                            ("3", "abstract", True, True)]
    assert parse_entity("7)6)") == [("7", "", False, True), ("6", "", False, True)]
    assert parse_entity("(35-abstract-x)29)27)") == [("35", "abstract-x", True, True), ("29", "", False, True),
                                                     ("27", "", False, True)]
    with pytest.raises(ValueError):
        parse_entity("(-x")


def test_read_mentions_spans_types_and_entities(doc_sentences):
    docs = documents(doc_sentences)
    assert len(docs) == 1
    assert entity_layout(docs[0]).startswith("GRP-etype")
    ms = read_mentions(docs[0])
    got = [(m.eid, m.words, m.etype) for m in ms]
    assert got == [("1", [0], "person"), ("2", [2], "person"), ("1", [4], "person"), ("2", [6], "person"),
                   ("3", [7, 8, 9], "object"), ("1", [7], "person")]
    assert ms[4].other == "new-nnnnn-cf3-3-sgl"


def test_unbalanced_brackets_name_the_line():
    text = "# newdoc id = d\n1\ta\ta\tX\t_\t_\t0\troot\t_\tEntity=1)\n\n"
    with pytest.raises(CorefFormatError, match=r":2: .*not open"):
        read_mentions(parse_conllu_string(text))
    text = "# newdoc id = d\n1\ta\ta\tX\t_\t_\t0\troot\t_\tEntity=(1-person\n\n"
    with pytest.raises(CorefFormatError, match="open mentions"):
        read_mentions(parse_conllu_string(text))


def test_discontinuous_mention_is_joined():
    text = ("# newdoc id = d\n# global.Entity = eid-etype-head-other\n"
            "1\ta\ta\tX\t_\t_\t0\troot\t_\tEntity=(e1[1/2]-person-1-)\n"
            "2\tb\tb\tX\t_\t_\t1\tdep\t_\t_\n"
            "3\tc\tc\tX\t_\t_\t1\tdep\t_\tEntity=(e1[2/2]-person-1-)\n\n")
    (m,) = read_mentions(parse_conllu_string(text))
    assert m.eid == "e1" and m.words == [0, 2] and m.parts == [(0, 0), (2, 2)] and m.head == 0


def test_format_entity_nests_as_corefud():
    ms = [Mention("1", [0, 1, 2], "person"), Mention("2", [2], "object"), Mention("3", [1, 2], "place")]
    v = format_entity(ms, "GRP-etype-infstat")
    assert v == {0: "(1-person", 1: "(3-place", 2: "(2-object)3)1)"}


def test_crossing_mentions_read_back():
    ms = [Mention("55", [0, 1, 2], "abstract"), Mention("56", [2, 3], "place")]
    v = format_entity(ms, "GRP-etype")
    assert v[2] == "55)(56-place"
    text = "# newdoc id = d\n" + "".join(
        f"{i + 1}\tw\tw\tX\t_\t_\t{0 if i == 0 else 1}\t{'root' if i == 0 else 'dep'}\t_\t"
        f"{'Entity=' + v[i] if i in v else '_'}\n" for i in range(4)) + "\n"
    got = read_mentions(parse_conllu_string(text), "GRP-etype")
    assert sorted((m.eid, m.words) for m in got) == [("55", [0, 1, 2]), ("56", [2, 3])]


def test_write_then_read_round_trip_keeps_other_misc(doc_sentences, doc_text):
    docs = documents(doc_sentences)
    gold = read_mentions(docs[0])
    write_mentions(docs[0], gold)
    again = read_mentions(documents(doc_sentences)[0])
    assert [(m.eid, m.words, m.etype) for m in again] == [(m.eid, m.words, m.etype) for m in gold]
    out = to_conllu_string(doc_sentences)
    assert "SplitAnte" not in out and "Bridge" not in out
    assert "|XML=<w>" in out and "Foo=bar" in out and "SpaceAfter=No" in out
    def rest(line):  # every column, and the MISC items other than the coreference ones
        cols = line.split("\t")
        if len(cols) < 10:
            return line
        items = [x for x in cols[9].split("|") if x.split("=")[0] not in ("Entity", "SplitAnte", "Bridge")]
        return cols[:9] + items

    assert [rest(x) for x in doc_text.splitlines()] == [rest(x) for x in out.splitlines()]


def test_write_declares_a_layout_when_the_document_has_none():
    text = "# newdoc id = d\n1\tMary\tMary\tPROPN\t_\t_\t0\troot\t_\tSpaceAfter=No\n\n"
    sents = parse_conllu_string(text)
    write_mentions(sents, [Mention("1", [0], "person")], "eid-etype-head-other")
    out = to_conllu_string(sents)
    assert "# global.Entity = eid-etype-head-other" in out
    assert "Entity=(1-person-1)|SpaceAfter=No" in out


def test_entities_view(doc_sentences):
    from g2gt.ud.coref.io import entities

    es = entities(doc_sentences)
    assert [e["id"] for e in es] == ["1", "2", "3"]
    mary = es[0]
    assert mary["type"] == "person"
    assert [(m["sentence"], m["start"], m["end"], m["text"]) for m in mary["mentions"]] == [
        (0, 1, 1, "Mary"), (1, 1, 1, "She"), (1, 4, 4, "her")]
    assert es[2]["mentions"][0]["text"] == "her old book" and es[2]["mentions"][0]["end_sentence"] == 1
