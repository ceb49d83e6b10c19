"""Input guards every entry point shares (Python API, ``g2gt parse``, worker processes, Ray, ``g2gt serve``).

**Sentence length.** Attention costs memory quadratic in a sentence's length: ``[B, H, n, n]`` scores per
layer, so one 50,000-word line would ask for tens of GB. :func:`limit_sentence_words` cuts every sentence
longer than ``max_words`` words into consecutive pieces of at most ``max_words`` words, between surface tokens
(a multiword token is never cut), with ``sent_id`` ``ID.1, ID.2 ...``, and says so in one warning line per
sentence naming it (file and line where known) and its length. Pieces keep FORM, LEMMA, UPOS, XPOS, FEATS and
MISC; HEAD, DEPREL and DEPS are left to the parser (a tree cannot cross the cut), empty nodes are dropped.
``on_long="error"`` refuses such a sentence instead with :class:`SentenceTooLong` (a ``ValueError``).

The limit: :data:`DEFAULT_MAX_WORDS` = 1000 words (UD treebanks' longest sentences have a few hundred),
``$G2GT_MAX_SENTENCE_WORDS`` overrides it (0 = no limit), read at each call (:func:`max_sentence_words`). With
it the parser's memory stays bounded for any input: a 1000-word sentence needs well under 1 GB.

**Control characters.** :func:`drop_control_characters` removes the C0 / C1 control characters (NUL,
U+0001-U+001F, U+007F-U+009F) from raw text, keeping tab, newline and carriage return and turning the ones
that separate text (vertical tab, form feed, U+001C-U+001F, U+0085) into a space; a one-line warning counts
them. The UD validator rejects them in FORM and LEMMA, so they never reach a token.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Iterable, Iterator, Sequence

from ..errors import Error
from .io.build import sentence_from_tokens
from .io.sentence import Sentence
from .io.surface import space_after, surface_tokens

__all__ = ["DEFAULT_MAX_WORDS", "SentenceTooLong", "max_sentence_words", "limit_sentence_words",
           "iter_limit_sentence_words", "CHUNK_SENTENCES", "CHUNK_WORDS", "iter_chunks", "long_sentences", "over_limit",
           "split_sentence", "drop_control_characters"]

DEFAULT_MAX_WORDS = 1000
ENV = "G2GT_MAX_SENTENCE_WORDS"
KEPT_COLUMNS = ("lemma", "upos", "xpos", "feats", "misc")

# C0 and C1 controls other than \t \n \r; the whitespace ones among them become a space
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SEPARATORS = "\x0b\x0c\x1c\x1d\x1e\x1f\x85"


class SentenceTooLong(Error):
    """A sentence over the word limit, refused (``on_long="error"``)."""


def max_sentence_words() -> int:
    """The word limit: ``$G2GT_MAX_SENTENCE_WORDS`` (0 = none), else :data:`DEFAULT_MAX_WORDS`."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_WORDS
    if not raw.isdigit():
        raise ValueError(f"{ENV} must be a whole number of words >= 0 (0 = no limit), got {raw!r}")
    return int(raw)


def _name(s: Sentence, k: int, where: str) -> str:
    """``FILE:LINE`` of a sentence read from a file, else its sent_id (for --lines: its line number)."""
    if s.line and s.path and not s.path.startswith("<"):
        return f"{s.path}:{s.line}: sentence {s.sent_id or k}"
    return f"sentence {s.sent_id or k}" + (f" (line {s.line})" if s.line else "") + where


def _surface(s: Sentence) -> list[tuple[dict, list[int]]]:
    """Surface tokens in order with their 0-based word indices (a multiword token spans several)."""
    rows = s.rows
    return [(rows[t.row], t.words) for t in surface_tokens(s)]


