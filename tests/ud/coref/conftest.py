"""A tiny CorefUD document (two sentences) shared by the coreference tests."""

import pytest

DOC = """# newdoc id = doc1
# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity
# sent_id = doc1-1
# text = Mary met John .
1	Mary	Mary	PROPN	NNP	Number=Sing	2	nsubj	_	Entity=(1-person-new-sssss-cf1-1-coref)|XML=<w>
2	met	meet	VERB	VBD	Tense=Past	0	root	_	_
3	John	John	PROPN	NNP	Number=Sing	2	obj	_	Entity=(2-person-new-sssss-cf2-1-coref)|SpaceAfter=No
4	.	.	PUNCT	.	_	2	punct	_	_

# sent_id = doc1-2
# text = She gave him her old book .
1	She	she	PRON	PRP	Gender=Fem|Number=Sing|Person=3|PronType=Prs	2	nsubj	_	Entity=(1-person-giv:act-sssss-cf1-1-coref)
2	gave	give	VERB	VBD	Tense=Past	0	root	_	_
3	him	he	PRON	PRP	Gender=Masc|Number=Sing|Person=3|PronType=Prs	2	iobj	_	Bridge=1<3|Entity=(2-person-giv:act-sssss-cf2-1-coref)
4	her	her	PRON	PRP$	Gender=Fem|Number=Sing|Person=3|Poss=Yes|PronType=Prs	6	nmod:poss	_	Entity=(3-object-new-nnnnn-cf3-3-sgl(1-person-giv:act-sssss-cf1-1-coref)
5	old	old	ADJ	JJ	Degree=Pos	6	amod	_	Foo=bar
6	book	book	NOUN	NN	Number=Sing	2	obj	_	Entity=3)|SpaceAfter=No|SplitAnte=1<4
7	.	.	PUNCT	.	_	2	punct	_	_

"""


@pytest.fixture
def doc_text() -> str:
    return DOC


@pytest.fixture
def doc_sentences():
    from g2gt.ud.io.conllu import parse_conllu_string

    return parse_conllu_string(DOC)
