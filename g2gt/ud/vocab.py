"""What the UD vocabularies share: counting a treebank's words, characters, UPOS and relations, the word and
character lists with their reserved ids, and form -> id lookups.

Torch-free to import (only :meth:`FormIds.char_rows` makes tensors). :class:`g2gt.ud.parse.vocab.ParserVocab`
and :class:`g2gt.ud.enhance.data.EnhancerVocab` are built from :func:`count_words` and batch their characters
with :meth:`FormIds.char_rows`; both save their lists as plain dicts, so this module is no part of any
checkpoint format.

Ids 0 / 1 / 2 of a word or character list are ``<pad>`` / ``<unk>`` / ``<root>``; a form of ``m >
max_word_chars`` characters keeps its first ``max_word_chars - max_word_chars // 3`` and last
``max_word_chars // 3`` characters.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["PAD", "UNK", "ROOT", "WordCounts", "count_words", "index_of", "FormIds"]

PAD, UNK, ROOT = "<pad>", "<unk>", "<root>"


@dataclass
class WordCounts:
    """Training counts: word forms (lowercased or not), characters, UPOS tags and DEPREL relations."""

    words: Counter = field(default_factory=Counter)
    chars: Counter = field(default_factory=Counter)
    upos: Counter = field(default_factory=Counter)
    rels: Counter = field(default_factory=Counter)

    def word_list(self, min_freq: int) -> list[str]:
        """``[<pad>, <unk>, <root>]`` then, sorted, the forms seen at least ``min_freq`` times."""
        return [PAD, UNK, ROOT] + sorted(w for w, c in self.words.items() if c >= min_freq)

    def char_list(self) -> list[str]:
        """``[<pad>, <unk>, <root>]`` then every character seen, sorted."""
        return [PAD, UNK, ROOT] + sorted(self.chars)


def count_words(sentences: Sequence, lowercase: bool = True, missing_rel: str | None = None) -> WordCounts:
    """Count the ``forms``, their characters, ``upos`` and ``deprels`` of ``sentences`` (objects with those
    lists, e.g. :class:`g2gt.ud.io.Sentence`). ``lowercase``: count forms lowercased. A missing DEPREL
    (None or empty) is counted as ``missing_rel``, or not at all when that is None."""
    counts = WordCounts()
    for s in sentences:
        for f, u, r in zip(s.forms, s.upos, s.deprels):
            counts.words[f.lower() if lowercase else f] += 1
            counts.chars.update(f)
            counts.upos[u] += 1
            r = r or missing_rel
            if r is not None:
                counts.rels[r] += 1
    return counts


def index_of(items: Iterable[str]) -> dict[str, int]:
    """``{item: position}`` of a vocabulary list."""
    return {x: i for i, x in enumerate(items)}


class FormIds:
    """Mixin of a vocabulary with ``words`` / ``chars`` lists (reserved ids as above), their ``word_index`` /
    ``char_index`` (:func:`index_of`), ``lowercase`` and ``max_word_chars``: form -> word and character ids
    (``<unk>`` = 1 for unknown ones)."""

    word_index: dict[str, int]
    char_index: dict[str, int]
    lowercase: bool
    max_word_chars: int

    def word_id(self, form: str) -> int:
        return self.word_index.get(form.lower() if self.lowercase else form, 1)

    def char_ids(self, form: str) -> list[int]:
        """Character ids of ``form``; a word longer than ``max_word_chars`` keeps its prefix and suffix."""
        m = self.max_word_chars
        if len(form) > m:
            form = form[: m - m // 3] + form[-(m // 3):]
        return [self.char_index.get(c, 1) for c in form] or [1]

    def char_rows(self, sentences: Sequence[Sequence[str]], length: int) -> tuple[Tensor, Tensor]:
        """The character input of a batch: its distinct forms (word types) get ids ``0..U-1`` in order of first
        appearance; ``word_types [B, length]`` (long) holds each node's type id (padding: 0) and ``char_ids
        [U, m]`` (long) each type's :meth:`char_ids` (``<root>``: ``[2]``) right-padded with 0 to the longest
        ``m``. ``sentences``: each sentence's node forms, ``<root>`` first, at most ``length`` of them."""
        from ..core.batch import pad_sequences

        types: dict[str, int] = {}
        rows = [[types.setdefault(f, len(types)) for f in forms] for forms in sentences]
        chars = [[2] if f == ROOT else self.char_ids(f) for f in types]  # dicts keep insertion order = type id
        return pad_sequences(rows, 0, length), pad_sequences(chars, 0)
