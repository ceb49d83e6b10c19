"""The learned multiword-token expander: a token's surface -> its syntactic words, for any language.

The lexicon (:class:`g2gt.ud.tokenize.mwt.MWTLexicon`) is the fast path for surfaces seen in training; this
model handles the unseen ones, including splits that are not a cut of the surface (French ``du`` -> ``de
le``, Turkish ``trilyonluk`` -> ``_ trilyonluk``). It is a small character encoder-decoder on the library's
own core (:class:`g2gt.nn.G2GTransformer`): the lowercased characters of the surface are a chain graph
(edge label = clipped relative distance; sinusoidal positions too, so that cross-attention can find the
character to copy next), the decoder writes the lowercased words
joined by a separator symbol, greedily over the KV cache (:meth:`g2gt.nn.G2GTransformer.generate`)::

    source  <mwt> k e n a r ı n d a k i                 [n + 1]  a mode symbol + chars of lower(surface)
    target  k e n a r ı n d a <sep> k i <eos>           [m + 1]

A treebank has few multiword tokens (1,082 in Turkish IMST train), too few to learn copying characters
from. So training also shows one-word tokens, marked ``<one>`` in the source and copied unchanged in the
target: the model learns to copy from them and to split from the ``<mwt>`` pairs. A third mode, ``<any>``,
shows both kinds unmarked, so the model also learns to *decide* whether a token is a multiword token: the
segmenter asks it about tokens its character model is unsure of (:mod:`g2gt.ud.tokenize.mwt`), since in
agglutinative languages such as Turkish the character model alone finds few of them.

Casing and characters the model does not know come back from the surface
(:func:`g2gt.ud.tokenize.casing.restore_words`): when the predicted words, concatenated, equal the lowercased
surface (unknown characters match any character) the surface *as written* is cut at the predicted word
boundaries (``Milas'lı`` -> ``Milas 'lı``); otherwise the predicted words get the surface's casing pattern
(``Du`` -> ``De le``), and an output with an unknown character is rejected (``None``: the caller keeps the
token whole).

* :class:`ExpanderVocab`: characters <-> ids (0 pad, 1 BOS, 2 EOS, 3 unknown, 4 separator, 5 ``<mwt>``,
  6 ``<one>``);
* :func:`build_expander_model`: the :class:`G2GTransformer` of an :class:`ExpanderConfig`;
* :class:`MWTExpander`: batched, cached inference; ``to_dict`` / ``from_dict`` for the segmenter checkpoint.

Training is in :mod:`g2gt.ud.tokenize.expander_train`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from ...core.graph import chain_labels
from ...nn.char_transducer import build_char_transducer
from ...nn.transformer import G2GTransformer
from .casing import UNKNOWN_CHAR, lower_chars, restore_words
from .config import ExpanderConfig

__all__ = ["EXPANDER_KIND", "ExpanderVocab", "MWTExpander", "build_expander_model", "chain_labels"]

EXPANDER_KIND = "mwt_expander"
PAD, BOS, EOS, UNK, SEP, MWT, ONE, ANY = 0, 1, 2, 3, 4, 5, 6, 7
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>", "<sep>", "<mwt>", "<one>", "<any>")
NUM_SPECIALS = len(SPECIALS)


class ExpanderVocab:
    """Characters of the training pairs (lowercased) -> ids after the specials: pad, BOS, EOS, unknown, the
    word separator and the mode symbols ``<mwt>`` (split this token), ``<one>`` (copy this one-word token)
    and ``<any>`` (decide). ``specials``: how many of them a vocabulary has (7, no ``<any>``, in expanders
    saved before the decide mode).

    >>> v = ExpanderVocab(["a", "b"])
    >>> v.encode_surface("Ab"), v.encode_words(["ab", "a"]), v.decode([8, 9, 4, 8, 11])
    ([5, 8, 9], [8, 9, 4, 8], ['ab', 'a\\x00'])
    """

    def __init__(self, chars: Iterable[str], specials: int = NUM_SPECIALS) -> None:
        if not 7 <= specials <= NUM_SPECIALS:
            raise ValueError(f"an expander vocabulary has 7 or {NUM_SPECIALS} special symbols, got {specials}")
        self.specials = specials
        self.itos: list[str] = list(SPECIALS[:specials])
        self.stoi: dict[str, int] = {}
        for c in chars:
            if len(c) != 1:
                raise ValueError(f"an expander vocabulary holds single characters, got {c!r}")
            if c not in self.stoi:
                self.stoi[c] = len(self.itos)
                self.itos.append(c)

    @property
    def can_decide(self) -> bool:
        """Whether the vocabulary has the ``<any>`` mode (the model was trained to decide)."""
        return self.specials > ANY
    @classmethod
    def build(cls, pairs: Iterable[tuple[str, Sequence[str]]]) -> ExpanderVocab:
        """Every character of the lowercased surfaces and words, sorted."""
        chars: set[str] = set()
        for surface, words in pairs:
            chars.update(lower_chars(surface))
            for w in words:
                chars.update(lower_chars(w))
        return cls(sorted(chars))

    def __len__(self) -> int:
        return len(self.itos)

    def to_list(self) -> list[str]:
        return self.itos[self.specials:]

    def encode_surface(self, surface: str, mode: int = MWT) -> list[int]:
        """``mode`` (``MWT``: split it; ``ONE``: a one-word token, copy it; ``ANY``: decide) + the characters'
        ids."""
        return [mode, *(self.stoi.get(c, UNK) for c in lower_chars(surface))]

    def encode_words(self, words: Sequence[str]) -> list[int]:
        out: list[int] = []
        for i, w in enumerate(words):
            if i:
                out.append(SEP)
            out.extend(self.stoi.get(c, UNK) for c in lower_chars(w))
        return out

    def decode(self, ids: Sequence[int]) -> list[str]:
        """Ids (no BOS / EOS) -> words; unknown ids become ``"\\x00"``."""
        words, cur = [], []
        for i in ids:
            if i == SEP:
                words.append("".join(cur))
                cur = []
            elif self.specials <= i < len(self.itos):
                cur.append(self.itos[i])
            else:
                cur.append(UNKNOWN_CHAR)
        words.append("".join(cur))
        return words


def build_expander_model(config: ExpanderConfig) -> G2GTransformer:
    """The encoder-decoder of ``config`` (``vocab_size`` must be set): a character transducer
    (:func:`g2gt.nn.char_transducer.build_char_transducer`), one character table for source, target and
    output."""
    if config.vocab_size <= NUM_SPECIALS:
        raise ValueError(f"ExpanderConfig.vocab_size must count the {NUM_SPECIALS} specials and at least one character, "
                         f"got {config.vocab_size}")
    return build_char_transducer(config, PAD, BOS, EOS)


class MWTExpander:
    """A trained expander: ``expand_many(surfaces)`` -> the words of each surface, split for sure (``None``:
    no usable split); ``decide_many(surfaces)`` -> the words where the model splits the token on its own
    (``<any>`` mode; ``None``: it stays one word). Results are cached per surface and mode (at most
    ``cache_size`` of them)."""

    def __init__(self, model: G2GTransformer, vocab: ExpanderVocab, config: ExpanderConfig,
                 batch_size: int = 256, cache_size: int = 50_000) -> None:
        self.model = model.eval()
        self.vocab = vocab
        self.config = config
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: dict[tuple[int, str], list[str] | None] = {}

    @property
    def can_decide(self) -> bool:
        return self.vocab.can_decide

    @torch.no_grad()
    def predict(self, surfaces: Sequence[str], mode: int = MWT) -> list[list[str]]:
        """The raw lowercased predictions (``"\\x00"`` = unknown character), no casing restored, no cache."""
        out: list[list[str]] = []
        device = next(self.model.parameters()).device
        was = self.model.training
        self.model.eval()
        try:
            for b in range(0, len(surfaces), self.batch_size):
                chunk = [self.vocab.encode_surface(s, mode) for s in surfaces[b:b + self.batch_size]]
                n = max(len(c) for c in chunk)
                src = torch.tensor([c + [PAD] * (n - len(c)) for c in chunk], dtype=torch.long, device=device)
                mask = src == PAD
                ids = self.model.generate(src, chain_labels(n, self.config.max_distance, device),
                                          mask if bool(mask.any()) else None, max_new_tokens=2 * n + 8)
                out.extend(self.vocab.decode(i) for i in ids)
        finally:
            self.model.train(was)
        return out

    def _run(self, surfaces: Sequence[str], mode: int) -> list[list[str] | None]:
        todo = sorted({s for s in surfaces if (mode, s) not in self._cache})
        if todo:
            if len(self._cache) + len(todo) > self.cache_size:
                self._cache.clear()
            for s, words in zip(todo, self.predict(todo, mode)):
                restored = restore_words(s, words)
                self._cache[mode, s] = restored if restored is not None and len(restored) > 1 else None
        return [self._cache.get((mode, s)) for s in surfaces]

    def expand_many(self, surfaces: Sequence[str]) -> list[list[str] | None]:
        """Words of each surface, a multiword token for sure (:func:`restore_words`); ``None`` where the
        model gives no split of two or more words."""
        return self._run(surfaces, MWT)

    def expand(self, surface: str) -> list[str] | None:
        return self.expand_many([surface])[0]

    def decide_many(self, surfaces: Sequence[str]) -> list[list[str] | None]:
        """Words of each surface where the model, asked to decide, splits it; ``None`` where it keeps it one
        word (always ``None`` for an expander trained without the decide mode)."""
        if not self.can_decide:
            return [None] * len(surfaces)
        return self._run(surfaces, ANY)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    # ------------------------------------------------------------------ checkpoint entry
    def to_dict(self, dtype: torch.dtype = torch.float16) -> dict:
        """What the segmenter checkpoint stores (key ``mwt_expander``): config, characters and weights
        (floating-point ones as ``dtype``); loadable with ``weights_only=True``."""
        state = {k: (v.detach().to("cpu", dtype) if v.is_floating_point() else v.detach().cpu()).contiguous()
                 for k, v in self.model.state_dict().items()}
        return {"kind": EXPANDER_KIND, "config": self.config.to_dict(), "chars": self.vocab.to_list(),
                "specials": self.vocab.specials, "state": state}

    @classmethod
    def from_dict(cls, d: dict, device: torch.device | str = "cpu") -> MWTExpander:
        """Inverse of :meth:`to_dict` (float32 weights, ``strict=True``)."""
        if not isinstance(d, dict) or d.get("kind") != EXPANDER_KIND:
            raise ValueError("not a multiword-token expander entry (expected the dict MWTExpander.to_dict writes)")
        config = ExpanderConfig.from_dict(d["config"])
        vocab = ExpanderVocab(d["chars"], d.get("specials", 7))
        if len(vocab) != config.vocab_size:
            raise ValueError(f"expander entry: {len(vocab)} characters and specials but a vocab_size of "
                             f"{config.vocab_size} (a damaged or mismatched mwt_expander entry)")
        model = build_expander_model(config)
        model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in d["state"].items()},
                              strict=True)
        return cls(model.to(device), vocab, config)

    def __repr__(self) -> str:
        return f"MWTExpander({self.num_parameters():,} parameters, {len(self.vocab) - self.vocab.specials} characters)"
