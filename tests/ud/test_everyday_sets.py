"""The hand-written everyday test sets (``g2gt/data/everyday/LANG_everyday.conllu`` + ``.txt``).

Each set is gold data the benchmark ``benchmarks/everyday.py`` scores models against, so every file is
checked for what the scorer and the README promise: one well-formed tree per sentence, ``# text`` equal to the
token forms joined by their ``SpaceAfter``, one ``# newdoc`` per line of the text file with the same text,
universal UPOS only, XPOS and FEATS left ``_``, and the official UD validator's verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import g2gt.data

EVERYDAY = Path(g2gt.data.__file__).resolve().parent / "everyday"
#: the languages with a set: one per shipped language package
LANGUAGES = ("en", "fr", "el", "tr", "vi", "ug")
UPOS = frozenset("ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split())


def _docs(lang: str) -> list[list[dict]]:
    """The gold file as documents -> sentences ``{"comments": {...}, "tokens": [...], "words": [...]}``.

    ``tokens`` are ``(form, space_after)`` surface tokens (a multiword token once, not its words);
    ``words`` are the 10-column rows of syntactic words."""
    docs: list[list[dict]] = []
    for block in (EVERYDAY / f"{lang}_everyday.conllu").read_text(encoding="utf-8").split("\n\n"):
        if not block.strip():
            continue
        sent = {"comments": {}, "tokens": [], "words": []}
        covered = 0
        for line in block.splitlines():
            if line.startswith("#"):
                key, _, value = line[2:].partition(" = ")
                sent["comments"][key] = value
                continue
            cols = line.split("\t")
            assert len(cols) == 10, f"{lang}: not 10 columns: {line!r}"
            space_after = "SpaceAfter=No" not in cols[9]
            if "-" in cols[0]:
                first, last = map(int, cols[0].split("-"))
                sent["tokens"].append((cols[1], space_after))
                covered = last
            else:
                sent["words"].append(cols)
                if int(cols[0]) > covered:
                    sent["tokens"].append((cols[1], space_after))
        if "newdoc id" in sent["comments"]:
            docs.append([])
        assert docs, f"{lang}: the file must start with '# newdoc id = ...'"
        docs[-1].append(sent)
    return docs


def _texts(lang: str) -> list[str]:
    return [line for line in (EVERYDAY / f"{lang}_everyday.txt").read_text(encoding="utf-8").splitlines()
            if line.strip()]


def test_every_listed_language_has_both_files_and_the_benchmark_finds_them() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "everyday_bench", Path(__file__).resolve().parents[2] / "benchmarks" / "everyday.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    for lang in LANGUAGES:
        assert bench.everyday_set(lang) == (EVERYDAY / f"{lang}_everyday.conllu", EVERYDAY / f"{lang}_everyday.txt")
    found = sorted(p.name.split("_")[0] for p in EVERYDAY.glob("*_everyday.conllu"))
    assert found == sorted(LANGUAGES)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_sentence_is_one_tree(lang: str) -> None:
    for doc in _docs(lang):
        for sent in doc:
            sid = sent["comments"].get("sent_id")
            heads = [int(w[6]) for w in sent["words"]]
            ids = [int(w[0]) for w in sent["words"]]
            assert ids == list(range(1, len(ids) + 1)), f"{sid}: word ids must run 1..n"
            assert heads.count(0) == 1, f"{sid}: {heads.count(0)} roots"
            assert [w[7] for w in sent["words"] if w[6] == "0"] == ["root"], f"{sid}: the root's relation"
            assert all(w[7] != "root" for w in sent["words"] if w[6] != "0"), f"{sid}: 'root' below the root"
            for i in ids:  # every word reaches the root without a cycle
                seen, h = set(), i
                while h:
                    assert h not in seen and 1 <= h <= len(ids), f"{sid}: word {i} has no path to the root"
                    seen.add(h)
                    h = heads[h - 1]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_text_comment_is_the_tokens_with_their_spaces(lang: str) -> None:
    for doc in _docs(lang):
        for sent in doc:
            rebuilt = "".join(form + (" " if space else "") for form, space in sent["tokens"]).rstrip(" ")
            assert sent["comments"]["text"] == rebuilt, sent["comments"].get("sent_id")
            assert doc[-1] is sent or sent["tokens"][-1][1], (
                f"{sent['comments'].get('sent_id')}: a sentence inside a text must end with a space after it")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_text_file_has_one_line_per_document_with_its_text(lang: str) -> None:
    docs, texts = _docs(lang), _texts(lang)
    assert len(docs) == len(texts)
    for doc, text in zip(docs, texts):
        assert " ".join(s["comments"]["text"] for s in doc) == text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_ids_and_columns_follow_the_readme(lang: str) -> None:
    sent_ids = [s["comments"]["sent_id"] for doc in _docs(lang) for s in doc]
    doc_ids = [doc[0]["comments"]["newdoc id"] for doc in _docs(lang)]
    assert len(set(sent_ids)) == len(sent_ids) and len(set(doc_ids)) == len(doc_ids)
    for doc in _docs(lang):
        for sent in doc:
            for w in sent["words"]:
                assert w[3] in UPOS, f"{sent['comments']['sent_id']}: UPOS {w[3]!r}"
                assert (w[4], w[5], w[8]) == ("_", "_", "_"), f"{sent['comments']['sent_id']}: XPOS/FEATS/DEPS"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_official_validator_passes(lang: str) -> None:
    pytest.importorskip("udtools")
    from g2gt.ud.evaluate import validate_file

    assert validate_file(EVERYDAY / f"{lang}_everyday.conllu", lang=lang, level=5) == []
