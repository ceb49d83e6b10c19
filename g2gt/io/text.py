"""Raw English text -> sentences of tokens (UD English EWT conventions).

Two tokenizers:

* a **rule-based** one (no model, always available): sentence splitting on
  ``. ! ?`` followed by whitespace and a capital letter, digit or opening
  quote, keeping abbreviations (``Mr.``, ``e.g.``, ``U.S.``, initials ``J.``);
  blank lines always end a sentence.  Tokens follow EWT: punctuation split off,
  hyphens and slashes inside words split (``15-year`` -> ``15 - year``),
  ``$`` / ``%`` split from numbers, URLs / e-mails / numbers kept whole, and
  English contractions split into syntactic words that stay one surface token
  (a CoNLL-U multiword token): ``don't`` -> ``do n't``, ``can't`` -> ``ca n't``,
  ``I'm`` -> ``I 'm``, ``Bush's`` -> ``Bush 's``, ``cannot`` -> ``can not``,
  ``gonna`` -> ``gon na``.  ``SpaceAfter=No`` is recorded so the text can be
  rebuilt exactly (up to runs of whitespace).
* stanza's neural English tokenizer, only when its model is already installed
  locally (nothing is downloaded): :func:`load_stanza_tokenizer`.

Both produce ``list[list[TextToken]]``; :func:`text_to_sentences` turns that
into :class:`~g2gt.io.conllu.Sentence` objects ready for parsing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from .conllu import Sentence, sentence_from_tokens

__all__ = [
    "TextToken",
    "split_sentences",
    "tokenize_sentence",
    "tokenize",
    "detokenize",
    "text_to_sentences",
    "lines_to_sentences",
    "load_stanza_tokenizer",
    "stanza_tokenize",
    "StanzaUnavailable",
]


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

_OPEN = "\"'“‘`([{<«"
_CLOSE = "\"'”’)]}>»"
_TRAIL = ",;:!?…" + _CLOSE
_URL_RE = re.compile(r"(?:https?://|ftp://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:[.,:/]\d+)*|\.\d+)(?:st|nd|rd|th|s)?\Z", re.IGNORECASE)
_DOTTED_RE = re.compile(r"(?:[A-Za-z]\.){2,}\Z")  # U.S. e.g. a.m.
_INITIAL_RE = re.compile(r"[A-Z]\.\Z")
_NT_RE = re.compile(r"(?i)(.+?)(n['’]t)\Z")
_CLITIC_RE = re.compile(r"(?i)(.+?)(['’](?:s|re|ve|ll|d|m))\Z")
_SPECIAL = {"cannot": ("can", "not"), "gonna": ("gon", "na"), "wanna": ("wan", "na"), "gotta": ("got", "ta"),
            "gimme": ("gim", "me"), "lemme": ("lem", "me")}
_PIECE_RE = re.compile(r"\w+(?:['’]\w+)*|\.{2,}|([^\w\s])\1*")
_SENT_END_RE = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)")


def _is_abbreviation(word: str) -> bool:
    """``word`` ends with ``.`` and that dot belongs to it (``Mr.``, ``U.S.``, ``J.``)."""
    if not word.endswith("."):
        return False
    core = word.rstrip(".").lstrip(_OPEN)
    if not core:
        return False
    return core.lower() in ABBREVIATIONS or bool(_DOTTED_RE.match(core + ".")) or bool(_INITIAL_RE.match(core + "."))


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for para in re.finditer(r"\S(?:.*?\S)??(?=\s*\n\s*\n|\s*\Z)", text, re.DOTALL):
        p0 = para.start()
        seg = para.group(0)
        start = 0
        for m in _SENT_END_RE.finditer(seg):
            end = m.end()
            rest = seg[end:].lstrip()
            if not rest:
                continue
            nxt = rest[0]
            if not (nxt.isupper() or nxt.isdigit() or nxt in _OPEN):
                continue
            if m.group(0).startswith(".") and len(m.group(0).rstrip("\"'”’)]")) == 1:
                word = seg[:m.start() + 1].split()[-1] if seg[:m.start() + 1].split() else ""
                if _is_abbreviation(word) and word.rstrip(".").lower().lstrip(_OPEN) not in _SENTENCE_FINAL_OK:
                    continue
            spans.append((p0 + start, p0 + end))
            start = end + (len(seg[end:]) - len(seg[end:].lstrip()))
        if start < len(seg):
            spans.append((p0 + start, p0 + len(seg)))
    return spans


def split_sentences(text: str) -> list[str]:
    """Split raw text into sentence strings (see the module docstring for the rules)."""
    return [text[a:b] for a, b in _sentence_spans(text)]


def _split_word(core: str) -> list[list[str]]:
    """Split a chunk without leading/trailing punctuation into tokens; each token is
    its list of syntactic words."""
    if _URL_RE.fullmatch(core) or _NUMBER_RE.match(core) or _is_abbreviation(core):
        return [[core]]
    out: list[list[str]] = []
    # currency / percent
    m = re.match(r"([$£€¥#])(.+)\Z", core)
    if m:
        return [[m.group(1)]] + _split_word(m.group(2))
    m = re.match(r"(.+?)(%)\Z", core)
    if m:
        return _split_word(m.group(1)) + [[m.group(2)]]
    # hyphens / slashes between parts containing a letter
    parts = re.split(r"(--+|[-/–—])", core)
    if len(parts) > 1 and any(re.search(r"[A-Za-z]", p) for p in parts[::2]) and all(parts[::2]):
        for i, p in enumerate(parts):
            if i % 2:
                out.append([p])
            else:
                out.extend(_split_word(p))
        return out
    # other punctuation inside the word ("word,word", "end.Next", runs such as "..." or "!!")
    items = [m.group(0) for m in _PIECE_RE.finditer(core)]
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


def tokenize_sentence(text: str, offset: int = 0) -> list[TextToken]:
    """Tokenize one sentence; offsets are relative to ``text`` plus ``offset``."""
    tokens: list[TextToken] = []
    chunks = list(re.finditer(r"\S+", text))
    for ci, chunk in enumerate(chunks):
        s, e = chunk.start(), chunk.end()
        word = chunk.group(0)
        last_chunk = ci == len(chunks) - 1
        pieces: list[tuple[list[str], int]] = []  # (words, length)
        # leading punctuation
        lead: list[str] = []
        while word and word[0] in _OPEN + "¿¡" and len(word) > 1:
            if word[0] in "'’" and re.match(r"['’](?:s|re|ve|ll|d|m|t|em|cause|til|n)\b", word, re.IGNORECASE):
                break
            lead.append(word[0])
            word = word[1:]
        # trailing punctuation
        trail: list[str] = []
        while word:
            if word.endswith("...") or word.endswith("…"):
                k = len(word) - len(word.rstrip(".…"))
                trail.insert(0, word[-k:])
                word = word[:-k]
                continue
            ch = word[-1]
            if ch in _TRAIL and len(word) > 1:
                if ch in "'’" and word[-2:].lower() in ("s'", "s’") and len(word) > 2:
                    trail.insert(0, ch)  # plural possessive: students'
                    word = word[:-1]
                    continue
                if ch in "'’":
                    break
                # runs like "!!" or "?!" stay together
                k = len(word) - len(word.rstrip(",;:!?"))
                if k > 1 and ch in ",;:!?":
                    trail.insert(0, word[-k:])
                    word = word[:-k]
                    continue
                trail.insert(0, ch)
                word = word[:-1]
                continue
            if ch == "." and len(word) > 1:
                if _URL_RE.fullmatch(word[:-1]) or not (_is_abbreviation(word) and not (
                        last_chunk and word.rstrip(".").lower() in _SENTENCE_FINAL_OK)):
                    trail.insert(0, ".")
                    word = word[:-1]
                    continue
            break
        for p in lead:
            pieces.append(([p], 1))
        if word:
            for ws in _split_word(word):
                pieces.append((ws, len("".join(ws))))
        for p in trail:
            pieces.append(([p], len(p)))
        pos = s
        for k, (ws, ln) in enumerate(pieces):
            surface = text[pos:pos + ln]
            last = k == len(pieces) - 1
            tokens.append(TextToken(surface, list(ws), space_after=last, start=offset + pos,
                                    end=offset + pos + ln))
            pos += ln
        assert pos == e, (text[s:e], pieces)
    return tokens


def tokenize(text: str) -> list[list[TextToken]]:
    """Split ``text`` into sentences and tokens (rule-based). Offsets refer to ``text``."""
    return [tokenize_sentence(text[a:b], a) for a, b in _sentence_spans(text)]


def detokenize(tokens: Sequence[TextToken]) -> str:
    """Rebuild a sentence's text from tokens and their ``space_after`` flags."""
    return "".join(t.text + (" " if t.space_after else "") for t in tokens).rstrip(" ")


