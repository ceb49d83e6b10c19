"""The character-level lemmatizer: (form, UPOS, features) -> lemma, a small encoder-decoder on the library's core.

The parser lemmatises with edit scripts chosen by a classifier over its contextual word vectors
(:mod:`g2gt.ud.parse.lemma_rules`). For words the training data never showed, in an agglutinative language such
as Turkish, that classifier often strips one suffix too many or too few (``bardağın -> bardağ`` for
``bardak``). This model writes the lemma character by character instead, from the form's characters and the
tags the parser predicted. It is a :class:`g2gt.nn.G2GTransformer`: the source is a chain graph (edge label =
clipped relative distance, plus sinusoidal positions so that cross-attention can find the character to copy
next) and the decoder writes the lemma greedily over the KV cache (:meth:`g2gt.nn.G2GTransformer.generate`)::

    source  b a r d a ğ ı n <sep> <NOUN> <Case=Gen> <Number=Sing> <Person=3>    [m + 1 + 1 + f]
    target  b a r d a k <eos>                                                  [l + 1]

The form's characters come first, so that the i-th lemma character usually sits near the i-th source position.
The characters keep their case (a proper noun keeps its capital, a sentence-initial noun loses it: the UPOS
symbol tells which). An output with a character the model does not know is rejected (``None``: the caller keeps
its own lemma).

* :class:`LemmaVocab`: symbols <-> ids (0 pad, 1 BOS, 2 EOS, 3 unknown, 4 separator, then the tag symbols
  ``<UPOS>`` and ``<Feat=Value>``, then the characters);
* :func:`build_lemma_model`: the :class:`G2GTransformer` of a :class:`LemmaConfig`;
* :class:`CharLemmatizer`: batched, cached inference; :meth:`CharLemmatizer.save` / :meth:`CharLemmatizer.load`
  for the stage file ``lemmatizer.pt`` that sits beside ``parser.pt`` in a model folder.

Training is in :mod:`g2gt.ud.lemma.train`; the parser calls the model where :func:`needs_fallback` says so
(:mod:`g2gt.ud.parse.decode`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from ...core.graph import chain_labels
from ...nn.char_transducer import build_char_transducer
from ...nn.transformer import G2GTransformer
from .config import USE_WHEN, LemmaConfig, needs_fallback

__all__ = ["LEMMATIZER_KIND", "LEMMATIZER_FILE", "USE_WHEN", "LemmaConfig", "LemmaVocab", "CharLemmatizer",
           "build_lemma_model", "needs_fallback", "feats_symbols"]

LEMMATIZER_KIND = "lemmatizer"
LEMMATIZER_FILE = "lemmatizer.pt"
PAD, BOS, EOS, UNK, SEP = 0, 1, 2, 3, 4
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>", "<sep>")
def feats_symbols(upos: str | None, feats: str | dict | None) -> list[str]:
    """The tag symbols of a word: ``<UPOS>`` then one ``<Feat=Value>`` per feature, sorted
    (``feats``: a FEATS string ``"Case=Gen|Number=Sing"``, ``"_"``, a dict or None)."""
    out = [f"<{upos}>"] if upos else []
    if isinstance(feats, dict):
        items = [f"{k}={v}" for k, v in feats.items()]
    elif feats and feats != "_":
        items = feats.split("|")
    else:
        items = []
    return out + [f"<{kv}>" for kv in sorted(items)]


class LemmaVocab:
    """Symbols <-> ids: the specials, then tag symbols (:func:`feats_symbols`), then single characters.

    >>> v = LemmaVocab(["<NOUN>"], ["a", "b"])
    >>> v.encode_source("ab", "NOUN", "_"), v.encode_target("ba"), v.decode([7, 6])
    ([6, 7, 4, 5], [7, 6], 'ba')
    """

    def __init__(self, tags: Iterable[str], chars: Iterable[str]) -> None:
        self.itos: list[str] = list(SPECIALS)
        self.tags = list(dict.fromkeys(tags))
        self.chars = list(dict.fromkeys(chars))
        for c in self.chars:
            if len(c) != 1:
                raise ValueError(f"a lemmatizer vocabulary holds single characters, got {c!r}")
        self.itos += self.tags + self.chars
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.first_char = len(SPECIALS) + len(self.tags)

    @classmethod
    def build(cls, examples: Iterable[tuple[str, str | None, str | dict | None, str]]) -> LemmaVocab:
        """Every tag symbol and every character of the forms and lemmas of ``(form, upos, feats, lemma)``
        examples, sorted."""
        tags: set[str] = set()
        chars: set[str] = set()
        for form, upos, feats, lemma in examples:
            tags.update(feats_symbols(upos, feats))
            chars.update(form)
            chars.update(lemma)
        return cls(sorted(tags), sorted(chars))

    def __len__(self) -> int:
        return len(self.itos)

    def encode_chars(self, text: str) -> list[int]:
        return [self.stoi.get(c, UNK) if len(c) == 1 else UNK for c in text]

    def encode_source(self, form: str, upos: str | None, feats: str | dict | None,
                      keep_tag=None) -> list[int]:
        """Characters of ``form``, the separator, then the known tag symbols (``keep_tag(symbol) -> bool``
        may drop some: training's tag dropout)."""
        tags = [self.stoi[t] for t in feats_symbols(upos, feats) if t in self.stoi and (keep_tag is None or keep_tag(t))]
        return [*self.encode_chars(form), SEP, *tags]

    def encode_target(self, lemma: str) -> list[int]:
        return self.encode_chars(lemma)

    def decode(self, ids: Sequence[int]) -> str | None:
        """Ids (no BOS / EOS) -> the lemma; None when one is not a character."""
        out = []
        for i in ids:
            if not self.first_char <= i < len(self.itos):
                return None
            out.append(self.itos[i])
        return "".join(out)


def build_lemma_model(config: LemmaConfig) -> G2GTransformer:
    """The encoder-decoder of ``config`` (``vocab_size`` must be set): a character transducer
    (:func:`g2gt.nn.char_transducer.build_char_transducer`), one symbol table for source, target and output."""
    if config.vocab_size <= len(SPECIALS):
        raise ValueError(f"LemmaConfig.vocab_size must count the {len(SPECIALS)} specials and at least one "
                         f"character, got {config.vocab_size}")
    return build_char_transducer(config, PAD, BOS, EOS)


Word = tuple[str, "str | None", "str | dict | None"]


class CharLemmatizer:
    """A trained character lemmatizer: ``lemmatize([(form, upos, feats), ...])`` -> a lemma per word (None
    where the output has a symbol that is not a character). Results are cached per word (at most
    ``cache_size``). ``use_when``: the condition under which the parser asks it (:func:`needs_fallback`)."""

    kind = LEMMATIZER_KIND

    def __init__(self, model: G2GTransformer, vocab: LemmaVocab, config: LemmaConfig, batch_size: int = 256,
                 cache_size: int = 50_000, record: dict | None = None, forms: Iterable[str] = ()) -> None:
        self.model = model.eval()
        self.vocab = vocab
        self.config = config
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.record = dict(record or {})  # the training record (steps, minutes, dev accuracy) for cards
        self.forms = frozenset(forms)  # the forms of the training data (use_when="unseen")
        self._cache: dict[tuple, str | None] = {}

    @property
    def use_when(self) -> str:
        return self.config.use_when

    def knows(self, form: str) -> bool:
        """Whether the training data had ``form``."""
        return form in self.forms

    @torch.no_grad()
    def predict(self, words: Sequence[Word]) -> list[str | None]:
        """The model's lemma of each ``(form, upos, feats)``, no cache (``feats``: FEATS string, dict or None)."""
        out: list[str | None] = []
        device = next(self.model.parameters()).device
        was = self.model.training
        self.model.eval()
        try:
            order = sorted(range(len(words)), key=lambda i: len(words[i][0]))  # similar lengths share a batch
            res: dict[int, str | None] = {}
            for b in range(0, len(order), self.batch_size):
                idx = order[b:b + self.batch_size]
                rows = [self.vocab.encode_source(*words[i]) for i in idx]
                n = max(len(r) for r in rows)
                src = torch.tensor([r + [PAD] * (n - len(r)) for r in rows], dtype=torch.long, device=device)
                mask = src == PAD
                longest = max(len(words[i][0]) for i in idx)
                ids = self.model.generate(src, chain_labels(n, self.config.max_distance, device),
                                          mask if bool(mask.any()) else None, max_new_tokens=longest + 8)
                for i, seq in zip(idx, ids):
                    lemma = self.vocab.decode(seq)
                    res[i] = lemma if lemma else None
            out = [res[i] for i in range(len(words))]
        finally:
            self.model.train(was)
        return out

    def lemmatize(self, words: Sequence[Word]) -> list[str | None]:
        """:meth:`predict` with a cache keyed by ``(form, upos, feats)``."""
        keys = [(f, u, _feats_key(x)) for f, u, x in words]
        todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if todo:
            if len(self._cache) + len(todo) > self.cache_size:
                self._cache.clear()
            for k, lemma in zip(todo, self.predict(todo)):
                self._cache[k] = lemma
        return [self._cache.get(k) for k in keys]

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    # ------------------------------------------------------------------ stage file
    def to_dict(self, dtype: torch.dtype = torch.float16) -> dict:
        """The stage file's content: config, symbols and weights (floating ones as ``dtype``); loadable with
        ``weights_only=True``."""
        state = {k: (v.detach().to("cpu", dtype) if v.is_floating_point() else v.detach().cpu()).contiguous()
                 for k, v in self.model.state_dict().items()}
        return {"model_config": self.config.to_dict(), "model": state,
                "task": {"kind": LEMMATIZER_KIND, "tags": list(self.vocab.tags), "chars": list(self.vocab.chars),
                         "forms": sorted(self.forms)},
                "record": dict(self.record)}

    @classmethod
    def from_dict(cls, d: dict, device: torch.device | str = "cpu", source: str = "<dict>") -> CharLemmatizer:
        """Inverse of :meth:`to_dict` (float32 weights, ``strict=True``); also reads a training checkpoint
        (``best.pt`` / ``last.pt`` of :func:`g2gt.ud.lemma.train.train_lemmatizer`)."""
        task = d.get("task") if isinstance(d, dict) else None
        if not isinstance(task, dict) or task.get("kind") != LEMMATIZER_KIND:
            raise ValueError(f"{source}: not a lemmatizer (expected the file CharLemmatizer.save or "
                             "'g2gt train lemmatizer' writes)")
        config = LemmaConfig.from_dict(d["model_config"])
        vocab = LemmaVocab(task["tags"], task["chars"])
        if len(vocab) != config.vocab_size:
            raise ValueError(f"{source}: {len(vocab)} symbols but a vocab_size of {config.vocab_size} "
                             "(a damaged or mismatched lemmatizer file)")
        model = build_lemma_model(config)
        model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in d["model"].items()},
                              strict=True)
        return cls(model.to(device), vocab, config, record=d.get("record") or _training_record(d),
                   forms=task.get("forms", ()))

    def save(self, path: str | os.PathLike, storage_dtype: torch.dtype = torch.float16) -> Path:
        """Write the stage file (``lemmatizer.pt`` in a model folder), atomically."""
        from ...core.checkpoint import save_atomic

        path = Path(path)
        save_atomic(self.to_dict(storage_dtype), path)
        return path

    @classmethod
    def load(cls, name_or_path: str | os.PathLike, device: torch.device | str = "auto",
             dtype: torch.dtype | str | None = "auto") -> CharLemmatizer:
        """A lemmatizer from a model folder (its ``lemmatizer.pt``), a training folder (``best.pt``, else
        ``last.pt``) or a file, read with ``weights_only=True``; ``device`` and ``dtype`` as every loader
        (:func:`g2gt.core.runtime.resolve_dtype`; ``"auto"`` never picks int8)."""
        from ...core.checkpoint import load_checkpoint, resolve_checkpoint
        from ...core.runtime import resolve_device, resolve_dtype
        from ..stage import prepare_for_inference

        device = resolve_device(device)
        dt = resolve_dtype(dtype, device)
        p = Path(name_or_path)
        file = p / LEMMATIZER_FILE if (p / LEMMATIZER_FILE).is_file() else resolve_checkpoint(p)
        out = cls.from_dict(load_checkpoint(file, device), device, str(file))
        out.model = prepare_for_inference(out.model, dt, device)
        return out

    def __repr__(self) -> str:
        return (f"CharLemmatizer({self.num_parameters():,} parameters, {len(self.vocab.chars)} characters, "
                f"{len(self.vocab.tags)} tags, use_when={self.use_when!r})")


def _feats_key(feats) -> str | None:
    if isinstance(feats, dict):
        return "|".join(f"{k}={v}" for k, v in sorted(feats.items())) or "_"
    return feats


def _training_record(ck: dict) -> dict:
    """Steps and best dev accuracy of a training checkpoint, for the model card."""
    rec = {}
    for key in ("step", "best"):
        if key in ck and isinstance(ck[key], (int, float)):
            rec[key] = ck[key]
    return rec
