"""Language-agnostic tokenisation: the learned multiword-token expander, the lexicon's rules setting, and tokens
that contain a space (Vietnamese), with the text rebuilt exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu, sentence_from_tokens
from g2gt.ud.tokenize import SegmentDataConfig, Segmenter, SegmenterConfig, text_from_sentences, train_segmenter
from g2gt.ud.tokenize.casing import lower_chars, restore_words
from g2gt.ud.tokenize.chars import CharVocab
from g2gt.ud.tokenize.config import ExpanderConfig
from g2gt.ud.tokenize.data import Document, GoldToken, render_document
from g2gt.ud.tokenize.expander import ExpanderVocab, MWTExpander
from g2gt.ud.tokenize.expander_train import expander_train_config, train_expander
from g2gt.ud.tokenize.mwt import MWTLexicon
from g2gt.ud.tokenize.output import build_sentences
from g2gt.ud.tokenize.spans import decode_spans, joinable_spaces
from g2gt.ud.tokenize.train import SPACES_AUTO_COUNT, SPACES_AUTO_SHARE, default_train_config
from g2gt.ud.tokenize.words import WORD_SPACE, WordMatcher, mark_word_spaces, space_words_of

TINY_EXP = ExpanderConfig(d_model=32, num_heads=2, num_layers=1, ffn_dim=64, dropout=0.0, label_smoothing=0.0,
                          batch_tokens=128)
SEG_TINY = SegmenterConfig(d_model=32, num_layers=1, num_heads=2, ffn_dim=64, window=48, context=8)


# ---------------------------------------------------------------------------- casing and vocabulary
@given(st.text(min_size=2, max_size=12).filter(lambda s: not any(c.isspace() for c in s)), st.data())
def test_a_predicted_cut_of_the_surface_keeps_its_exact_characters(surface, data):
    cut = data.draw(st.integers(1, len(surface) - 1))
    words = [lower_chars(surface[:cut]), lower_chars(surface[cut:])]
    assert restore_words(surface, words) == [surface[:cut], surface[cut:]]
    hidden = ["\x00" * len(words[0]), words[1]]  # characters the model does not know come back too
    assert restore_words(surface, hidden) == [surface[:cut], surface[cut:]]


def test_restore_words_casing_and_rejections():
    assert restore_words("Du", ["de", "le"]) == ["De", "le"]
    assert restore_words("AUX", ["à", "les"]) == ["À", "LES"]
    assert restore_words("στο", ["σ", "το"]) == ["σ", "το"]
    assert restore_words("du", ["d\x00", "le"]) is None  # an unknown character it cannot give back
    assert restore_words("du", ["de", ""]) is None and restore_words("du", []) is None


def test_expander_vocab_round_trip():
    v = ExpanderVocab.build([("Du", ("de", "le")), ("στο", ("σ", "το"))])
    ids = v.encode_words(["de", "le"])
    assert v.decode(ids) == ["de", "le"]
    assert v.encode_surface("DU")[1:] == v.encode_surface("du")[1:]  # lowercased
    assert ExpanderVocab(v.to_list()).itos == v.itos


# ---------------------------------------------------------------------------- lexicon rules
def test_english_rules_only_when_asked():
    en, none = MWTLexicon({}, rules="en"), MWTLexicon({}, rules="none")
    assert en.expand("don't") == ["do", "n't"] and en.words("dont", False) == ["do", "nt"]
    assert none.expand("don't") == ["don't"] and none.words("dont", False) == ["dont"]
    assert none.words("les", True) == ["les"]  # no English possessive rule on a French word
    with pytest.raises(ValueError, match="rules"):
        MWTLexicon({}, rules="fr")


def test_checkpoint_entries_round_trip_and_old_checkpoints_are_english():
    lex = MWTLexicon({"du": ["de", "le"]}, ["du"], rules="none")
    again = MWTLexicon.from_checkpoint(lex.checkpoint_entries())
    assert (again.table, again.always, again.rules, again.expander) == (lex.table, lex.always, "none", None)
    assert MWTLexicon.from_checkpoint({"mwt": {}, "mwt_always": []}).rules == "en"
    assert again.words("Du", False) == ["De", "le"]


# ---------------------------------------------------------------------------- the expander
PAIRS = [("du", ("de", "le")), ("au", ("à", "le")), ("aux", ("à", "les")), ("des", ("de", "les")),
         ("evdeki", ("evde", "ki")), ("yoldaki", ("yolda", "ki")), ("bahçedeki", ("bahçede", "ki")),
         ("masadaki", ("masada", "ki"))] * 4


COPIES = ["ev", "yol", "masa", "kitap", "defter", "kalem", "de", "le", "okul", "bahçe"]


def test_expander_learns_its_pairs_and_round_trips_through_the_checkpoint_entry(tmp_path):
    tc = expander_train_config(max_steps=200, eval_every=200, lr=1e-2, warmup=0.05, progress=False, device="cpu")
    exp = train_expander(PAIRS, PAIRS[:8], tmp_path, TINY_EXP, tc, copy_forms=COPIES)
    log = (tmp_path / "log.jsonl").read_text()
    assert '"accuracy": 100.0' in log  # the model fits the eight pairs exactly
    assert exp.expand_many(["Du", "AUX", "evdeki"]) == [["De", "le"], ["À", "LES"], ["evde", "ki"]]
    # decide mode: it splits the multiword tokens it learnt and keeps the one-word ones whole
    assert exp.can_decide and exp.decide_many(["masadaki", "kitap", "okul"]) == [["masada", "ki"], None, None]
    again = MWTExpander.from_dict(exp.to_dict())
    assert again.expand_many([s for s, _ in PAIRS[:8]]) == exp.expand_many([s for s, _ in PAIRS[:8]])
    lex = MWTLexicon({}, rules="none", expander=again)
    lex.prepare(["du", "yoldaki"], ["evdeki", "kitap"])
    assert lex.words("du", True) == ["de", "le"] and lex.words("du", False) == ["du"]
    assert lex.words("evdeki", False, score=0.5) == ["evde", "ki"] and lex.words("evdeki", False, score=0.0) == [
        "evdeki"]  # only a candidate (a score >= lex.candidate_score) goes to the decide mode
    assert lex.words("kitap", False, score=0.5) == ["kitap"]
    entry = exp.to_dict()
    del entry["specials"]  # read as an expander saved before the decide mode (7 specials): it does not fit
    with pytest.raises(ValueError, match="characters"):
        MWTExpander.from_dict(entry)


def test_spans_keep_the_multiword_score():
    text = "ab cd"
    z = np.zeros(len(text), bool)
    ends = np.array([0, 1, 0, 0, 1], bool)
    score = np.array([0.0, 0.3, 0.0, 0.0, 0.7], np.float32)
    spans = decode_spans(text, ends, z, z, np.array([c == " " for c in text]), z, mwt_score=score)
    assert spans.mwt_score.tolist() == pytest.approx([0.3, 0.7])


def test_a_segmenter_checkpoint_carries_its_expander(tmp_path):
    train, dev = read_conllu(EWT_SAMPLE_TRAIN)[:300], read_conllu(EWT_SAMPLE_DEV)[:20]
    tc = default_train_config(max_steps=2, eval_every=0, progress=False, device="cpu")
    exp_tc = expander_train_config(max_steps=3, eval_every=3, progress=False, device="cpu")
    seg = train_segmenter(train, dev, tmp_path, SEG_TINY, tc, data_config=SegmentDataConfig(batch_tokens=8 * 48),
                          expander=True, expander_config=TINY_EXP, expander_train_config=exp_tc)
    assert seg.lexicon.expander is not None and seg.lexicon.rules == "none"
    saved = torch.load(tmp_path / "expander" / "best.pt", weights_only=True)["model"]
    mine = seg.lexicon.expander.model.state_dict()
    assert all(torch.equal(mine[k], v.half().float()) for k, v in saved.items())
    seg.save(tmp_path / "segmenter.pt")  # the stage file of a model folder keeps it
    back = Segmenter.load(tmp_path / "segmenter.pt", dtype=None)
    assert back.lexicon.expander is not None and back.lexicon.rules == "none"
    surfaces = ["gonna", "cannot", "wanna"]
    assert back.lexicon.expander.expand_many(surfaces) == seg.lexicon.expander.expand_many(surfaces)


# ---------------------------------------------------------------------------- tokens with a space
VI = "Tôi nhớ chủ tịch xã Bùi Văn Luyến .  Hiện nay\txã có"
VI_TOKENS = ["Tôi", "nhớ", "chủ tịch", "xã", "Bùi Văn Luyến", ".", "Hiện nay", "xã", "có"]


def _decisions(text: str, tokens: list[str]):
    ends = np.zeros(len(text), bool)
    pos = 0
    for t in tokens:
        pos = text.index(t, pos) + len(t)
        ends[pos - 1] = True
    return ends


def test_joinable_spaces_are_single_spaces_between_characters():
    is_space = np.array([c.isspace() for c in VI])
    j = joinable_spaces(VI, is_space)
    assert all(VI[i] == " " and not VI[i - 1].isspace() and not VI[i + 1].isspace() for i in np.flatnonzero(j))
    assert not j[VI.index("  ")] and not j[VI.index("\t")]


def test_tokens_with_spaces_and_the_text_back():
    vocab = CharVocab(list("abc"))
    _, _, is_space, is_glue = vocab.lookup(VI)
    ends = _decisions(VI, VI_TOKENS)
    sents = np.zeros(len(VI), bool)
    sents[VI.index(".")] = True
    z = np.zeros(len(VI), bool)
    spans = decode_spans(VI, ends, sents, z, is_space, is_glue, joinable=joinable_spaces(VI, is_space))
    got = [VI[a:b] for a, b in zip(spans.starts.tolist(), spans.ends.tolist())]
    assert got == VI_TOKENS
    sentences = build_sentences(VI, spans, MWTLexicon(rules="none"))
    assert [s.forms for s in sentences] == [VI_TOKENS[:6], VI_TOKENS[6:]]
    assert sentences[0].metadata["text"] == "Tôi nhớ chủ tịch xã Bùi Văn Luyến ."
    assert text_from_sentences(sentences) == VI
    plain = decode_spans(VI, ends, sents, z, is_space, is_glue)  # a model without spaces_in_tokens
    assert len(plain) == len(VI.split())


def test_dictionary_feature_marks_the_spaces_of_known_words():
    assert space_words_of(VI_TOKENS + ["Chủ tịch", "a  b"]) == ["bùi văn luyến", "chủ tịch", "hiện nay"]
    matcher = WordMatcher(space_words_of(VI_TOKENS) + ["nhớ chủ tịch xã"])  # the longest match wins
    inner = matcher.inner_spaces(VI)
    assert [VI[i - 1:i + 2] for i in inner] == ["ớ c", "ủ t", "h x", "i V", "n L", "n n"]
    assert not matcher.inner_spaces("chủ  tịch") and not matcher.inner_spaces("chủ\ttịch")  # single spaces only
    vocab = CharVocab(list("abc"))
    c = vocab.compact(VI)
    marked = mark_word_spaces(VI, c, matcher)
    left = np.searchsorted(c.keep, np.array(inner)) - 1
    assert (marked.after[left] == WORD_SPACE).all() and (marked.before[left + 1] == WORD_SPACE).all()
    others = np.setdiff1d(np.arange(len(c.keep)), left)
    assert (marked.after[others] == c.after[others]).all() and (c.after != WORD_SPACE).all()
    empty = matcher.drop(1.0, __import__("random").Random(0))
    assert not empty and mark_word_spaces(VI, c, empty) is c


def test_spaces_in_tokens_is_chosen_from_the_data(tmp_path):
    def doc(sentences):
        return [sentence_from_tokens([(t, [t], True) for t in s]) for s in sentences]

    vi = doc([VI_TOKENS[:6], VI_TOKENS[6:] + ["."]] * 20)
    rendered = render_document(Document(None, [[[GoldToken(t, (t,)) for t in VI_TOKENS]]]), "wrap")
    assert "chủ tịch" in rendered.text  # wrapping never breaks a token at its inner space
    tc = default_train_config(max_steps=1, eval_every=0, progress=False, device="cpu")
    seg = train_segmenter(vi, vi[:4], tmp_path / "vi", SEG_TINY, tc, data_config=SegmentDataConfig(batch_tokens=4 * 48))
    assert seg.model.config.spaces_in_tokens and seg.lexicon.expander is None
    assert "chủ tịch" in seg.model.config.space_words
    assert text_from_sentences(seg(VI)) == VI  # whatever the one-step model decides, the text comes back
    en = read_conllu(EWT_SAMPLE_TRAIN)[:40]
    seg = train_segmenter(en, en[:4], tmp_path / "en", SEG_TINY, tc, data_config=SegmentDataConfig(batch_tokens=4 * 48))
    assert not seg.model.config.spaces_in_tokens and not seg.model.config.space_words


@pytest.mark.parametrize("spaced, on", [(SPACES_AUTO_COUNT, True), (SPACES_AUTO_COUNT - 1, False)])
def test_a_few_spaced_tokens_in_a_large_treebank_turn_spaces_on(tmp_path, spaced, on):
    """French Sequoia's numbers (`13 819`): SPACES_AUTO_COUNT tokens with a space turn spaces_in_tokens on even
    when they are under 1 % of the tokens; one fewer does not."""
    en = read_conllu(EWT_SAMPLE_TRAIN)[:200]
    numbers = [sentence_from_tokens([("Il", ["Il"], True), ("paie", ["paie"], True), (f"{k} 000", [f"{k} 000"], False),
                                     (".", ["."], True)]) for k in range(spaced)]
    train = en + numbers
    tokens = sum(len(s.words) for s in train)
    assert spaced < SPACES_AUTO_SHARE * tokens  # under 1 %
    tc = default_train_config(max_steps=1, eval_every=0, progress=False, device="cpu")
    seg = train_segmenter(train, en[:4], tmp_path / "fr", SEG_TINY, tc,
                          data_config=SegmentDataConfig(batch_tokens=4 * 48))
    assert seg.model.config.spaces_in_tokens is on
    assert ("0 000" in seg.model.config.space_words) is on
