"""The rule-based English tokenizer and sentence splitter (UD English EWT conventions).

Sentences end at ``. ! ?`` followed by whitespace and a capital letter, digit or opening
quote, except after abbreviations (``Mr.``, ``e.g.``, ``U.S.``, initials ``J.``; words that
are also ordinary words, such as ``no.`` or ``sat.``, count as abbreviations only before a
digit: ``No. 5``); a blank line always ends a sentence.  Tokens follow EWT: punctuation split
off, hyphens and slashes inside words split (``15-year`` -> ``15 - year``), ``$`` / ``%``
split from numbers, URLs / e-mails / numbers kept whole, and English contractions split into
syntactic words that stay one surface token (a CoNLL-U multiword token): ``don't`` ->
``do n't``, ``can't`` -> ``ca n't``, ``I'm`` -> ``I 'm``, ``Bush's`` -> ``Bush 's``,
``cannot`` -> ``can not``, ``gonna`` -> ``gon na``.

Any Unicode is accepted and the work is linear in the length of the text.  Invisible
characters (format and control characters: ZWSP, ZWJ, LRM, U+FEFF, U+0000 ...) never form a
token on their own: at the edge of a chunk they are left out of the tokens, inside a word they
stay in it (``👨‍👩‍👧`` is one token); a zero-width space separates tokens as a space does.
Combining marks stay with the character before them.  ``space_after`` records whether
whitespace follows a token, so the text is rebuilt up to runs of whitespace (and the
invisible characters left out).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Sequence

__all__ = ["TextToken", "ABBREVIATIONS", "split_sentences", "sentence_spans", "tokenize_sentence", "tokenize",
           "detokenize"]


@dataclass
class TextToken:
    """One surface token: ``text`` as written, ``words`` its syntactic words (more than
    one for a contraction), ``space_after`` whether whitespace follows it, and its
    character offsets ``start:end`` in the input text."""

    text: str
    words: list[str] = field(default_factory=list)
    space_after: bool = True
    start: int = 0
    end: int = 0

    def __post_init__(self) -> None:
        if not self.words:
            self.words = [self.text]


ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "vs", "etc", "inc", "ltd", "co", "corp",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "mon", "tue", "wed", "thu", "fri", "sat", "sun", "no", "nos", "vol", "p", "pp", "fig", "approx",
    "dept", "est", "gen", "gov", "sen", "rep", "rev", "capt", "col", "lt", "sgt", "ave", "blvd", "rd",
    "e.g", "i.e", "a.m", "p.m", "u.s", "u.k", "u.n", "d.c", "al", "cf", "ca", "min", "max", "misc",
}
# abbreviations that may end a sentence and are then followed by a new capitalised sentence
_SENTENCE_FINAL_OK = {"etc", "inc", "ltd", "co", "corp"}
# abbreviations that are also ordinary words ("He sat. Then ..."): abbreviations only before a digit
_AMBIGUOUS = {"no", "nos", "sat", "sun", "mon", "wed", "fri", "mar", "jan", "fig", "min", "max", "est", "gen",
              "rev", "col", "al", "ca", "p", "pp", "vol", "rep", "sen", "ave", "misc"}

_OPEN = "\"'“‘`([{<«"
_CLOSE = "\"'”’)]}>»"
_LEAD = _OPEN + "¿¡"
_TRAIL = ",;:!?…" + _CLOSE
_URL_RE = re.compile(r"(?:https?://|ftp://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:[.,:/]\d+)*|\.\d+)(?:st|nd|rd|th|s)?\Z", re.IGNORECASE)
_DOTTED_RE = re.compile(r"(?:[A-Za-z]\.){2,}\Z")  # U.S. e.g. a.m.
_INITIAL_RE = re.compile(r"[A-Z]\.\Z")
_NT_RE = re.compile(r"(?i)(.+?)(n['’]t)\Z")
_CLITIC_RE = re.compile(r"(?i)(.+?)(['’](?:s|re|ve|ll|d|m))\Z")
_CLITIC_START_RE = re.compile(r"['’](?:s|re|ve|ll|d|m|t|em|cause|til|n)\b", re.IGNORECASE)
_SPECIAL = {"cannot": ("can", "not"), "gonna": ("gon", "na"), "wanna": ("wan", "na"), "gotta": ("got", "ta"),
            "gimme": ("gim", "me"), "lemme": ("lem", "me")}
_PIECE_RE = re.compile(r"\w+(?:['’]\w+)*|\.{2,}|([^\w\s])\1*")
_SENT_END_RE = re.compile(r"(?<![.!?…])[.!?…]+[\"'”’)\]]*(?=\s)")  # the lookbehind keeps long runs linear
_WS_RUN_RE = re.compile(r"\s+")
_NON_WS_RE = re.compile(r"\S")
_CHUNK_RE = re.compile(r"[^\s\u200b]+")  # a zero-width space separates like a space
_MAX_ABBREV = 32  # longer words are never abbreviations (keeps the checks O(1))
_ZWJ = "\u200d"


def _invisible(ch: str) -> bool:
    """A format or control character that is not whitespace (ZWSP, ZWJ, LRM, U+FEFF, U+0000 ...)."""
    return unicodedata.category(ch) in ("Cf", "Cc") and not ch.isspace()


def _joins_previous(prev: str, item: str) -> bool:
    """Whether piece ``item`` belongs to the piece before it: combining marks, invisible
    characters, emoji modifiers, the second half of a flag, the part after a joiner, and a
    letter after a mark (Indic vowel signs and viramas)."""
    c, p = item[0], prev[-1]
    cat = unicodedata.category(c)
    if cat[0] == "M" or _invisible(c) or p == _ZWJ or "\U0001f3fb" <= c <= "\U0001f3ff":
        return True
    if "\U0001f1e6" <= c <= "\U0001f1ff" and "\U0001f1e6" <= p <= "\U0001f1ff":
        return True
    return unicodedata.category(p)[0] == "M" and c.isalnum() and prev[0].isalnum()


def _is_abbreviation(word: str) -> bool:
    """``word`` ends with ``.`` and that dot belongs to it (``Mr.``, ``U.S.``, ``J.``)."""
    if not word.endswith(".") or len(word) > _MAX_ABBREV:
        return False
    core = word.rstrip(".").lstrip(_OPEN)
    if not core:
        return False
    return core.lower() in ABBREVIATIONS or bool(_DOTTED_RE.match(core + ".")) or bool(_INITIAL_RE.match(core + "."))


def _abbreviation_key(word: str) -> str:
    return word.rstrip(".").lstrip(_OPEN).lower()


def _paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each paragraph (text between runs of whitespace holding two newlines),
    without its outer whitespace."""
    bounds, start = [], 0
    for m in _WS_RUN_RE.finditer(text):
        if text.count("\n", m.start(), m.end()) >= 2:
            bounds.append((start, m.start()))
            start = m.end()
    bounds.append((start, len(text)))
    out = []
    for a, b in bounds:
        m = _NON_WS_RE.search(text, a, b)
        if m is None:
            continue
        while text[b - 1].isspace():
            b -= 1
        out.append((m.start(), b))
    return out