def split_sentence(s: Sentence, max_words: int, sent_id: str) -> list[Sentence]:
    """``s`` as consecutive pieces of at most ``max_words`` words (cut between surface tokens), ids
    ``sent_id.1, sent_id.2 ...`` (see the module docstring for the columns kept)."""
    toks = _surface(s)
    if any(len(ws) > max_words for _, ws in toks):
        raise SentenceTooLong(f"a multiword token of sentence {sent_id} has more than {max_words} words")
    words = s.word_rows
    groups: list[list[tuple[dict, list[int]]]] = [[]]
    n = 0
    for tok, ws in toks:
        if n + len(ws) > max_words:
            groups.append([])
            n = 0
        groups[-1].append((tok, ws))
        n += len(ws)
    out = []
    for part, group in enumerate(groups, 1):
        items = []
        for tok, ws in group:
            items.append((tok["form"], [words[i]["form"] for i in ws], space_after(tok)))
        piece = sentence_from_tokens(items, sent_id=f"{sent_id}.{part}")
        new_words = piece.word_rows
        k = 0
        for (tok, ws), (new_tok, _) in zip(group, _surface(piece)):
            if len(ws) > 1:
                new_tok["misc"] = tok["misc"]
            for i in ws:
                for col in KEPT_COLUMNS:
                    new_words[k][col] = words[i][col]
                k += 1
        out.append(piece)
    return out


def limit_sentence_words(sentences: Iterable[Sentence], max_words: int | None = None, on_long: str = "split",
                         where: str = "", how: str = "", warn: bool = True, why: str = "") -> list[Sentence]:
    """``sentences`` with none over ``max_words`` words (default :func:`max_sentence_words`; <= 0: no limit):
    a longer one is split into pieces (one warning line each unless ``warn=False``) or, with
    ``on_long="error"``, refused with :class:`SentenceTooLong` naming it and its length. ``where`` is appended
    to the names in messages, ``how`` names the setting of the limit (default ``$G2GT_MAX_SENTENCE_WORDS``),
    ``why`` replaces the advice of a refusal (default: split it into shorter sentences)."""
    limit = max_sentence_words() if max_words is None else max_words
    sentences = sentences if isinstance(sentences, list) else list(sentences)
    if on_long in ("split", "error") and (limit <= 0 or all(len(s) <= limit for s in sentences)):
        return sentences
    return list(iter_limit_sentence_words(sentences, limit, on_long, where, how, warn, why))


def iter_limit_sentence_words(sentences: Iterable[Sentence], max_words: int | None = None, on_long: str = "split",
                              where: str = "", how: str = "", warn: bool = True, why: str = "") -> Iterator[Sentence]:
    """:func:`limit_sentence_words` one sentence at a time (for streams: memory does not grow with the
    input); the limit is read once, when the first sentence is asked for."""
    if on_long not in ("split", "error"):
        raise ValueError(f"on_long must be 'split' or 'error', got {on_long!r}")
    limit = max_sentence_words() if max_words is None else max_words
    for k, s in enumerate(sentences, 1):
        if limit <= 0 or len(s) <= limit:
            yield s
            continue
        name = _name(s, k, where)
        if on_long == "error":
            raise SentenceTooLong(f"{name} has {len(s):,} words, over the limit of {limit:,} words per sentence "
                                  f"({how or ENV}); {why or 'split it into shorter sentences'}")
        pieces = split_sentence(s, limit, s.sent_id or str(k))
        if warn:
            warnings.warn(f"g2gt: {name} has {len(s):,} words, over the limit of {limit:,} words per sentence "
                          f"({how or ENV}); parsed as {len(pieces)} sentences of at most {limit:,} words "
                          f"({pieces[0].sent_id} ... {pieces[-1].sent_id})", RuntimeWarning, stacklevel=2)
        yield from pieces


#: words parsed at a time by a stream of sentences at most (``Pipeline.stream``, ``g2gt parse``, its workers,
#: ``g2gt enhance``, ``g2gt coref``), besides at most :data:`CHUNK_SENTENCES` sentences: a chunk's memory follows its
#: words, so a bound on words keeps the peak of a long corpus at the peak of its first chunk
CHUNK_WORDS = 20_000
#: sentences parsed at a time by a stream of sentences at most (with :data:`CHUNK_WORDS`)
CHUNK_SENTENCES = 2000


