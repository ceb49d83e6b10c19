"""Byte-level BPE tokenizer: round trips, unknown characters, persistence, word alignment."""

from __future__ import annotations


import pytest

from g2gt.seq2seq.subword import SPECIAL_TOKENS, SubwordTokenizer
from fixture_paths import FIXTURES_MT

FIX = FIXTURES_MT


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    return [line.rstrip("\n") for f in ("train.en", "train.de") for line in open(FIX / f, encoding="utf-8")]


@pytest.fixture(scope="module")
def tok(sentences) -> SubwordTokenizer:
    return SubwordTokenizer.train(sentences, vocab_size=500)


def test_special_ids_fixed(tok):
    assert [tok.tok.token_to_id(s) for s in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 1, 2, 3)
    assert 260 <= tok.vocab_size <= 500


def test_round_trip_training_sentences(tok, sentences):
    for s in sentences:
        ids = tok.encode(s)
        assert all(i >= len(SPECIAL_TOKENS) for i in ids)
        assert tok.decode(ids) == s
    assert tok.decode_batch(tok.encode_batch(sentences)) == sentences


@pytest.mark.parametrize("text", ["Грузовик едет 🚚 über 東京!", "tab\there", "<unk> </s> <pad> literal", "ÆØÅ ǅ ﬁ"])
def test_unseen_characters_round_trip_without_unk(tok, text):
    ids = tok.encode(text)
    assert tok.unk_id not in ids  # byte fallback: every byte is in the base alphabet
    assert tok.decode(ids) == text


def test_bpe_compresses(tok, sentences):
    s = sentences[0]
    assert len(tok.encode(s)) < len(s.encode("utf-8"))


def test_save_load_identical(tok, sentences, tmp_path):
    again = SubwordTokenizer.from_str(tok.to_str())
    assert again == tok
    assert again.encode_batch(sentences) == tok.encode_batch(sentences)
    tok.save(tmp_path / "t.json")
    loaded = SubwordTokenizer.load(tmp_path / "t.json")
    assert loaded.encode_batch(sentences) == tok.encode_batch(sentences)
    assert isinstance(tok.to_str(), str)  # stored as a plain string in weights_only checkpoints


def test_encode_words_alignment(tok):
    words = ["Ein", "Mann", "fährt", "Fahrrad", ".", "Übermorgen"]
    ids, widx = tok.encode_words(words)
    assert len(ids) == len(widx) and widx == sorted(widx) and set(widx) == set(range(len(words)))
    for w, word in enumerate(words):
        pieces = [i for i, k in zip(ids, widx) if k == w]
        assert tok.decode(pieces) == word
    batch = tok.encode_words_batch([words, [], ["x"]])
    assert batch[0] == (ids, widx) and batch[1] == ([], [])


def test_decode_drops_control_ids(tok):
    ids = tok.encode("Ein Hund")
    assert tok.decode([tok.bos_id] + ids + [tok.eos_id, tok.pad_id, tok.pad_id]) == "Ein Hund"


def test_too_small_vocab_rejected(sentences):
    with pytest.raises(ValueError, match="vocab_size"):
        SubwordTokenizer.train(sentences, vocab_size=100)
