"""Training text from CoNLL-U documents, character features, MWT splits, span metrics, window plans."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import parse_conllu_string, read_conllu
from g2gt.ud.tokenize.chars import CLASSES, GAPS, CharVocab, gap_types
from g2gt.ud.tokenize.config import SegmentDataConfig
from g2gt.ud.tokenize.data import STYLES, documents_from_sentences, render_document, render_stream, surface_tokens
from g2gt.ud.tokenize.infer import window_plan
from g2gt.ud.tokenize.metrics import SpanScorer, f1_percent
from g2gt.ud.tokenize.mwt import MWTLexicon, split_clitics

TWO_DOCS = """# newdoc id = d1
# newpar id = p1
# text = I don't know.
1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
1\tdo\t_\t_\t_\t_\t_\t_\t_\t_
2\tn't\t_\t_\t_\t_\t_\t_\t_\t_
3\tknow\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
4\t.\t_\t_\t_\t_\t_\t_\t_\t_

# text = Its jacks.
1-2\tIts\t_\t_\t_\t_\t_\t_\t_\t_
1\tIt\t_\t_\t_\t_\t_\t_\t_\t_
2\ts\t_\t_\t_\t_\t_\t_\t_\t_
3-4\tjacks\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
3\tjack\t_\t_\t_\t_\t_\t_\t_\t_
4\ts\t_\t_\t_\t_\t_\t_\t_\t_
5\t.\t_\t_\t_\t_\t_\t_\t_\t_

# newpar id = p2
# text = Ok
1\tOk\t_\t_\t_\t_\t_\t_\t_\t_

# newdoc id = d2
# text = Bye.
1\tBye\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No
2\t.\t_\t_\t_\t_\t_\t_\t_\t_

