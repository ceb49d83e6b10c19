"""Raw text with per-character labels, rebuilt from CoNLL-U documents.

A CoNLL-U file holds the raw text of its documents: ``# newdoc`` / ``# newpar`` mark documents and
paragraphs, the FORMs of the surface tokens (multiword-token ranges, or words outside them) with
``SpaceAfter=No`` give each sentence's characters back exactly. :func:`documents_from_sentences` recovers
that structure and :func:`render_document` turns one document into text plus one label per character
(:data:`g2gt.ud.tokenize.config.LABEL_NAMES`), like Stanza's tokenizer data::

    text     I don't know. Me neither.
    labels   1000003000012001000000012     (0 inside / space, 1 token end, 2 sentence end, 3 MWT end)

Sentences of a paragraph are joined by a space, paragraphs by a newline; other *styles* (a blank line
between paragraphs, no newlines at all, one sentence per line, lines wrapped at 60-100 characters) make a
model robust to the ways users lay out text. A training epoch is one *stream*: every document rendered in a
random style, in a random order (:func:`render_stream`).

Treebank documents are long, so a model trained on them alone never sees a text that *is* one short
sentence -- what users type first ("Hi.", "Thanks!", "Hi. How are you?"): with no context after it, a
final period on a short capitalised word looks like an abbreviation ("Dr.", "St."). :func:`pick_utterance`
and :func:`render_utterance` make such texts from the training sentences (1-3 consecutive sentences of a
paragraph, short ones preferred, sentence-initial letters capitalised with some chance); the training task
reads each alone in its own window, the text's edges inside it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..io.surface import space_after
from ..io.surface import surface_tokens as _walk
from .config import SegmentDataConfig

__all__ = ["GoldToken", "Document", "Rendered", "surface_tokens", "documents_from_sentences", "render_document",
           "render_stream", "pick_utterance", "render_utterance", "capitalized", "STYLES"]

STYLES = ("para", "blank", "flat", "lines", "wrap")
_PARA_SEP = {"para": "\n", "blank": "\n\n", "flat": " ", "lines": "\n", "wrap": "\n\n"}


@dataclass(frozen=True)
class GoldToken:
    """One surface token: ``form`` as written, ``words`` its syntactic words (several for a multiword
    token), ``space_after`` whether whitespace follows it."""

    form: str
    words: tuple[str, ...]
    space_after: bool = True

    @property
    def is_mwt(self) -> bool:
        return len(self.words) > 1


@dataclass
class Document:
    """``paragraphs[p][s]`` = the tokens of sentence ``s`` of paragraph ``p``."""

    doc_id: str | None
    paragraphs: list[list[list[GoldToken]]] = field(default_factory=list)

    @property
    def sentences(self) -> list[list[GoldToken]]:
        return [s for p in self.paragraphs for s in p]


@dataclass
class Rendered:
    """A rendered text: ``labels [len(text)]`` uint8, gold ``tokens`` as ``(start, end, words)`` character
    spans and gold ``sentences`` as ``(start, end)`` spans (end exclusive)."""

    text: str
    labels: np.ndarray
    tokens: list[tuple[int, int, tuple[str, ...]]]
    sentences: list[tuple[int, int]]


def surface_tokens(sentence) -> list[GoldToken]:
    """The surface tokens of a :class:`g2gt.ud.io.Sentence` (:func:`g2gt.ud.io.surface.surface_tokens`):
    multiword-token ranges with their words, and the words outside ranges; empty nodes are skipped."""
    rows = sentence.rows
    out: list[GoldToken] = []
    for t in _walk(sentence):
        tok = rows[t.row]
        out.append(GoldToken(tok["form"], tuple(rows[k]["form"] for k in t.word_rows) or (tok["form"],),
                             space_after(tok)))
    return out


def documents_from_sentences(sentences: Iterable) -> list[Document]:
    """Group CoNLL-U sentences into documents (``# newdoc``) and paragraphs (``# newpar``). A file without
    ``# newdoc`` is one document; a document without ``# newpar`` is one paragraph."""
    docs: list[Document] = []
    for s in sentences:
        meta = s.metadata
        keys = list(meta)
        newdoc = next((k for k in keys if k == "newdoc" or k.startswith("newdoc ")), None)
        newpar = any(k == "newpar" or k.startswith("newpar ") for k in keys)
        if newdoc is not None or not docs:
            docs.append(Document(meta.get(newdoc) if newdoc else None))
            newpar = True
        doc = docs[-1]
        if newpar or not doc.paragraphs:
            doc.paragraphs.append([])
        toks = surface_tokens(s)
        if toks:
            doc.paragraphs[-1].append(toks)
    for d in docs:
        d.paragraphs = [p for p in d.paragraphs if p]
    return [d for d in docs if d.paragraphs]


class _Builder:
    """Accumulates text pieces, labels and gold spans."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.labels: list[np.ndarray] = []
        self.pos = 0
        self.tokens: list[tuple[int, int, tuple[str, ...]]] = []
        self.sentences: list[tuple[int, int]] = []

    def add(self, s: str, last_label: int = 0) -> None:
        if not s:
            return
        lab = np.zeros(len(s), dtype=np.uint8)
        lab[-1] = last_label
        self.parts.append(s)
        self.labels.append(lab)
        self.pos += len(s)

    def sentence(self, tokens: Sequence[GoldToken]) -> None:
        start = self.pos
        for i, t in enumerate(tokens):
            last = i == len(tokens) - 1
            t0 = self.pos
            self.add(t.form, (4 if last else 3) if t.is_mwt else (2 if last else 1))
            self.tokens.append((t0, self.pos, t.words))
            if not last and t.space_after:
                self.add(" ")
        self.sentences.append((start, self.pos))

    def result(self) -> Rendered:
        text = "".join(self.parts)
        labels = np.concatenate(self.labels) if self.labels else np.zeros(0, dtype=np.uint8)
        return Rendered(text, labels, self.tokens, self.sentences)


def _wrap(text: str, width: int, inside: frozenset[int] = frozenset()) -> str:
    """Replace spaces by newlines so that lines are at most ``width`` characters where possible; the spaces
    at positions ``inside`` (inside a token, e.g. Vietnamese ``chủ tịch``) are kept."""
    chars = list(text)
    line_start, last_space = 0, -1
    for i, c in enumerate(chars):
        if c == " " and i not in inside:
            if i - line_start > width and last_space > line_start:
                chars[last_space] = "\n"
                line_start = last_space + 1
            last_space = i
    if len(chars) - line_start > width and last_space > line_start:
        chars[last_space] = "\n"
    return "".join(chars)


def render_document(doc: Document, style: str = "para", rng: random.Random | None = None,
                    double_space: float = 0.0) -> Rendered:
    """One document as raw text with per-character labels (see the module docstring for the styles)."""
    if style not in STYLES:
        raise ValueError(f"unknown rendering style {style!r}; expected one of {STYLES}")
    rng = rng or random.Random(0)
    b = _Builder()
    width = rng.randint(60, 100)
    for p, para in enumerate(doc.paragraphs):
        if p:
            b.add(_PARA_SEP[style])
        if style == "wrap":
            sub = _Builder()
            for s, sent in enumerate(para):
                if s:
                    sub.add(" ")
                sub.sentence(sent)
            r = sub.result()
            inside = frozenset(i for s0, e0, _ in r.tokens for i in range(s0, e0) if r.text[i] == " ")
            wrapped = _wrap(r.text, width, inside)
            off = b.pos
            b.parts.append(wrapped)
            b.labels.append(r.labels)
            b.pos += len(wrapped)
            b.tokens.extend((s0 + off, e0 + off, w) for s0, e0, w in r.tokens)
            b.sentences.extend((s0 + off, e0 + off) for s0, e0 in r.sentences)
            continue
        for s, sent in enumerate(para):
            if s:
                b.add("\n" if style == "lines" else ("  " if rng.random() < double_space else " "))
            b.sentence(sent)
    return b.result()


def render_stream(docs: Sequence[Document], rng: random.Random, config: SegmentDataConfig) -> tuple[str, np.ndarray]:
    """All documents, shuffled, each rendered in a random style and joined by its paragraph separator:
    ``(text, labels)`` for one training epoch."""
    weights = config.style_weights()
    styles, w = list(weights), list(weights.values())
    order = list(range(len(docs)))
    rng.shuffle(order)
    parts: list[str] = []
    labels: list[np.ndarray] = []
    for k, i in enumerate(order):
        style = rng.choices(styles, w)[0]
        r = render_document(docs[i], style, rng, config.double_space)
        if k:
            sep = _PARA_SEP[style]
            parts.append(sep)
            labels.append(np.zeros(len(sep), dtype=np.uint8))
        parts.append(r.text)
        labels.append(r.labels)
    if not parts:
        return "", np.zeros(0, dtype=np.uint8)
    return "".join(parts), np.concatenate(labels)


def pick_utterance(docs: Sequence[Document], rng: random.Random) -> list[list[GoldToken]]:
    """1-3 consecutive sentences of one paragraph (chances 0.6 / 0.25 / 0.15), starting at the shorter (in
    tokens) of two sentences drawn at random, so that short utterances are over-represented."""

    def draw() -> tuple[list[list[GoldToken]], int]:
        doc = docs[rng.randrange(len(docs))]
        para = doc.paragraphs[rng.randrange(len(doc.paragraphs))]
        return para, rng.randrange(len(para))

    para, i = min(draw(), draw(), key=lambda pi: len(pi[0][pi[1]]))
    k = rng.choices((1, 2, 3), (0.6, 0.25, 0.15))[0]
    return para[i:i + k]


def capitalized(sentence: Sequence[GoldToken]) -> list[GoldToken]:
    """The sentence with its first letter upper-cased when it is a lowercase letter whose capital is one
    character (labels keep their positions); the first word of a multiword token follows it."""
    if not sentence:
        return list(sentence)
    first = sentence[0]
    c = first.form[:1]
    up = c.upper()
    if not c.islower() or len(up) != 1:
        return list(sentence)
    words = first.words
    if words and words[0][:1] == c:
        words = (up + words[0][1:], *words[1:])
    return [GoldToken(up + first.form[1:], words, first.space_after), *sentence[1:]]


def render_utterance(sentences: Sequence[Sequence[GoldToken]], rng: random.Random,
                     capitalize: float = 0.5) -> Rendered:
    """A short text made of ``sentences`` alone: joined by a space (a line break with chance 0.2), each
    first letter capitalised with chance ``capitalize`` (:func:`capitalized`)."""
    b = _Builder()
    for k, sent in enumerate(sentences):
        if k:
            b.add("\n" if rng.random() < 0.2 else " ")
        b.sentence(capitalized(sent) if rng.random() < capitalize else sent)
    return b.result()