def _word_before(text: str, end: int, lo: int) -> str:
    """The whitespace-delimited word ending at ``end`` ("" when longer than any abbreviation)."""
    k = end
    while k > lo and not text[k - 1].isspace():
        k -= 1
        if end - k > _MAX_ABBREV:
            return ""
    return text[k:end]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text`` (see the module docstring for the rules)."""
    spans: list[tuple[int, int]] = []
    for p0, p1 in _paragraph_spans(text):
        start = p0
        for m in _SENT_END_RE.finditer(text, p0, p1):
            nx = _NON_WS_RE.search(text, m.end(), p1)
            if nx is None:
                continue
            nxt = text[nx.start()]
            if not (nxt.isupper() or nxt.isdigit() or nxt in _OPEN):
                continue
            if m.group(0).startswith(".") and len(m.group(0).rstrip("\"'”’)]")) == 1:
                word = _word_before(text, m.start() + 1, p0)
                key = _abbreviation_key(word)
                if _is_abbreviation(word) and key not in _SENTENCE_FINAL_OK and (key not in _AMBIGUOUS
                                                                                or nxt.isdigit()):
                    continue
            spans.append((start, m.end()))
            start = nx.start()
        if start < p1:
            spans.append((start, p1))
    return spans


def split_sentences(text: str) -> list[str]:
    """Split raw text into sentence strings (see the module docstring for the rules)."""
    return [text[a:b] for a, b in sentence_spans(text)]


def _split_word(core: str) -> list[list[str]]:
    """Split a chunk without leading/trailing punctuation into tokens; each token is
    its list of syntactic words (the words of all tokens concatenate to ``core``)."""
    if _URL_RE.fullmatch(core) or _NUMBER_RE.match(core) or _is_abbreviation(core):
        return [[core]]
    # currency before / percent after (a loop, not recursion: "$$$$$5" is fine)
    i, j = 0, len(core)
    while j - i > 1 and core[i] in "$£€¥#":
        i += 1
    k = j
    while k - i > 1 and core[k - 1] == "%":
        k -= 1
    if i > 0 or k < j:
        return [[c] for c in core[:i]] + _split_word(core[i:k]) + [[c] for c in core[k:]]
    out: list[list[str]] = []
    # hyphens / slashes between parts containing a letter
    parts = re.split(r"(--+|[-/–—])", core)
    if len(parts) > 1 and any(re.search(r"[A-Za-z]", p) for p in parts[::2]) and all(parts[::2]):
        for n, p in enumerate(parts):
            if n % 2:
                out.append([p])
            else:
                out.extend(_split_word(p))
        return out
    # other punctuation inside the word ("word,word", "end.Next", runs such as "..." or "!!")
    items: list[str] = []
    for m in _PIECE_RE.finditer(core):
        if items and _joins_previous(items[-1], m.group(0)):
            items[-1] += m.group(0)
        else:
            items.append(m.group(0))
    if len(items) > 1 and "".join(items) == core:
        for it in items:
            out.extend(_split_word(it))
        return out
    return [_contraction(core)]


def _contraction(word: str) -> list[str]:
    low = word.lower()
    if low in _SPECIAL:
        a, b = _SPECIAL[low]
        return [word[: len(a)], word[len(a):]]
    m = _NT_RE.match(word)
    if m and m.group(1):
        return [m.group(1), m.group(2)]
    m = _CLITIC_RE.match(word)
    if m and m.group(1) and re.search(r"\w", m.group(1)):
        return [m.group(1), m.group(2)]
    return [word]


def _chunk_pieces(word: str, last_chunk: bool) -> list[list[str]]:
    """A whitespace-free chunk -> its tokens (each a list of words), punctuation split off."""
    i, j = 0, len(word)
    while j - i > 1 and word[i] in _LEAD:  # leading punctuation
        if word[i] in "'’" and _CLITIC_START_RE.match(word, i):
            break
        i += 1
    n_lead = i
    maybe_url = "@" in word or word[i:i + 4].lower() in ("http", "ftp:", "www.")
    trail: list[int] = []  # lengths of trailing pieces, right to left
    while j > i:
        ch = word[j - 1]
        if ch == "…" or word.endswith("...", i, j):
            k = j
            while k > i and word[k - 1] in ".…":
                k -= 1
            trail.append(j - k)
            j = k
            continue
        if ch in _TRAIL and j - i > 1:
            if ch in "'’" and j - i > 2 and word[j - 2] in "sS":
                trail.append(1)  # plural possessive: students'
                j -= 1
                continue
            if ch in "'’":
                break
            k = j
            while k > i and word[k - 1] in ",;:!?":
                k -= 1
            n = j - k if j - k > 1 and ch in ",;:!?" else 1  # runs like "!!" or "?!" stay together
            trail.append(n)
            j -= n
            continue
        if ch == "." and j - i > 1:
            url = maybe_url and _URL_RE.fullmatch(word, i, j - 1)
            keep = j - i <= _MAX_ABBREV and _is_abbreviation(word[i:j]) and not (
                last_chunk and _abbreviation_key(word[i:j]) in _SENTENCE_FINAL_OK | _AMBIGUOUS)
            if url or not keep:
                trail.append(1)
                j -= 1
                continue
        break
    pieces = [[c] for c in word[:n_lead]]
    if j > i:
        pieces.extend(_split_word(word[i:j]))
    pos = j
    for n in reversed(trail):
        pieces.append([word[pos:pos + n]])
        pos += n
    return _absorb_invisible(pieces)


def _all_invisible(s: str) -> bool:
    return all(_invisible(c) for c in s)


def _absorb_invisible(pieces: list[list[str]]) -> list[list[str]]:
    """Join every word (and token) made only of invisible characters to its neighbour: the one
    before it, or the one after it when it comes first.  The chunk is trimmed, so there is one."""
    out: list[list[str]] = []
    for words in pieces:
        ws: list[str] = []
        for w in words:
            if ws and (_all_invisible(w) or _all_invisible(ws[-1])):
                ws[-1] += w
            else:
                ws.append(w)
        if out and _all_invisible("".join(ws)):
            out[-1][-1] += "".join(ws)
        elif out and _all_invisible("".join(out[-1])):
            out[-1] = ["".join(out[-1]) + ws[0], *ws[1:]]
        else:
            out.append(ws)
    return out


def tokenize_sentence(text: str, offset: int = 0) -> list[TextToken]:
    """Tokenize one sentence; offsets are relative to ``text`` plus ``offset``.

    ``space_after`` is True when whitespace separates a token from the next one (and for
    the last token)."""
    chunks = []
    for m in _CHUNK_RE.finditer(text):
        s, e = m.span()
        while s < e and _invisible(text[s]):
            s += 1
        while e > s and _invisible(text[e - 1]):
            e -= 1
        if s < e:
            chunks.append((s, e))
    spans: list[tuple[int, int, list[str]]] = []
    for ci, (s, e) in enumerate(chunks):
        pos = s
        for words in _chunk_pieces(text[s:e], ci == len(chunks) - 1):
            n = sum(len(w) for w in words)
            spans.append((pos, pos + n, words))
            pos += n
        assert pos == e, (text[s:e], spans[-3:])
    tokens = []
    for k, (a, b, words) in enumerate(spans):
        space = k + 1 == len(spans) or any(c.isspace() for c in text[b:spans[k + 1][0]])
        tokens.append(TextToken(text[a:b], list(words), space, offset + a, offset + b))
    return tokens


def tokenize(text: str) -> list[list[TextToken]]:
    """Split ``text`` into sentences and tokens (rule-based). Offsets refer to ``text``."""
    return [tokenize_sentence(text[a:b], a) for a, b in sentence_spans(text)]


def detokenize(tokens: Sequence[TextToken]) -> str:
    """Rebuild a sentence's text from tokens and their ``space_after`` flags."""
    return "".join(t.text + (" " if t.space_after else "") for t in tokens).rstrip(" ")
