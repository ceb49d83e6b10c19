"""A tiny CorefUD document (two sentences, ``tests/fixtures/coref_tiny.conllu``) shared by the coreference tests."""

import pytest

from fixture_paths import FIXTURES

DOC = (FIXTURES / "coref_tiny.conllu").read_text(encoding="utf-8")


@pytest.fixture
def doc_text() -> str:
    return DOC


@pytest.fixture
def doc_sentences():
    from g2gt.ud.io.conllu import parse_conllu_string

    return parse_conllu_string(DOC)
