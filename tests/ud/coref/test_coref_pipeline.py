"""The coref stage in the Pipeline: a model folder with coref.pt, nlp(text, coref=True)."""

import shutil
from pathlib import Path

import pytest

import g2gt
from g2gt.cli.main import main
from g2gt.ud.coref.io import documents, read_mentions
from g2gt.ud.coref.stage import add_to_model_folder
from g2gt.core.registry import model_card

TINY = ["--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim", "32", "--span-dim", "16",
        "--antecedent-dim", "16", "--char-filters", "16", "--threads", "1", "--no-progress"]

SHIPPED = Path(g2gt.__file__).parent / "models" / "en_combined"


@pytest.fixture
def folder_with_coref(tmp_path, doc_text):
    data = tmp_path / "doc.conllu"
    data.write_text(doc_text)
    run = tmp_path / "run"
    assert main(["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(run), "--max-steps", "2",
                 "--eval-every", "2"] + TINY) == 0
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("parser.pt", "segmenter.pt", "model.json"):
        shutil.copy(SHIPPED / name, folder / name)
    add_to_model_folder(run, folder, card={"coref_note": "test"})
    return folder


def test_coref_stage_runs_on_request(folder_with_coref):
    nlp = g2gt.load(folder_with_coref, device="cpu", threads=1)
    assert "coref" in nlp.stages
    card = model_card(folder_with_coref)
    assert card["parts"]["coref"]["file"] == "coref.pt" and card["coref_note"] == "test"
    text = "Mary met John. She gave him her book."
    plain = nlp(text)
    assert not any("Entity" in (t["misc"] or {}) for s in plain for t in s.words)
    doc = nlp(text, coref=True)
    assert [s.forms for s in doc] == [s.forms for s in plain]
    assert documents(list(doc))[0][0].metadata.get("global.Entity")
    read_mentions(list(doc))  # well-formed brackets (a tiny model may find few mentions)
    for e in doc.entities:  # the Document's view of them: mentions as spans of the text
        assert e.mentions and all(m.words and doc.text[m.start_char:m.end_char] == m.text for m in e.mentions)
    for e in doc.to_dict().get("entities", []):
        assert e["mentions"] and all(1 <= m["start"] <= m["end"] for m in e["mentions"])


def test_coref_needs_the_stage():
    nlp = g2gt.load(SHIPPED, device="cpu", threads=1, exclude=("enhance", "coref"))
    with pytest.raises(ValueError, match="coreference stage"):
        nlp("Hi.", coref=True)