def iter_chunks(items: Iterable, max_items: int | None, max_words: int | None = None) -> Iterator[list]:
    """Consecutive lists of ``items``, each of at most ``max_items`` items (``None``: no bound) and ending once
    it holds ``max_words`` words (``len(item)``; ``None``: no bound); every list has at least one item."""
    part: list = []
    words = 0
    for x in items:
        part.append(x)
        words += len(x)
        if (max_items is not None and len(part) >= max_items) or (max_words is not None and words >= max_words):
            yield part
            part, words = [], 0
    if part:
        yield part


def long_sentences(use_input_graph: bool) -> dict:
    """How a pipeline treats a sentence over the word limit (:func:`limit_sentence_words`'s options): cut into
    pieces, except when its input tree is refined (``use_input_graph``, ``--refine``), which no cut keeps: then
    it is refused, saying why."""
    if not use_input_graph:
        return {}
    return {"on_long": "error", "why": "--refine (use_input_graph) cannot refine it: its input tree cannot be cut "
                                       "into pieces; raise the limit to refine it whole, or parse it without "
                                       "--refine (then it is parsed in pieces)"}


def over_limit(sentences: Sequence[Sentence], what: str, instead: str, max_words: int | None = None) -> set[int]:
    """The positions of ``sentences`` over the word limit (default :func:`max_sentence_words`), for a stage
    that works on a parsed sentence whole (enhance, coref) and cannot cut its tree: one warning line per such
    sentence, naming it and saying that ``what`` is not predicted for it and what it gets ``instead``."""
    limit = max_sentence_words() if max_words is None else max_words
    if limit <= 0:
        return set()
    out = set()
    for k, s in enumerate(sentences):
        if len(s) > limit:
            out.add(k)
            warnings.warn(f"g2gt: {_name(s, k + 1, '')} has {len(s):,} words, over the limit of {limit:,} words "
                          f"per sentence ({ENV}); {what} is not predicted for it (memory grows with the square of "
                          f"a sentence's length): {instead}", RuntimeWarning, stacklevel=2)
    return out


def drop_control_characters(text: str, name: str = "the input text") -> str:
    """``text`` without control characters (see the module docstring), with one warning line counting
    them; the same string when it has none."""
    if _CONTROL.search(text) is None:
        return text
    found: dict[str, int] = {}

    def fix(m: re.Match) -> str:
        c = m.group()
        found[c] = found.get(c, 0) + 1
        return " " if c in _SEPARATORS else ""

    text = _CONTROL.sub(fix, text)
    kinds = ", ".join(f"U+{ord(c):04X} x{n}" for c, n in sorted(found.items())[:5]) + (
        ", ..." if len(found) > 5 else "")
    warnings.warn(f"g2gt: {name}: removed {sum(found.values()):,} control character(s) ({kinds}); UD does not "
                  "allow them in FORM or LEMMA", RuntimeWarning, stacklevel=2)
    return text


_TOKEN_BREAKS = re.compile("[\t\n\r\u2028\u2029]")


def clean_words(words: list[str], name: str = "a tokenized sentence") -> list[str]:
    """The words of a pre-tokenized sentence through the control-character filter of raw text
    (:func:`drop_control_characters`), with tabs and line or paragraph breaks inside a word made spaces (a
    CoNLL-U FORM is one line with no tab), so that every FORM reads back the same.

    Raises ``ValueError`` naming the word when one is empty or only whitespace (or becomes so)."""
    out = []
    for k, word in enumerate(words, start=1):
        clean = _TOKEN_BREAKS.sub(" ", drop_control_characters(word, name)) if word else word
        if not clean or not clean.strip():
            raise ValueError(f"{name}: word {k} ({word!r}) is empty or only whitespace; give each word as a "
                             "non-empty string")
        out.append(clean)
    return out
