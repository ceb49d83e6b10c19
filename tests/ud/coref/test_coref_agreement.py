"""Decoding with pronoun gender agreement: personal pronouns of two genders never end in one entity."""

from __future__ import annotations

import torch

from g2gt.ud.coref.decode import decode_window

NEG = float("-inf")


def _pred(n: int, links: dict[tuple[int, int], float]) -> dict[str, torch.Tensor]:
    """Every word heads a one-word mention of type 1; ``links[(k, j)]`` = antecedent score of j for k."""
    ant = torch.full((1, n, n), NEG)
    for k in range(n):
        ant[0, k, :k] = -5.0
    for (k, j), v in links.items():
        ant[0, k, j] = v
    return {"tag": torch.ones(1, n, dtype=torch.long), "start": torch.arange(n)[None], "end": torch.arange(n)[None],
            "antecedent": ant, "tag_probs": torch.tensor([[[0.0, 1.0]] * n])}


def _entities(mentions) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for m in mentions:
        groups.setdefault(m.eid, []).append(m.head)
    return sorted(sorted(g) for g in groups.values())


# "Mary(0) met John(1). She(2) gave him(3) her(4) book": him's best antecedent is She, then John
SCORES = {(2, 0): 4.0, (3, 2): 3.0, (3, 1): 2.0, (4, 2): 3.5}
GENDERS = [None, None, "Fem", "Masc", "Fem"]


def test_without_genders_the_best_antecedent_wins():
    got = _entities(decode_window(_pred(5, SCORES), 0, 5, 0, ["_", "person"]))
    assert got == [[0, 2, 3, 4], [1]]


def test_a_pronoun_of_another_gender_takes_the_next_best_antecedent():
    got = _entities(decode_window(_pred(5, SCORES), 0, 5, 0, ["_", "person"], genders=GENDERS))
    assert got == [[0, 2, 4], [1, 3]]


def test_the_constraint_is_on_the_entity_not_only_the_pair():
    # him(3) -> Mary(0) directly (a name: no gender), but Mary's entity already holds She(2)
    scores = {(2, 0): 4.0, (3, 0): 3.0, (3, 1): 2.0}
    got = _entities(decode_window(_pred(5, scores), 0, 5, 0, ["_", "person"], genders=GENDERS))
    assert [0, 2] in got and [1, 3] in got


def test_no_compatible_antecedent_above_the_threshold_starts_an_entity():
    scores = {(2, 0): 4.0, (3, 2): 3.0}  # John's score for him stays -5, below the threshold 0
    got = _entities(decode_window(_pred(5, scores), 0, 5, 0, ["_", "person"], genders=GENDERS))
    assert [3] in got


def test_mention_head_is_the_word_whose_head_lies_outside_without_a_head_field():
    from g2gt.ud.coref.io import entities
    from g2gt.ud.io import parse_conllu_string

    text = ("# newdoc id = d\n# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity\n"
            "# text = My sister sleeps.\n"
            "1\tMy\tmy\tPRON\t_\t_\t2\tnmod:poss\t_\tEntity=(1-person-new-sal-_-1-_-_(2-person-new-sal-_-1-_-_)\n"
            "2\tsister\tsister\tNOUN\t_\t_\t3\tnsubj\t_\tEntity=1)\n"
            "3\tsleeps\tsleep\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n"
            "4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_\n\n")
    ents = {e["id"]: e for e in entities(parse_conllu_string(text, name="t"))}
    assert [(m["text"], m["head"]) for m in ents["1"]["mentions"]] == [("My sister", 2)]
    assert [(m["text"], m["head"]) for m in ents["2"]["mentions"]] == [("My", 1)]


def test_coref_command_uses_the_default_model_and_takes_its_name(tmp_path):
    import g2gt
    from g2gt.cli.main import main

    doc = g2gt.load()("Mary met John. She gave him her book.")
    src = tmp_path / "in.conllu"
    src.write_text(doc.conllu(), encoding="utf-8")
    for extra in ([], ["--model", "en_combined"]):
        out = tmp_path / f"out{len(extra)}.conllu"
        assert main(["coref", str(src), "-o", str(out), *extra]) == 0
        assert "Entity=" in out.read_text(encoding="utf-8")
