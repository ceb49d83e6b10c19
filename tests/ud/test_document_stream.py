"""``g2gt parse --format json`` streams its JSON (g2gt.ud.document_stream): the same bytes as
``Document.to_json()`` for raw text, pre-tokenized sentences (spacing in MISC, multiword tokens, empty nodes) and
coreference across documents, with the sentences read once, one at a time."""

from __future__ import annotations

import io
import json
import random

import pytest

from fixture_paths import FIXTURES
from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV
from g2gt.ud.document import Document
from g2gt.ud.document_stream import write_document_json
from g2gt.ud.io.conllu import parse_conllu_string, read_conllu


def _streamed(sentences, text=None, model="m"):
    out = io.StringIO()
    consumed = []

    def once():
        for s in sentences:
            consumed.append(s)
            yield s

    n = write_document_json(once(), out, text, model)
    assert n == len(consumed) == len(sentences)
    return out.getvalue()


@pytest.mark.parametrize("name", ["coref_tiny.conllu", "mwt_empty.conllu"])
def test_the_same_bytes_as_to_json_for_conllu_files(name):
    sents = read_conllu(FIXTURES / name)
    assert _streamed(sents) == Document(sents, None, "m").to_json()


def test_the_same_bytes_with_entities_over_several_documents():
    sents = read_conllu(FIXTURES / "coref_tiny.conllu")
    text = "".join(s.serialize() for s in sents)
    doc2 = text.replace("# newdoc id = ", "# newdoc id = second-", 1) if "# newdoc" in text else "# newdoc\n" + text
    many = parse_conllu_string("# newdoc\n# sent_id = x\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_\n\n" + text
                               + doc2)
    expected = Document(many, None, None).to_json()
    assert '"entities"' in expected
    assert _streamed(many, model=None) == expected


@pytest.mark.parametrize("seed", range(6))
def test_fuzz_spacing_and_raw_text(seed):
    """Attack: random SpaceAfter=No / SpacesAfter / SpacesBefore, quotes, backslashes, control-free unicode."""
    rng = random.Random(seed)
    sents = read_conllu(EWT_SAMPLE_DEV)[:20]
    for s in sents:
        for w in s.word_rows:
            r = rng.random()
            misc = dict(w["misc"]) if isinstance(w["misc"], dict) else {}
            if r < 0.2:
                misc["SpaceAfter"] = "No"
            elif r < 0.3:
                misc["SpacesAfter"] = rng.choice([r"\s\s", r"\n", r"\t", r"\s\n\s"])
            elif r < 0.35:
                misc["SpacesBefore"] = r"\s"
            if rng.random() < 0.1:
                w["form"] = rng.choice(['"q"', "a\\b", "é€😀", "</x>"])
            w["misc"] = misc or None
    sents = parse_conllu_string("".join(s.serialize() for s in sents))
    assert _streamed(sents) == Document(sents, None, "m").to_json()
    raw = Document(sents, None, "m").text  # the same sentences over a raw text
    assert _streamed(sents, raw) == Document(sents, raw, "m").to_json()
    json.loads(_streamed(sents))


def test_the_command_writes_what_to_json_gives(tmp_path):
    text = "He sat. Then he left!\n\nA new paragraph, with \"quotes\" and é."
    out = tmp_path / "doc.json"
    assert main(["parse", "--text", text, "--format", "json", "-o", str(out), "--threads", "1"]) == 0
    import g2gt

    expected = g2gt.load("en_combined", device="cpu")(text).to_json() + "\n"
    assert out.read_text(encoding="utf-8") == expected
    src = tmp_path / "in.conllu"
    src.write_text(EWT_SAMPLE_DEV.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["parse", str(src), "--format", "json", "-o", str(out), "--threads", "1", "--no-progress"]) == 0
    got = json.loads(out.read_text(encoding="utf-8"))
    conllu = tmp_path / "out.conllu"
    assert main(["parse", str(src), "-o", str(conllu), "--threads", "1", "--no-progress"]) == 0
    assert out.read_text(encoding="utf-8") == Document(read_conllu(conllu), None, got["model"]).to_json() + "\n"
