"""Short texts alone in segmenter training (the ``utterances`` windows) and warm-starting a segmenter."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import torch

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import parse_conllu_string, read_conllu
from g2gt.ud.tokenize import CharVocab, SegmentDataConfig, SegmenterConfig, documents_from_sentences, render_document
from g2gt.ud.tokenize.chars import GAPS
from g2gt.ud.tokenize.data import GoldToken, capitalized, pick_utterance, render_utterance
from g2gt.ud.tokenize.task import SegmentTask
from g2gt.ud.tokenize.train import default_train_config, learn_lexicon, train_segmenter

EDGE = GAPS.index("blank_line")  # the gap id of a text's edge
TINY = dict(d_model=32, num_layers=2, num_heads=2, ffn_dim=64, window=48, context=8)

TWO = """# newdoc id = d1
# newpar
# text = hi. how are you?
1	hi	hi	INTJ	_	_	0	root	_	SpaceAfter=No
2	.	.	PUNCT	_	_	1	punct	_	_

# text = I'm fine.
1-2	I'm	_	_	_	_	_	_	_	_
1	I	I	PRON	_	_	3	nsubj	_	_
2	'm	be	AUX	_	_	3	cop	_	_
3	fine	fine	ADJ	_	_	0	root	_	SpaceAfter=No
4	.	.	PUNCT	_	_	3	punct	_	_

