"""Subword tokenization for sequence tasks: byte-level BPE on the ``tokenizers`` library.

:class:`SubwordTokenizer` wraps a :class:`tokenizers.Tokenizer` with a BPE model
over *bytes* (GPT-2 style byte-level pre-tokenization): every UTF-8 byte is in
the base alphabet, so any character -- seen in training or not -- encodes
without loss (byte fallback); ``<unk>`` exists for API completeness but is never
produced. Decoding gives back the exact input text (modulo leading / trailing
whitespace and runs of spaces, which the byte-level pre-tokenizer keeps too).

Special ids (fixed, and the defaults of :class:`g2gt.nn.G2GTConfig`)::

    0 <pad>   1 <s> (BOS)   2 </s> (EOS)   3 <unk>

A tokenizer serialises to one JSON string (:meth:`to_str`), which seq2seq
checkpoints store as a plain ``str`` so they load with
``torch.load(..., weights_only=True)``.

>>> tok = SubwordTokenizer.train(["a small cat", "a big dog"] * 10, vocab_size=300)
>>> tok.decode(tok.encode("a small dog"))
'a small dog'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["SubwordTokenizer", "SPECIAL_TOKENS", "PAD", "BOS", "EOS", "UNK"]

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK]


class SubwordTokenizer:
    """Byte-level BPE tokenizer (see the module docstring).

    Args:
        tokenizer: a trained :class:`tokenizers.Tokenizer` whose vocabulary starts
            with :data:`SPECIAL_TOKENS` in that order.
    """

    def __init__(self, tokenizer) -> None:
        self.tok = tokenizer
        for i, s in enumerate(SPECIAL_TOKENS):
            if tokenizer.token_to_id(s) != i:
                raise ValueError(f"tokenizer must map {s!r} to id {i} (got {tokenizer.token_to_id(s)})")

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _empty():
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        tok = Tokenizer(models.BPE(unk_token=UNK))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)
        tok.decoder = decoders.ByteLevel()
        return tok

    @classmethod
    def train(
        cls, texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2, show_progress: bool = False,
    ) -> "SubwordTokenizer":
        """Learn BPE merges from ``texts`` (an iterable of sentences).

        ``vocab_size`` counts the 4 special tokens and the 256 byte symbols; the
        result may be smaller when the data has fewer mergeable pairs.
        """
        from tokenizers import pre_tokenizers, trainers

        if vocab_size < len(SPECIAL_TOKENS) + 256:
            raise ValueError(f"vocab_size must be >= {len(SPECIAL_TOKENS) + 256} (specials + 256 bytes), got {vocab_size}")
        tok = cls._empty()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=show_progress,
        )
        tok.train_from_iterator(texts, trainer=trainer)
        return cls(cls._plain_specials(tok))

    @staticmethod
    def _plain_specials(tok):
        """Keep the special tokens as ordinary vocabulary entries (ids 0-3) but drop them
        from the *added tokens*, so a literal ``<unk>`` or ``</s>`` in user text is
        encoded as ordinary bytes instead of being swallowed as a control token."""
        import json

        from tokenizers import Tokenizer

        d = json.loads(tok.to_str())
        d["added_tokens"] = []
        return Tokenizer.from_str(json.dumps(d, ensure_ascii=False))

    @classmethod
    def from_str(cls, json_str: str) -> "SubwordTokenizer":
        """Inverse of :meth:`to_str`."""
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_str(json_str))

    def to_str(self) -> str:
        """The whole tokenizer (model, merges, pre-tokenizer, decoder) as a JSON string."""
        return self.tok.to_str()

    def save(self, path: str | os.PathLike) -> None:
        """Write the JSON form to ``path`` (loadable by ``tokenizers.Tokenizer.from_file`` too)."""
        Path(path).write_text(self.to_str(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "SubwordTokenizer":
        return cls.from_str(Path(path).read_text(encoding="utf-8"))

    # ------------------------------------------------------------------ ids
    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size(with_added_tokens=True)

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"SubwordTokenizer(byte-level BPE, vocab_size={self.vocab_size})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SubwordTokenizer) and other.to_str() == self.to_str()

    # ------------------------------------------------------------------ encode / decode
    def encode(self, text: str) -> list[int]:
        """Sentence -> subword ids (no BOS / EOS)."""
        return self.tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Many sentences at once (parallel in Rust)."""
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

    def encode_words(self, words: Sequence[str]) -> tuple[list[int], list[int]]:
        """Pre-split words -> ``(ids, word_index)``: ``word_index[t]`` is the 0-based
        word that subword ``t`` came from (each word is BPE'd on its own, as if
        preceded by a space)."""
        if not words:
            return [], []
        enc = self.tok.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        return list(enc.ids), [int(w) for w in enc.word_ids]

    def encode_words_batch(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[int]]]:
        nonempty = [list(s) for s in sentences if len(s)]
        encs = iter(self.tok.encode_batch(nonempty, is_pretokenized=True, add_special_tokens=False)) if nonempty else iter(())
        out = []
        for s in sentences:
            if not len(s):
                out.append(([], []))
            else:
                e = next(encs)
                out.append((list(e.ids), [int(w) for w in e.word_ids]))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """Subword ids -> detokenized text (special tokens dropped, outer spaces stripped)."""
        n_special = len(SPECIAL_TOKENS)
        return self.tok.decode([int(i) for i in ids if int(i) >= n_special], skip_special_tokens=False).strip()

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        n_special = len(SPECIAL_TOKENS)
        clean = [[int(i) for i in b if int(i) >= n_special] for b in batch]
        return [s.strip() for s in self.tok.decode_batch(clean, skip_special_tokens=False)]

    def tokens(self, text: str) -> list[str]:
        """Subword strings (byte-level symbols, ``Ġ`` = a leading space) -- for inspection."""
        return self.tok.encode(text, add_special_tokens=False).tokens