def text_to_sentences(text: str, tokenizer: str = "rule", sent_id_prefix: str = "s",
                      pipeline: Any = None) -> list[Sentence]:
    """Raw text -> unparsed :class:`Sentence` objects (with multiword tokens for
    contractions, ``# sent_id = {prefix}{k}`` and ``# text``).

    Args:
        tokenizer: ``"rule"`` (built in), ``"stanza"`` (needs the local English model,
            see :func:`load_stanza_tokenizer`) or ``"auto"`` (stanza if installed, else rules).
        pipeline: an already loaded stanza pipeline (optional).
    """
    nlp = _stanza_for(tokenizer, pipeline)
    sents = stanza_tokenize(text, nlp) if nlp is not None else tokenize(text)
    return [_to_sentence(toks, f"{sent_id_prefix}{k}") for k, toks in enumerate(sents, start=1) if toks]


def _stanza_for(tokenizer: str, pipeline: Any) -> Any:
    """The stanza pipeline a ``tokenizer`` choice asks for, or None for the rule tokenizer."""
    if tokenizer not in ("rule", "stanza", "auto"):
        raise ValueError(f"unknown tokenizer {tokenizer!r} (expected 'rule', 'stanza' or 'auto')")
    if tokenizer == "rule":
        return None
    return pipeline or load_stanza_tokenizer(required=tokenizer == "stanza")


