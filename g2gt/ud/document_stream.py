"""A :class:`~g2gt.ud.document.Document`'s JSON written piece by piece from a stream of sentences: the same bytes
as ``Document(sentences, text, model).to_json()``, with memory that does not grow with the input
(``g2gt parse --format json``).

Each sentence's object (:func:`~g2gt.ud.document_json.sentence_dict`) is written as soon as it is parsed, its
offsets found the way :meth:`Document.spans` finds them (each sentence searched from where the previous one
ended). With raw text (``text`` given) the output is written straight through. Without it, the document's text
is built from the tokens (:func:`g2gt.ud.io.whitespace.text_from_sentences`) as the sentences go by; since the
JSON holds ``"text"`` before ``"sentences"``, the text and the sentence objects go to two temporary files
(on disk) and are copied out at the end.

Coreference (``Entity=`` in MISC, ``"entities"`` after the sentences) is read per document (``# newdoc``); a
document's sentences are kept from its first coreference annotation to its end, so memory is bounded by the
longest annotated document, and the entity list itself is kept (it is written last).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from typing import IO, Any, Iterable

from .document_json import sentence_dict
from .io import Sentence
from .io.surface import sentence_spans, surface_tokens
from .io.whitespace import unescape_spaces

__all__ = ["write_document_json"]

Span = tuple[int, int]
_COREF_ITEMS = ("Entity", "SplitAnte", "Bridge")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class _TextBuilder:
    """:func:`g2gt.ud.io.whitespace.text_from_sentences`, one sentence's piece at a time."""

    def __init__(self) -> None:
        self.pending: str | None = None  # the default separator owed to the previous token

    def piece(self, sent: Sentence) -> str:
        parts: list[str] = []
        rows = sent.rows
        for surface in surface_tokens(sent):
            tok = rows[surface.row]
            misc = tok["misc"] if isinstance(tok["misc"], dict) else {}
            if self.pending is not None:
                parts.append(self.pending)
            before = misc.get("SpacesBefore")
            if before:
                parts.append(unescape_spaces(before))
            parts.append(tok["form"])
            after = misc.get("SpacesAfter")
            if after is not None:
                parts.append(unescape_spaces(after))
                self.pending = ""
            elif misc.get("SpaceAfter") == "No":
                self.pending = ""
            else:
                self.pending = " "
        return "".join(parts)


def _has_coref(s: Sentence) -> bool:
    return any(isinstance(w["misc"], dict) and any(k in w["misc"] for k in _COREF_ITEMS) for w in s.word_rows)


class _Entities:
    """``Document.to_dict()["entities"]``, one document at a time (see the module docstring)."""

    def __init__(self) -> None:
        self.found: list[dict] = []
        self.seen = False  # a word with Entity= (what makes to_dict write "entities")
        self.doc = -1  # the current document's index
        self.index = 0  # the next sentence's index in the whole input
        self.kept: list[tuple[Sentence, list]] = []
        self.first_kept = 0  # index (whole input) of kept[0]
        self.layout: str | None = None  # the current document's # global.Entity, where declared

    def add(self, s: Sentence, spans: list) -> None:
        md = s.metadata
        if self.doc < 0 or "newdoc id" in md or "newdoc" in md:
            self.flush()
            self.doc += 1
            self.layout = None
        if self.layout is None and md.get("global.Entity"):
            self.layout = str(md["global.Entity"])
        if not self.seen and any(isinstance(w["misc"], dict) and "Entity" in w["misc"] for w in s.word_rows):
            self.seen = True
        if self.kept or _has_coref(s):
            if not self.kept:
                self.first_kept = self.index
                if self.layout is not None and not md.get("global.Entity"):  # declared on a sentence not kept
                    s = s.copy()
                    s.rows.metadata["global.Entity"] = self.layout
            self.kept.append((s, spans))
        self.index += 1

    def flush(self) -> None:
        if not self.kept:
            return
        from .coref.io import entities

        sents = [s for s, _ in self.kept]
        for e in entities(sents):
            e["document"] = self.doc
            for m in e["mentions"]:
                m["start_char"] = self._char(m["sentence"], m["start"], 0)
                m["end_char"] = self._char(m["end_sentence"], m["end"], 1)
                m["sentence"] += self.first_kept
                m["end_sentence"] += self.first_kept
            self.found.append(e)
        self.kept = []

    def _char(self, sentence: int, word: int, side: int) -> int | None:
        s, spans = self.kept[sentence]
        for k, tok in enumerate(s.rows):
            if tok["id"] == word:
                sp = spans[k] if k < len(spans) else None
                return None if sp is None else sp[side]
        return None


def write_document_json(sentences: Iterable[Sentence], out: IO[str], text: str | None = None,
                        model: str | None = None) -> int:
    """Write ``Document(sentences, text, model).to_json()`` to ``out`` (a text stream), reading ``sentences``
    once, one at a time (see the module docstring); returns the number of sentences written."""
    entities = _Entities()
    n = 0
    if text is not None:
        out.write('{"model": ' + _dumps(model) + ', "text": ' + _dumps(text) + ', "sentences": [')
        pos = 0
        for s in sentences:
            spans, pos = sentence_spans(s, text, pos)
            out.write((", " if n else "") + _dumps(sentence_dict(s, spans)))
            entities.add(s, spans)
            n += 1
        _finish(out, entities)
        return n
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="") as text_part, \
            tempfile.TemporaryFile("w+", encoding="utf-8", newline="") as body:
        builder = _TextBuilder()
        offset = 0  # characters of text built so far
        tail = ""  # the text after the last form found (the next search starts there)
        for s in sentences:
            piece = builder.piece(s)
            text_part.write(_dumps(piece)[1:-1])  # JSON escapes each character alone: the pieces join
            local, base = tail + piece, offset - len(tail)
            found, end = sentence_spans(s, local, 0)
            spans = [None if sp is None else (sp[0] + base, sp[1] + base) for sp in found]
            offset += len(piece)
            tail = local[end:]
            body.write((", " if n else "") + _dumps(sentence_dict(s, spans)))
            entities.add(s, spans)
            n += 1
        out.write('{"model": ' + _dumps(model) + ', "text": "')
        for part in (text_part, body):
            part.seek(0)
            shutil.copyfileobj(part, out, 1 << 20)
            if part is text_part:
                out.write('", "sentences": [')
    _finish(out, entities)
    return n


def _finish(out: IO[str], entities: _Entities) -> None:
    entities.flush()
    out.write("]")
    if entities.seen:
        out.write(', "entities": ' + _dumps(entities.found))
    out.write("}")
