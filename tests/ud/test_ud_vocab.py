"""g2gt.ud.vocab.FormIds.char_rows: the character input the parser and the enhancer batch alike."""

from dataclasses import dataclass

import torch

from g2gt.ud.vocab import PAD, ROOT, UNK, FormIds, index_of


@dataclass
class _Vocab(FormIds):
    chars: list
    lowercase: bool = True
    max_word_chars: int = 6

    def __post_init__(self):
        self.word_index, self.char_index = {}, index_of(self.chars)


def test_char_rows_share_word_types_across_the_batch():
    v = _Vocab([PAD, UNK, ROOT, "a", "b", "c"])
    word_types, char_ids = v.char_rows([[ROOT, "ab", "c"], [ROOT, "c", "ab", "ab", "xa"]], 6)
    assert word_types.dtype == torch.long and word_types.shape == (2, 6)
    # types in order of first appearance over the batch: <root> 0, ab 1, c 2, xa 3; padding 0
    assert word_types.tolist() == [[0, 1, 2, 0, 0, 0], [0, 2, 1, 1, 3, 0]]
    a, b, c = 3, 4, 5
    assert char_ids.dtype == torch.long
    assert char_ids.tolist() == [[2, 0], [a, b], [c, 0], [1, a]]  # <root> -> [2]; unknown x -> <unk> 1


def test_char_rows_keep_prefix_and_suffix_of_long_words():
    v = _Vocab([PAD, UNK, ROOT, *"abcdefgh"], max_word_chars=6)
    _, char_ids = v.char_rows([[ROOT, "abcdefgh"]], 2)
    ids = {ch: i for i, ch in enumerate(v.chars)}
    assert char_ids.shape == (2, 6)
    assert char_ids[1].tolist() == [ids[ch] for ch in "abcdgh"]  # first 6 - 6 // 3 and last 6 // 3 characters