"""


@pytest.fixture(scope="module")
def sample_docs():
    return documents_from_sentences(read_conllu(EWT_SAMPLE_TRAIN))


def test_documents_paragraphs_and_consecutive_mwts():
    docs = documents_from_sentences(parse_conllu_string(TWO_DOCS))
    assert [d.doc_id for d in docs] == ["d1", "d2"]
    assert [len(p) for p in docs[0].paragraphs] == [2, 1]
    toks = docs[0].paragraphs[0][1]
    assert [(t.form, t.words) for t in toks] == [("Its", ("It", "s")), ("jacks", ("jack", "s")), (".", (".",))]
    r = render_document(docs[0])
    assert r.text == "don't know. Its jacks.\nOk"
    marks = "".join(str(x) for x in r.labels)
    assert marks == "0000300001200030000032002"
    assert [r.text[s:e] for s, e, _ in r.tokens] == ["don't", "know", ".", "Its", "jacks", ".", "Ok"]
    assert [r.text[s:e] for s, e in r.sentences] == ["don't know.", "Its jacks.", "Ok"]


def test_labels_mark_token_sentence_and_mwt_ends():
    docs = documents_from_sentences(parse_conllu_string(TWO_DOCS))
    r = render_document(docs[0])
    ends = {e - 1: w for _, e, w in r.tokens}
    sent_ends = {e - 1 for _, e in r.sentences}
    for i, lab in enumerate(r.labels.tolist()):
        if i not in ends:
            assert lab == 0
            continue
        mwt, sent = len(ends[i]) > 1, i in sent_ends
        assert lab == {(False, False): 1, (False, True): 2, (True, False): 3, (True, True): 4}[(mwt, sent)]


def test_sample_sentences_render_their_text(sample_docs):
    sents = read_conllu(EWT_SAMPLE_TRAIN)
    assert sum(len(d.sentences) for d in sample_docs) == len(sents)
    ok = 0
    for s in sents:
        toks = surface_tokens(s)
        text = "".join(t.form + (" " if t.space_after else "") for t in toks).rstrip(" ")
        ok += text == s.metadata["text"]
    assert ok >= 0.99 * len(sents)


@pytest.mark.parametrize("style", STYLES)
def test_styles_keep_characters_and_labels(sample_docs, style):
    doc = sample_docs[1]
    base = render_document(doc, "para")
    r = render_document(doc, style, random.Random(3), double_space=0.5)
    strip = lambda text, lab: ("".join(c for c in text if not c.isspace()),  # noqa: E731
                               [x for c, x in zip(text, lab.tolist()) if not c.isspace()])
    assert strip(r.text, r.labels) == strip(base.text, base.labels)
    assert [r.text[s:e] for s, e, _ in r.tokens] == [base.text[s:e] for s, e, _ in base.tokens]
    if style == "flat":
        assert "\n" not in r.text
    if style == "lines":
        assert r.text.count("\n") == len(r.sentences) - 1
    if style == "wrap":
        assert max(len(line) for line in r.text.split("\n")) <= 100 + max(len(t.form) for s in doc.sentences
                                                                           for t in s)


def test_stream_is_deterministic(sample_docs):
    cfg = SegmentDataConfig()
    a = render_stream(sample_docs[:10], random.Random(5), cfg)
    b = render_stream(sample_docs[:10], random.Random(5), cfg)
    c = render_stream(sample_docs[:10], random.Random(6), cfg)
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and a[0] != c[0]
    assert len(a[0]) == len(a[1])


def test_char_classes_and_gaps():
    v = CharVocab.build(["abc abc."], min_count=1)
    ids, cls = v.encode("Ab.\u200d中 \n")
    assert [CLASSES[k] for k in cls] == ["upper", "lower", "final_punct", "format", "other_letter", "space",
                                         "line_break"]
    assert ids[0] == v.stoi["a"] and ids[4] == 1  # unknown character
    c = v.compact("a b  c\nd\r\n\r\ne\tf")
    assert c.keep.tolist() == [0, 2, 5, 7, 12, 14]
    assert [GAPS[g] for g in c.after] == ["space", "spaces", "line_break", "blank_line", "spaces", "blank_line"]
    assert c.before.tolist()[1:] == c.after.tolist()[:-1] and GAPS[c.before[0]] == "blank_line"
    assert gap_types("", np.zeros(0, dtype=np.int64))[0].size == 0


def test_mwt_lexicon_keeps_casing_and_learns_ewt(sample_docs):
    pairs = [(t.form, t.words) for d in sample_docs for s in d.sentences for t in s if t.is_mwt]
    lex = MWTLexicon.learn(pairs)
    assert len(lex) > 20
    right = sum(lex.expand(form) == list(words) for form, words in pairs)
    assert right >= 0.97 * len(pairs)
    assert lex.expand("DON'T") == ["DO", "N'T"] and lex.expand("Don't") == ["Do", "n't"]
    assert MWTLexicon.from_dict(lex.to_dict()).table == lex.table


def test_mwt_lexicon_always_splits_only_surfaces_that_mostly_were_mwts():
    pairs = ([("im", ["i", "m"])] * 3 + [("its", ["it", "s"])] * 2 + [("its", ["its"])] * 6
             + [("lets", ["let", "s"])] * 2 + [("lets", ["lets"])] + [("dunno", ["du", "n", "no"])]
             + [("well", ["well"])] * 5)
    lex = MWTLexicon.learn(pairs)
    assert lex.always == {"im", "dunno"}  # lets: 2 of 3 < 3/4; its: mostly one word; dunno: once, split
    assert lex.words("Im", False) == ["I", "m"] and lex.words("IM", True) == ["I", "M"]
    assert lex.words("its", False) == ["its"] and lex.words("its", True) == ["it", "s"]
    assert lex.words("lets", False) == ["lets"] and lex.words("dunno", False) == ["du", "n", "no"]
    assert lex.words("havent", False) == ["have", "nt"] and lex.words("Dont", False) == ["Do", "nt"]
    assert lex.words("well", False) == ["well"] and lex.words("want", False) == ["want"]
    again = MWTLexicon.from_dict(lex.to_dict(), sorted(lex.always))
    assert again.table == lex.table and again.always == lex.always
    assert MWTLexicon.learn(pairs, min_share=0.6).always == {"im", "lets", "dunno"}
    assert MWTLexicon.learn(pairs, min_count=2).always == {"im"}  # dunno was seen once


@pytest.mark.parametrize("surface, words", [
    ("can't", ["ca", "n't"]), ("Obama's", ["Obama", "'s"]), ("they’re", ["they", "’re"]), ("parents'", ["parents", "'"]),
    ("didnt", ["did", "nt"]), ("Gonna", ["Gon", "na"]), ("cannot", ["can", "not"]), ("dogs", ["dog", "s"]),
    ("x", ["x"]),
])
def test_clitic_rules(surface, words):
    assert split_clitics(surface) == words


@given(st.text(min_size=1, max_size=12))
def test_rule_splits_concatenate_back(surface):
    assert "".join(MWTLexicon().expand(surface)) == surface


def test_span_scores():
    gold_tok = [(0, 5, ("do", "n't")), (6, 10, ("know",)), (10, 11, (".",))]
    s = SpanScorer()
    s.add(gold_tok, [(0, 11)], gold_tok, [(0, 11)])
    assert s.scores() == {"tokens_f1": 100.0, "sentences_f1": 100.0, "words_f1": 100.0, "score": 300.0}
    s = SpanScorer()
    s.add(gold_tok, [(0, 11)], [(0, 5, ("don't",)), (6, 11, ("know.",))], [(0, 5), (6, 11)])
    sc = s.scores()
    assert sc["tokens_f1"] == pytest.approx(f1_percent(1, 2, 3)) == pytest.approx(40.0)
    assert sc["sentences_f1"] == 0.0 and sc["words_f1"] == 0.0
    s = SpanScorer()
    s.add(gold_tok, [(0, 11)], [(0, 5, ("don't",)), (6, 10, ("know",)), (10, 11, (".",))], [(0, 11)])
    assert s.scores()["tokens_f1"] == 100.0 and s.scores()["words_f1"] == pytest.approx(f1_percent(2, 3, 4))


@given(st.integers(0, 2000), st.integers(8, 300), st.integers(0, 40))
def test_window_plan_tiles_the_text(n, window, context):
    if window <= 2 * context:
        if n > window:
            with pytest.raises(ValueError):
                window_plan(n, window, context)
        return
    plan = window_plan(n, window, context)
    covered = []
    for s, e, cs, ce in plan:
        assert 0 <= s <= cs < ce <= e <= n and e - s == min(n, window)
        assert cs - s >= min(context, cs) and e - ce >= min(context, n - ce)
        covered += range(cs, ce)
    assert covered == list(range(n))


def test_dev_sample_is_read():
    docs = documents_from_sentences(read_conllu(EWT_SAMPLE_DEV))
    assert docs and all(d.paragraphs for d in docs)
