"""Coreference as objects: an :class:`Entity` of a :class:`~g2gt.ud.document.Document` is a list of mentions,
each a :class:`Span` of words (spaCy's ``Span``: ``text``, ``start_char``, ``end_char``, ``root``; Stanza's
``words``).

    for entity in doc.entities:                  # nlp(text, coref=True)
        print(entity.id, entity.type, [(m.text, m.start_char, m.end_char, m.head.text) for m in entity.mentions])

The entities are read from the ``Entity=`` items of MISC (:func:`g2gt.ud.coref.io.entities`, which gives the
same as plain dicts: :meth:`Entity.to_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .io.views import Word

__all__ = ["Span", "Entity", "document_entities"]


class Span:
    """Consecutive words of a document (a coreference mention).

    From its first word to its last, which may be in a later sentence (a discontinuous mention spans its gaps too).

    Args:
        words: the words, in order (at least one).
        text: the document's text (the offsets point into it).
        head: the mention's head word (``None`` when not known).
    """

    __slots__ = ("words", "_text", "head")

    def __init__(self, words: Sequence[Word], text: str, head: Word | None = None) -> None:
        if not words:
            raise ValueError("a Span needs at least one word")
        self.words, self._text, self.head = list(words), text, head

    @property
    def root(self) -> Word | None:
        """The head word (spaCy's name)."""
        return self.head

    @property
    def sentence(self) -> Any:
        """The :class:`~g2gt.ud.io.Sentence` of its first word."""
        return self.words[0].sentence

    @property
    def start_char(self) -> int | None:
        return self.words[0].start_char

    @property
    def end_char(self) -> int | None:
        return self.words[-1].end_char

    @property
    def text(self) -> str:
        """``doc.text[start_char:end_char]``; the words joined by spaces when the offsets are unknown."""
        a, b = self.start_char, self.end_char
        if a is None or b is None:
            return " ".join(w.text for w in self.words)
        return self._text[a:b]

    def __len__(self) -> int:
        return len(self.words)

    def __iter__(self):
        return iter(self.words)

    def _key(self) -> tuple:
        return (self.start_char, self.end_char, self.text, tuple(w.id for w in self.words),
                self.head.id if self.head is not None else None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Span) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Span({self.text!r}, start_char={self.start_char}, end_char={self.end_char})"


@dataclass(eq=True)
class Entity:
    """One coreference entity (a cluster of mentions).

    Attributes:
        id: the entity id of its ``Entity=`` brackets (unique within a document).
        type: the entity type (``person``, ``place`` ...; empty when not given).
        mentions: its mentions in document order (one: a singleton).
        document: 0-based index of its document (documents start at ``# newdoc``).

    Args:
        id: the entity id.
        type: the entity type (empty when not given).
        mentions: its mentions in document order.
        document: 0-based index of its document.
    """

    id: str
    type: str
    mentions: list[Span]
    document: int = 0

    @property
    def text(self) -> str:
        """The text of its first mention (what names it: Stanza's and spaCy's ``ent.text``)."""
        return self.mentions[0].text if self.mentions else ""

    def to_dict(self) -> dict:
        """The JSON object of :meth:`Document.to_dict` for this entity.

        Without the sentence indices (which :meth:`Document.to_dict` adds).

        Returns:
            The JSON object, as a dict.
        """
        return {"document": self.document, "id": self.id, "type": self.type,
                "mentions": [{"text": m.text, "start_char": m.start_char, "end_char": m.end_char}
                             for m in self.mentions]}


def document_entities(sentences: Sequence[Any], text: str, found: Sequence[dict]) -> list[Entity]:
    """:class:`Entity` objects from the dicts of :func:`g2gt.ud.coref.io.entities`.

    Args:
        sentences: the document's sentences (the indices in ``found`` point into it).
        text: the document's text.
        found: ``entities(sentences)``.

    Returns:
        One :class:`Entity` per dict, its mentions as :class:`Span` objects from word ``start`` of sentence
        ``sentence`` to word ``end`` of sentence ``end_sentence``; the head is the word of the span with the
        dict's ``head`` id.
    """
    words = [s.words for s in sentences]
    out = []
    for e in found:
        mentions = []
        for m in e["mentions"]:
            s0, s1 = m["sentence"], m["end_sentence"]
            span = [w for si in range(s0, s1 + 1) for w in words[si]
                    if (si > s0 or w.id >= m["start"]) and (si < s1 or w.id <= m["end"])]
            head = next((w for w in span if w.id == m["head"]), None) if m.get("head") is not None else None
            mentions.append(Span(span, text, head))
        out.append(Entity(str(e["id"]), e["type"] or "", mentions, e["document"]))
    return out
