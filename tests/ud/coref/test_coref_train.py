"""g2gt train coref, resume, the Coreferencer stage and g2gt coref, end to end on a tiny document."""

import json

from g2gt.cli.main import main
from g2gt.ud.coref.io import documents, read_mentions
from g2gt.ud.coref.resolver import Coreferencer
from g2gt.ud.io.conllu import read_conllu

TINY = ["--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim", "32", "--span-dim", "16",
        "--antecedent-dim", "16", "--char-filters", "16", "--threads", "1", "--no-progress"]


def test_train_resume_resolve_and_cli(tmp_path, doc_text, capsys):
    data = tmp_path / "doc.conllu"
    data.write_text(doc_text)
    out = tmp_path / "run"
    args = ["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(out), "--eval-every", "2"] + TINY
    assert main(args + ["--max-steps", "2"]) == 0
    assert main(args + ["--max-steps", "4", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "CoNLL F1" in err
    log = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    evals = [x for x in log if x["kind"] == "eval"]
    assert [x["step"] for x in evals] == [2, 4] and all("conll" in x and "type_acc" in x for x in evals)

    resolver = Coreferencer.load(out)
    sents = read_conllu(str(data))
    res = resolver(sents)
    assert [s.forms for s in res] == [s.forms for s in sents]
    assert read_mentions(documents(sents)[0])[0].etype == "person"  # the input is not changed
    for a, b in zip(sents, res):
        for ta, tb in zip(a.words, b.words):
            keep = {k: v for k, v in (ta["misc"] or {}).items() if k not in ("Entity", "SplitAnte", "Bridge")}
            assert {k: v for k, v in (tb["misc"] or {}).items() if k != "Entity"} == keep

    saved = resolver.save(tmp_path / "coref.pt")
    again = Coreferencer.load(saved)
    assert again.layout == resolver.layout

    pred = tmp_path / "pred.conllu"
    assert main(["coref", "--model", str(out), str(data), "-o", str(pred), "--threads", "1"]) == 0
    assert "global.Entity" in pred.read_text()
    read_mentions(documents(read_conllu(str(pred)))[0])  # readable


def test_training_data_without_entities_is_refused(tmp_path, capsys):
    data = tmp_path / "plain.conllu"
    data.write_text("# newdoc id = d\n1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n\n")
    rc = main(["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(tmp_path / "r"), "--max-steps",
               "1"] + TINY)
    assert rc == 2
    assert "no Entity= annotations" in capsys.readouterr().err


def test_threshold_tuning_is_saved(tmp_path, doc_text):
    data = tmp_path / "doc.conllu"
    data.write_text(doc_text)
    out = tmp_path / "run"
    assert main(["train", "coref", "--train", str(data), "--dev", str(data), "--out", str(out), "--max-steps", "2",
                 "--eval-every", "2"] + TINY) == 0
    r = Coreferencer.load(out)
    scores = r.tune_threshold(read_conllu(str(data)), grid=(0.0, -1.0, -50.0))
    assert set(scores) == {0.0, -1.0, -50.0} and r.threshold in scores
    r.threshold = -1.25
    assert Coreferencer.load(r.save(tmp_path / "coref.pt")).threshold == -1.25
