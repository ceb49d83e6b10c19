"""Tests for g2gt.ud.evaluate (official CoNLL 2018 scorer wrapper + extras) and `g2gt evaluate`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from g2gt.cli.main import main
from g2gt.data import EWT_SAMPLE_DEV as SAMPLE
from g2gt.ud.evaluate import EvaluationError, evaluate, validate_file
from g2gt.ud.io import CoNLLUError, read_conllu
from fixture_paths import FIXTURES

FIX = FIXTURES
GOLD, PRED = FIX / "eval_gold.conllu", FIX / "eval_pred.conllu"
# e2 tokenised differently: "loudly!" is one token (same characters as the gold file)
OTHER_TOKENS = (PRED.read_text(encoding="utf-8").split("\n\n")[0] + "\n\n"
                "# sent_id = e2\n# text = Dogs bark loudly!\n"
                "1\tDogs\tdogs\tNOUN\t_\t_\t2\tnsubj\t_\t_\n"
                "2\tbark\tbark\tVERB\t_\t_\t0\troot\t_\t_\n"
                "3\tloudly!\tloudly!\tADV\t_\t_\t2\tadvmod\t_\t_\n\n")


def _hand_counts() -> dict[str, tuple[int, int]]:
    """Recount UAS/LAS errors straight from the two fixture files (1:1 words)."""
    g, p = read_conllu(GOLD), read_conllu(PRED)
    uas = las = uas_np = las_np = n = n_np = 0
    for gs, ps in zip(g, p):
        for gh, gr, gu, ph, pr in zip(gs.heads, gs.deprels, gs.upos, ps.heads, ps.deprels):
            ok_h = gh == ph
            ok_l = ok_h and gr.split(":")[0] == pr.split(":")[0]
            n += 1
            uas += ok_h
            las += ok_l
            if gu != "PUNCT":
                n_np += 1
                uas_np += ok_h
                las_np += ok_l
    return {"UAS": (uas, n), "LAS": (las, n), "UAS_np": (uas_np, n_np), "LAS_np": (las_np, n_np)}


def test_hand_computed_scores() -> None:
    res = evaluate(GOLD, PRED)
    # known by construction of the fixture: 10 words, 3 wrong heads, 2 more wrong labels
    # (advmod:emph vs advmod is right: subtypes are ignored); 2 of the words are PUNCT
    assert res.uas == pytest.approx(70.0) and res.las == pytest.approx(50.0)
    assert res.upos == pytest.approx(90.0)
    assert res.no_punct["UAS"].f1 == pytest.approx(6 / 8)
    assert res.no_punct["LAS"].f1 == pytest.approx(5 / 8)
    counts = _hand_counts()
    assert res.scores["UAS"].correct == counts["UAS"][0] and res.scores["UAS"].gold_total == counts["UAS"][1]
    assert res.scores["LAS"].correct == counts["LAS"][0]
    assert res.no_punct["UAS"].correct == counts["UAS_np"][0] and res.no_punct["UAS"].gold_total == counts["UAS_np"][1]
    assert res.no_punct["LAS"].correct == counts["LAS_np"][0]
    for k in ("MLAS", "BLEX", "CLAS", "Tokens", "Words"):
        assert k in res.scores


def test_per_relation_table() -> None:
    res = evaluate(GOLD, PRED)
    rel = {r.relation: r for r in res.per_relation}
    assert (rel["nsubj"].gold, rel["nsubj"].predicted, rel["nsubj"].correct) == (2, 3, 1)
    assert rel["nsubj"].precision == pytest.approx(1 / 3) and rel["nsubj"].recall == pytest.approx(0.5)
    assert rel["det"].predicted == 0 and rel["det"].f1 == 0.0
    assert rel["dep"].gold == 0 and rel["dep"].predicted == 1
    # totals over relations agree with the scorer's LAS counts
    assert sum(r.correct for r in res.per_relation) == res.scores["LAS"].correct
    assert sum(r.gold for r in res.per_relation) == res.scores["LAS"].gold_total


def test_identical_files_score_100_and_sentence_lists() -> None:
    sents = read_conllu(SAMPLE)[:40]
    res = evaluate(sents, sents, gold_name="a", pred_name="b")
    assert res.uas == 100.0 and res.las == 100.0 and res.no_punct["LAS"].f1 == 1.0
    # corrupt every head to the previous word: UAS drops, still valid trees
    bad = [s.with_parse([0] + list(range(1, len(s))), ["dep"] * len(s)) for s in sents]
    res2 = evaluate(sents, bad)
    assert 0 < res2.uas < 100 and res2.las < res2.uas


def test_mismatched_words_clear_error(tmp_path: Path) -> None:
    text = PRED.read_text(encoding="utf-8").replace("\tbark\tbark\t", "\tbarks\tbark\t")
    bad = tmp_path / "mismatch.conllu"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(EvaluationError) as info:
        evaluate(GOLD, bad)
    msg = str(info.value)
    assert str(GOLD) in msg and str(bad) in msg
    assert "(e2)" in msg  # the first differing sentence
    assert f"{bad}:13:" in msg  # the line of 'barks'


def test_malformed_pred_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conllu"
    bad.write_text(PRED.read_text(encoding="utf-8").replace("\t5\tcase\t", "\tfive\tcase\t"), encoding="utf-8")
    with pytest.raises(CoNLLUError, match=rf"{bad}:6: HEAD 'five'"):
        evaluate(GOLD, bad)
    cyc = tmp_path / "cycle.conllu"
    cyc.write_text(PRED.read_text(encoding="utf-8").replace("1\tDogs\tdogs\tNOUN\t_\t_\t3", "1\tDogs\tdogs\tNOUN\t_\t_\t3")
                   .replace("3\tloudly\tloudly\tADJ\t_\t_\t2", "3\tloudly\tloudly\tADJ\t_\t_\t1"), encoding="utf-8")
    with pytest.raises(EvaluationError, match=rf"{cyc}:\d+: .*cycle"):
        evaluate(GOLD, cyc)


def test_validate_file(tmp_path: Path) -> None:
    assert validate_file(GOLD) == []
    errs = validate_file(FIX / "cycle.conllu")
    assert errs and all(e.startswith(str(FIX / "cycle.conllu") + ":") for e in errs)
    assert any("tree" in e.lower() or "root" in e.lower() for e in errs)


def test_cli_evaluate(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["evaluate", str(GOLD), str(PRED), "--no-punct", "--per-relation"]) == 0
    out = capsys.readouterr().out
    assert "LAS" in out and "50.00" in out and "Without punctuation" in out and "nsubj" in out
    assert main(["evaluate", str(GOLD), str(PRED), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["metrics"]["UAS"]["f1"] == pytest.approx(0.7) and d["no_punct"]["LAS"]["correct"] == 5
    bad = tmp_path / "x.conllu"
    bad.write_text(PRED.read_text(encoding="utf-8").replace("Dogs", "Cats"), encoding="utf-8")
    assert main(["evaluate", str(GOLD), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "do not line up" in err and err.startswith("g2gt evaluate: error: ") and err.count("\n") == 1


def test_official_scores_include_enhanced_metrics() -> None:
    res = evaluate(SAMPLE, SAMPLE)
    assert res.scores["ELAS"].f1 == 1.0 and res.scores["EULAS"].f1 == 1.0  # the EWT sample has DEPS
    assert "ELAS" in res.table()


def test_other_tokenisation_gives_official_scores_only(tmp_path: Path) -> None:
    pred = tmp_path / "tokens.conllu"
    pred.write_text(OTHER_TOKENS, encoding="utf-8")
    res = evaluate(GOLD, pred)
    assert not res.same_words
    assert res.scores["Words"].f1 < 1.0 and res.scores["Tokens"].f1 < 1.0
    assert res.scores["UAS"].correct > 0  # the scorer aligned the words it could
    assert res.no_punct == {} and res.per_relation == []
    assert evaluate(GOLD, PRED).same_words


def test_cli_extras_need_identical_tokenisation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pred = tmp_path / "tokens.conllu"
    pred.write_text(OTHER_TOKENS, encoding="utf-8")
    for flag in ("--no-punct", "--per-relation"):
        assert main(["evaluate", str(GOLD), str(pred), flag]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "gold tokenisation" in err
    assert main(["evaluate", str(GOLD), str(pred)]) == 0
    assert "LAS" in capsys.readouterr().out


def test_evaluation_leaves_the_profiler_alone() -> None:
    seen = []

    def profiler(frame, event, arg):  # a user's profiler must stay installed and see the scorer's calls
        seen.append(frame.f_code.co_name)

    sys.setprofile(profiler)
    try:
        evaluate(GOLD, PRED)
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
    assert "align_words" in seen


def test_files_without_enhanced_graphs_leave_elas_out(tmp_path):
    from g2gt.data import EWT_SAMPLE_DEV

    lines = []
    for line in EWT_SAMPLE_DEV.read_text(encoding="utf-8").split("\n"):
        cols = line.split("\t")
        if len(cols) == 10:
            cols[8] = "_"
        lines.append("\t".join(cols))
    plain = tmp_path / "plain.conllu"
    plain.write_text("\n".join(lines), encoding="utf-8")
    with_deps = evaluate(EWT_SAMPLE_DEV, EWT_SAMPLE_DEV)
    assert with_deps.enhanced and with_deps.scores["ELAS"].f1 > 0.99
    r = evaluate(EWT_SAMPLE_DEV, plain)
    assert not r.enhanced and "ELAS" not in r.scores and "EULAS" not in r.scores
    assert "no enhanced graphs" in r.table() and r.scores["LAS"].f1 > 0.99
