r"""Token spans -> CoNLL-U sentences that keep every character of the text, and back.

Whitespace is written the way UDPipe writes it, in the MISC column of each surface token (the
multiword-token line for a multiword token):

* one space after a token: nothing; no space: ``SpaceAfter=No``;
* any other whitespace after it (newlines, several spaces, tabs ...): ``SpacesAfter=...``, escaped as
  ``\s`` space, ``\t`` tab, ``\r``, ``\n``, ``\p`` for ``|``, ``\\`` for ``\``, and ``\uXXXX`` /
  ``\UXXXXXXXX`` for every other character (other Unicode spaces, zero-width characters left alone between
  whitespace), so that MISC stays one ASCII field;
* whitespace before the first token of the text: ``SpacesBefore=...`` on that token;
* the last token of the text has nothing after it unless MISC says so (then no ``SpaceAfter=No`` is needed
  at the end of a document, which the UD validator would reject before a new document).

``# text`` holds the sentence's characters from its first to its last token, with line breaks written as
spaces (a comment is one line). :func:`text_from_sentences` rebuilds the input text exactly from the FORMs
and MISC of the sentences one :meth:`Segmenter.segment <g2gt.ud.tokenize.Segmenter.segment>` call returned.
The first sentence gets ``# newdoc`` and every sentence that starts a paragraph (the first one, and any after
a blank line) ``# newpar``, as UDPipe does.
"""

from __future__ import annotations

from collections.abc import Iterable

from conllu.models import Metadata

from ..io.sentence import Sentence, sentence_from_tokens
from .mwt import MWTLexicon
from .spans import Spans, line_breaks

__all__ = ["escape_spaces", "unescape_spaces", "build_sentences", "text_from_sentences"]

_ESC = {" ": "\\s", "\t": "\\t", "\r": "\\r", "\n": "\\n", "|": "\\p", "\\": "\\\\"}
_UNESC = {"s": " ", "t": "\t", "r": "\r", "n": "\n", "p": "|", "\\": "\\"}
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_TO_SPACE = str.maketrans({c: " " for c in _LINE_BREAKS})


def escape_spaces(s: str) -> str:
    """UDPipe's escaping of a whitespace string for ``SpacesAfter`` / ``SpacesBefore`` (see the module)."""
    out = []
    for c in s:
        e = _ESC.get(c)
        if e is None:
            cp = ord(c)
            e = f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"
        out.append(e)
    return "".join(out)


def unescape_spaces(s: str) -> str:
    """Inverse of :func:`escape_spaces` (an unknown escape is kept as written)."""
    if "\\" not in s:
        return s
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        k = s[i + 1]
        if k in _UNESC:
            out.append(_UNESC[k])
            i += 2
        elif k in "uU" and i + 2 + (4 if k == "u" else 8) <= n:
            width = 4 if k == "u" else 8
            digits = s[i + 2:i + 2 + width]
            try:
                out.append(chr(int(digits, 16)))
                i += 2 + width
            except ValueError:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _misc_value(sep: str, final: bool) -> dict[str, str] | None:
    if sep == ("" if final else " "):
        return None
    if sep == "":
        return {"SpaceAfter": "No"}
    return {"SpacesAfter": escape_spaces(sep)}


def build_sentences(text: str, spans: Spans, lexicon: MWTLexicon, sent_id_prefix: str = "",
                    first_id: int = 1) -> list[Sentence]:
    """:class:`g2gt.ud.io.Sentence` objects for the tokens and sentences of ``spans`` over ``text``:
    FORMs, multiword tokens split by ``lexicon``, MISC whitespace, ``# sent_id = {prefix}{k}``
    (``k`` from ``first_id``), ``# text``, ``# newdoc`` / ``# newpar`` (see the module docstring)."""
    starts, ends = spans.starts.tolist(), spans.ends.tolist()
    mwt = spans.mwt.tolist()
    n_tok = len(starts)
    score = spans.mwt_score.tolist() if spans.mwt_score is not None else [0.0] * n_tok
    lexicon.prepare([text[a:b] for a, b, m in zip(starts, ends, mwt) if m or text[a:b].lower() in lexicon.always],
                    [text[a:b] for a, b, m, c in zip(starts, ends, mwt, score) if not m and lexicon.is_candidate(c)])
    out: list[Sentence] = []
    for s, (a, b) in enumerate(spans.sentences):
        items = []
        miscs = []
        for k in range(a, b):
            form = text[starts[k]:ends[k]]
            words = lexicon.words(form, mwt[k], score[k])
            if len(words) > 1 and any(not w or w != w.strip() for w in words):
                words = [form]
            items.append((form, words, True))
            sep = text[ends[k]:starts[k + 1]] if k + 1 < n_tok else text[ends[k]:]
            miscs.append(_misc_value(sep, k + 1 == n_tok))
        sent_text = text[starts[a]:ends[b - 1]].translate(_TO_SPACE)
        sent = sentence_from_tokens(items, text=sent_text)
        surface = _surface_tokens(sent)
        for tok, misc in zip(surface, miscs):
            tok["misc"] = dict(misc) if misc else None
        if s == 0 and starts[0] > 0:
            first = surface[0]
            first["misc"] = {"SpacesBefore": escape_spaces(text[:starts[0]]), **(first["misc"] or {})}
        meta = Metadata()
        if s == 0:
            meta["newdoc"] = None
        if s == 0 or line_breaks(text[ends[a - 1]:starts[a]]) >= 2:
            meta["newpar"] = None
        meta["sent_id"] = f"{sent_id_prefix}{first_id + s}"
        meta["text"] = sent_text
        sent.tokens.metadata = meta
        out.append(sent)
    return out


def _surface_tokens(sentence: Sentence) -> list:
    """Multiword-token lines and the words outside them, in order (empty nodes skipped)."""
    out, covered = [], 0
    for t in sentence.tokens:
        tid = t["id"]
        if isinstance(tid, tuple):
            if tid[1] == "-":
                out.append(t)
                covered = max(covered, tid[2])
            continue
        if tid > covered:
            out.append(t)
    return out


def text_from_sentences(sentences: Iterable[Sentence]) -> str:
    """The text the sentences were segmented from: FORMs joined by the whitespace their MISC records
    (``SpaceAfter=No``, ``SpacesAfter``, ``SpacesBefore``; one space by default, nothing after the very
    last token). ``text_from_sentences(seg.segment(t)) == t`` for every text with a token."""
    parts: list[str] = []
    pending: str | None = None  # default separator owed to the previous token
    for sent in sentences:
        for tok in _surface_tokens(sent):
            misc = tok["misc"] if isinstance(tok["misc"], dict) else {}
            if pending is not None:
                parts.append(pending)
            before = misc.get("SpacesBefore")
            if before:
                parts.append(unescape_spaces(before))
            parts.append(tok["form"])
            after = misc.get("SpacesAfter")
            if after is not None:
                parts.append(unescape_spaces(after))
                pending = ""
            elif misc.get("SpaceAfter") == "No":
                pending = ""
            else:
                pending = " "
    return "".join(parts)

