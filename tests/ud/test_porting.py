"""Porting from spaCy and Stanza: a ten-line script for each, turned into a g2gt script by renaming calls only
(the renames are the table each test applies), run on the shipped model."""

from __future__ import annotations

import contextlib
import io

import pytest

from g2gt.core.registry import DEFAULT_MODEL, available_models

pytestmark = pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="the shipped model is not here")

TEXT = "Mary met John in Paris. She gave him her book, but he didn't read it."

SPACY_SCRIPT = '''
nlp = spacy.load("en_core_web_sm")
doc = nlp(text)
for sent in doc.sents:
    print("sentence:", sent.text)
    for token in sent:
        head = token.head.text if token.dep_ != "ROOT" else "-"
        print(token.text, token.lemma_, token.pos_, token.tag_, token.dep_, head, token.idx)
for ent in doc.ents:
    print("entity:", ent.text, ent.label_)
'''

# spaCy -> g2gt: the renames a user makes (a spaCy token is a g2gt word; the root relation is UD's "root")
FROM_SPACY = [
    ('spacy.load("en_core_web_sm")', "g2gt.load(device='cpu', threads=1)"),
    ("nlp(text)", "nlp(text, coref=True)"),
    ("doc.sents", "doc.sentences"),
    ("for token in sent:", "for token in sent.words:"),
    ("token.head.text", "token.head_word.text"),
    ('token.dep_ != "ROOT"', 'token.deprel != "root"'),
    ("token.lemma_", "token.lemma"), ("token.pos_", "token.upos"), ("token.tag_", "token.xpos"),
    ("token.dep_", "token.deprel"), ("token.idx", "token.start_char"),
    ("doc.ents", "doc.entities"), ("ent.label_", "ent.type"),
]

STANZA_SCRIPT = '''
nlp = stanza.Pipeline("en", processors="tokenize,mwt,pos,lemma,depparse,ner")
doc = nlp(text)
for sent in doc.sentences:
    for token in sent.tokens:
        print("token:", token.text, token.start_char, token.end_char, [w.text for w in token.words])
    for word in sent.words:
        head = sent.words[word.head - 1].text if word.head > 0 else "root"
        print(word.id, word.text, word.lemma, word.upos, word.xpos, word.feats, head, word.deprel)
for ent in doc.entities:
    print("entity:", ent.text, ent.type)
'''

FROM_STANZA = [
    ('stanza.Pipeline("en", processors="tokenize,mwt,pos,lemma,depparse,ner")',
     "g2gt.load(device='cpu', threads=1)"),
    ("nlp(text)", "nlp(text, coref=True)"),
]


def _port(script: str, renames: list[tuple[str, str]]) -> str:
    for old, new in renames:
        assert old in script, old
        script = script.replace(old, new)
    return script


def _run(script: str, **names) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(script, {"text": TEXT, **names})
    return out.getvalue().splitlines()


@pytest.fixture(scope="module")
def g2gt_module():
    import g2gt

    return g2gt


def test_a_spacy_script_ported_by_renaming(g2gt_module):
    lines = _run(_port(SPACY_SCRIPT, FROM_SPACY), g2gt=g2gt_module)
    sentences = [x for x in lines if x.startswith("sentence:")]
    assert sentences == ["sentence: Mary met John in Paris.", "sentence: She gave him her book, but he didn't read it."]
    words = [x.split() for x in lines if not x.startswith(("sentence:", "entity:"))]
    assert [w[0] for w in words][:5] == ["Mary", "met", "John", "in", "Paris"]
    met = words[1]
    assert met[1:6] == ["meet", "VERB", "VBD", "root", "-"] and int(met[6]) == TEXT.index("met")
    assert all(TEXT[int(w[-1]):].startswith(w[0]) or w[0] == "n't" for w in words)  # offsets into the text
    assert any(x.startswith("entity: Mary") for x in lines)  # coreference entities, named by a mention


def test_the_spacy_script_runs_unchanged_inside_spacy():
    pytest.importorskip("spacy")
    import g2gt.spacy

    lines = _run(_port(SPACY_SCRIPT, [('spacy.load("en_core_web_sm")', "g2gt.spacy.load_pipeline("
                                                                        "'en_combined', device='cpu', threads=1)")]),
                 g2gt=g2gt)
    native = _run(_port(SPACY_SCRIPT, FROM_SPACY), g2gt=g2gt)
    words = [x.replace("ROOT", "root") for x in lines if not x.startswith(("sentence:", "entity:"))]
    native = [x for x in native if not x.startswith(("sentence:", "entity:"))]
    assert [x.rsplit(" ", 1)[0] for x in words] == [x.rsplit(" ", 1)[0] for x in native]
    # offsets: the same but inside a multiword token (a spaCy token has its own; a g2gt word its token's span)
    assert [x for x in words if not x.startswith(("did ", "n't "))] == \
        [x for x in native if not x.startswith(("did ", "n't "))]


def test_a_stanza_script_ported_by_renaming(g2gt_module):
    lines = _run(_port(STANZA_SCRIPT, FROM_STANZA), g2gt=g2gt_module)
    tokens = [x for x in lines if x.startswith("token:")]
    assert "token: didn't 54 60 ['did', \"n't\"]" in tokens
    assert all(TEXT[int(x.split()[2]):int(x.split()[3])] == x.split()[1] for x in tokens)
    words = [x for x in lines if not x.startswith(("token:", "entity:"))]
    assert words[1].startswith("2 met meet VERB VBD {'Mood': 'Ind'") and words[1].endswith(" root root")
    assert words[0].startswith("1 Mary Mary PROPN NNP") and words[0].endswith(" met nsubj")
    assert any(x.startswith("entity: Mary") for x in lines)