"""


def test_render_utterance_labels_tokens_and_sentence_ends():
    doc = documents_from_sentences(parse_conllu_string(TWO))[0]
    r = render_utterance(doc.sentences, random.Random(0), capitalize=0.0)
    assert r.text in ("hi. I'm fine.", "hi.\nI'm fine.")
    # hi|.| then I'm (a multiword token) fine|. (the sentence end)
    assert "".join(map(str, r.labels.tolist())) == "012" + "0" + "003" + "0" + "0001" + "2"
    assert [r.text[a:b] for a, b in r.sentences] == ["hi.", "I'm fine."]
    assert [w for _, _, w in r.tokens][2] == ("I", "'m")


def test_capitalized_upper_cases_a_lowercase_first_letter_only():
    hi = [GoldToken("hi", ("hi",), space_after=False), GoldToken(".", (".",))]
    assert [t.form for t in capitalized(hi)] == ["Hi", "."]
    assert capitalized([GoldToken("été", ("été",))])[0].form == "Été"
    assert capitalized([GoldToken("don't", ("do", "n't"))])[0].words == ("Do", "n't")
    for same in ("Hi", "3rd", "ßa", '"hi'):  # already capital, a digit, a capital of two letters, punctuation
        assert capitalized([GoldToken(same, (same,))])[0].form == same
    r = render_utterance([hi], random.Random(0), capitalize=1.0)
    assert r.text == "Hi." and r.labels.tolist() == [0, 1, 2]  # same labels, capital letter


def test_pick_utterance_takes_consecutive_sentences_of_one_paragraph():
    docs = documents_from_sentences(read_conllu(EWT_SAMPLE_DEV)[:120])
    paragraphs = [p for d in docs for p in d.paragraphs]
    rng = random.Random(3)
    sizes = []
    for _ in range(200):
        u = pick_utterance(docs, rng)
        sizes.append(len(u))
        assert 1 <= len(u) <= 3
        assert any(any(p[i:i + len(u)] == u for i in range(len(p))) for p in paragraphs)
    assert set(sizes) > {1}
    all_lengths = [len(s) for p in paragraphs for s in p]
    first_lengths = []
    for _ in range(300):
        first_lengths.append(len(pick_utterance(docs, rng)[0]))
    assert np.mean(first_lengths) < np.mean(all_lengths)  # short sentences are preferred


def _task(utterances: float) -> SegmentTask:
    docs = documents_from_sentences(read_conllu(EWT_SAMPLE_DEV)[:150])
    vocab = CharVocab.build((render_document(d).text for d in docs), min_count=1)
    cfg = SegmenterConfig(vocab_size=len(vocab), **TINY)
    return SegmentTask(docs, docs[:1], vocab, learn_lexicon(docs), cfg, SegmentDataConfig(utterances=utterances))


def test_utterance_windows_hold_one_short_text_with_its_edges():
    plain = _task(0.0)
    cols, lengths = plain._windows(0)
    n = len(lengths)
    assert (lengths == plain.config.window).all()  # the stream alone: full windows
    task = _task(0.5)
    cols, lengths = task._windows(0)
    assert len(lengths) == n + round(0.5 * n)
    ids, _, before, after, labels = cols
    short = np.flatnonzero(lengths < task.config.window)
    assert len(short) > 0.15 * n  # (sentences longer than the window are cut)
    for r in short:
        k = lengths[r]
        assert before[r, 0] == EDGE and after[r, k - 1] == EDGE  # the text starts and ends in the window
        assert labels[r, k - 1] in (2, 4)  # ... with a sentence end
        assert (ids[r, k:] == 0).all() and (labels[r, k:] == 0).all()  # padding
    batch = next(task.train_batches(0))
    assert batch.padding_mask is not None


def test_warm_start_continues_a_segmenter_with_its_characters_and_weights(tmp_path):
    train = read_conllu(EWT_SAMPLE_TRAIN)[:200]
    dev = read_conllu(EWT_SAMPLE_DEV)[:30]
    tc = default_train_config(max_steps=6, eval_every=6, log_every=2, progress=False, warmup=0.1)
    data = SegmentDataConfig(batch_tokens=8 * 48)
    first = train_segmenter(train, dev, tmp_path / "a", SegmenterConfig(**TINY), tc, data_config=data)
    frozen = dataclasses.replace(tc, max_steps=1, lr=0.0, warmup=0.0, init_from=str(tmp_path / "a" / "best.pt"))
    other = SegmenterConfig(**{**TINY, "d_model": 16})  # ignored: the source's architecture is kept
    again = train_segmenter(read_conllu(EWT_SAMPLE_TRAIN)[200:400], dev, tmp_path / "b", other, frozen,
                            data_config=data)
    assert again.model.config == first.model.config and again.vocab.itos == first.vocab.itos
    for (name, a), (_, b) in zip(first.model.state_dict().items(), again.model.state_dict().items()):
        assert torch.equal(a, b), name  # lr 0: the source's weights, unchanged
    ck = torch.load(tmp_path / "b" / "last.pt", weights_only=True)
    assert ck["train_config"]["init_from"].endswith("best.pt")


# --------------------------------------------------------------------------- a sentence's final punctuation
def _spans(text: str, cuts: list[int], sentence_ends: list[int]):
    """Spans of ``text`` cut after characters ``cuts`` (and at spaces), sentences ending after tokens ending at
    characters ``sentence_ends``."""
    from g2gt.ud.tokenize.chars import CharVocab as V
    from g2gt.ud.tokenize.spans import decode_spans

    n = len(text)
    end = np.zeros(n, dtype=bool)
    end[cuts] = True
    sent = np.zeros(n, dtype=bool)
    sent[sentence_ends] = True
    _, _, is_space, is_glue = V([]).lookup(text)
    return decode_spans(text, end, sent, np.zeros(n, dtype=bool), is_space, is_glue)


def _tokens(text, sp):
    return [[text[sp.starts[k]:sp.ends[k]] for k in range(a, b)] for a, b in sp.sentences]


def test_final_punct_is_split_from_an_unknown_last_token_of_each_sentence():
    from g2gt.ud.tokenize.spans import split_final_punct

    text = "Hi. How are you? I like it etc. Bye!"
    sp = _spans(text, [], [2, 15, 30])  # the model cut no token inside 'Hi.', 'etc.' nor 'Bye!'
    assert _tokens(text, sp)[0] == ["Hi."]
    out = split_final_punct(text, sp, frozenset({"etc."}))
    assert _tokens(text, out) == [["Hi", "."], ["How", "are", "you", "?"], ["I", "like", "it", "etc."], ["Bye", "!"]]
    assert len(out.mwt) == len(out.starts) == len(out) == len(sp) + 3 and not out.mwt.any()
    assert split_final_punct(text, sp, None) is sp  # an older segmenter: as the model cut


def test_final_punct_rule_keeps_punctuation_runs_single_characters_and_inner_tokens():
    from g2gt.ud.tokenize.spans import split_final_punct

    text = "Wait... What?! Mr. X. ?"
    sp = _spans(text, [3, 11], [6, 13, 20, 22])
    got = _tokens(text, split_final_punct(text, sp, frozenset()))
    assert got == [["Wait", "..."], ["What", "?!"], ["Mr.", "X."], ["?"]]  # 'Mr.' is not a sentence's last
    text = "Call Th. Ask K. At 9 p.m."  # unseen, but written like abbreviations: an initial, inner periods
    sp = _spans(text, [], [7, 14, 24])
    assert _tokens(text, split_final_punct(text, sp, frozenset())) == [
        ["Call", "Th", "."], ["Ask", "K."], ["At", "9", "p.m."]]


def test_lexicon_learns_and_saves_the_final_tokens():
    from g2gt.ud.tokenize.mwt import MWTLexicon

    lex = MWTLexicon.learn([("Mr.", ["Mr."]), ("etc.", ["etc."]), (".", ["."]), ("Hi", ["Hi"]), ("...", ["..."])])
    assert lex.final_tokens == {"mr.", "etc.", "..."}
    again = MWTLexicon.from_checkpoint(lex.checkpoint_entries())
    assert again.final_tokens == lex.final_tokens
    assert MWTLexicon.from_checkpoint({"mwt": {}}).final_tokens is None  # saved before: the rule is off


def test_the_default_english_segmenter_cuts_greetings_like_treebank_text():
    from g2gt.core.registry import DEFAULT_MODEL, available_models
    from g2gt.ud.tokenize import Segmenter

    if DEFAULT_MODEL not in available_models():
        import pytest

        pytest.skip("no shipped default model here")
    seg = Segmenter.load(DEFAULT_MODEL)
    assert seg.tokenize("Hi.") == [["Hi", "."]]
    assert seg.tokenize("Hi. How are you?") == [["Hi", "."], ["How", "are", "you", "?"]]
    assert seg.tokenize("Mr. Smith left.") == [["Mr.", "Smith", "left", "."]]  # an abbreviation inside: kept


def test_a_sentence_of_final_punctuation_alone_ends_the_one_before_on_its_line():
    from g2gt.ud.tokenize.spans import attach_final_punct

    text = "Merci ! Bien. ? Fin\n!"
    sp = _spans(text, [], [4, 6, 12, 14, 18, 20])  # the model ends a sentence after every token
    out = attach_final_punct(text, sp)
    # 'Merci !' joins; '?' after 'Bien.' (which has its own end) stays; '!' after a line break stays
    assert _tokens(text, out) == [["Merci", "!"], ["Bien."], ["?"], ["Fin"], ["!"]]
    assert out.starts is sp.starts and out.ends is sp.ends  # tokens do not change
    one = _spans("Bravo", [], [4])
    assert attach_final_punct("Bravo", one) is one