def _to_sentence(toks: Sequence[TextToken], sent_id: str) -> Sentence:
    return sentence_from_tokens([(t.text, t.words, t.space_after) for t in toks], text=detokenize(toks),
                                sent_id=sent_id)


def lines_to_sentences(lines: Sequence[str], name: str = "<lines>", tokenizer: str = "rule",
                       pipeline: Any = None) -> list[Sentence]:
    """One sentence per line -> exactly one unparsed :class:`Sentence` per line, in order
    (no sentence splitting inside a line), with ``# sent_id = {line number}`` and ``# text``.

    This is the shape parallel corpora have, so the output stays aligned with the other
    side (e.g. ``g2gt train seq2seq --src-graphs``).

    Raises:
        ValueError: ``"NAME:LINE: ..."`` for a line without any word (an empty sentence
            cannot be written as CoNLL-U, and dropping it would break the alignment).
    """
    nlp = _stanza_for(tokenizer, pipeline)
    out = []
    for lineno, line in enumerate(lines, start=1):
        if nlp is not None and line.strip():
            toks = [t for sent in stanza_tokenize(line, nlp) for t in sent]
        else:
            toks = tokenize_sentence(line)
        if not toks:
            raise ValueError(f"{name}:{lineno}: empty line; expected one sentence per line (every line must "
                             "hold at least one word, so that the output stays aligned line by line)")
        out.append(_to_sentence(toks, str(lineno)))
    return out


# --------------------------------------------------------------------------- stanza
class StanzaUnavailable(RuntimeError):
    """stanza's English tokenize model is not installed locally."""


def load_stanza_tokenizer(required: bool = False, model_dir: str | None = None, use_gpu: bool = False) -> Any:
    """stanza's English tokenizer (+ multiword expansion when available), loaded only
    from local files (``download_method=None``: nothing is downloaded).

    Args:
        required: raise :class:`StanzaUnavailable` instead of returning None when the
            model is missing.
        model_dir: stanza resources directory (default ``$STANZA_RESOURCES_DIR`` or
            ``~/stanza_resources``).

    Returns:
        a ``stanza.Pipeline`` or None.
    """
    try:
        import stanza
    except ImportError as e:  # pragma: no cover - stanza is a dependency
        if required:
            raise StanzaUnavailable(f"stanza is not installed: {e}") from None
        return None
    d = model_dir or os.environ.get("STANZA_RESOURCES_DIR") or os.path.expanduser("~/stanza_resources")
    last: Exception | None = None
    for processors in ("tokenize,mwt", "tokenize"):
        try:
            return stanza.Pipeline(lang="en", processors=processors, dir=d, download_method=None,
                                   use_gpu=use_gpu, logging_level="WARN")
        except Exception as e:  # stanza raises several types for missing resources
            last = e
    if required:
        raise StanzaUnavailable(
            f"stanza's English tokenize model is not installed in {d} ({type(last).__name__}: {last}). "
            "Install it once with: python -c \"import stanza; stanza.download('en', processors='tokenize,mwt')\""
        )
    return None


def stanza_tokenize(text: str, pipeline: Any) -> list[list[TextToken]]:
    """Tokenize with a loaded stanza pipeline into :class:`TextToken` sentences."""
    doc = pipeline(text)
    out: list[list[TextToken]] = []
    for sent in doc.sentences:
        toks = []
        stoks = list(sent.tokens)
        for i, t in enumerate(stoks):
            start = int(getattr(t, "start_char", 0) or 0)
            end = int(getattr(t, "end_char", start + len(t.text)) or start + len(t.text))
            if i + 1 < len(stoks):
                nxt = int(getattr(stoks[i + 1], "start_char", end) or end)
                space = nxt > end
            else:
                space = True
            toks.append(TextToken(t.text, [w.text for w in t.words], space, start, end))
        out.append(toks)
    return out
