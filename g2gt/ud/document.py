"""The result object of a pipeline: a :class:`Document` is the parsed sentences of one text, with character offsets.

    doc = g2gt.load()("I don't know.  He left.")
    for sentence in doc:                              # the g2gt.ud.io.Sentence objects, as a list holds them
        for word in sentence:                         # Word views: text, lemma, upos, head_word, deprel, start_char
            print(word.text, word.lemma, word.upos, word.deprel, word.head_word)
    doc.text[t.start_char:t.end_char] == t.text       # for every token t in doc.tokens (and word in doc.words)
    doc.entities                                      # Entity objects, mentions as Spans (nlp(text, coref=True))
    doc.to_json()                                     # the JSON below; Document.from_json(s) reads it back
    doc.conllu()                                      # the CoNLL-U text, the same bytes g2gt parse writes
    doc.to_spacy()                                    # a spaCy Doc (g2gt.ud.spacy), doc.to_stanza() a Stanza one

The word and token objects (:class:`~g2gt.ud.io.views.Word`, :class:`~g2gt.ud.io.views.SurfaceToken`) are the
names Stanza and spaCy use (``text``, ``lemma``, ``upos``, ``xpos``, ``feats``, ``head``, ``deprel``, ``misc``,
``start_char``, ``end_char``, ``children``); views over the sentence's columns, made when asked.

**Offsets** are Python string indices (code points) into :attr:`Document.text`, ``[start_char, end_char)``. A
word of a multiword token has its token's span (``don't`` -> ``do`` and ``n't`` both ``2..7``). For raw text,
``doc.text`` is the text as given; for pre-tokenized input (token lists, :class:`~g2gt.ud.io.Sentence` objects,
CoNLL-U) it is built from the tokens: joined by one space, none after a token whose MISC says
``SpaceAfter=No`` (``SpacesAfter`` / ``SpacesBefore`` are honoured too), sentences joined the same way.

**JSON** (``to_dict`` / ``to_json``; the ``g2gt parse --format json`` output and the server's ``/v1/parse``)::

    {"model": "en_combined", "text": "I don't know.",
     "sentences": [{"id": "s1", "text": "I don't know.", "start_char": 0, "end_char": 13,
                    "comments": ["# newdoc", "# newpar", "# sent_id = s1", "# text = I don't know."],
                    "tokens": [{"id": "1", "text": "I", "start_char": 0, "end_char": 1, "words": [1]},
                               {"id": "2-3", "text": "don't", "start_char": 2, "end_char": 7, "words": [2, 3],
                                "misc": null}, ...],
                    "words": [{"id": 1, "text": "I", "lemma": "I", "upos": "PRON", "xpos": "PRP",
                               "feats": "Case=Nom|...", "head": 4, "deprel": "nsubj", "deps": null, "misc": null,
                               "start_char": 0, "end_char": 1}, ...],
                    "enhanced": [{"head": 4, "dependent": 1, "label": "nsubj"}, ...],  (when DEPS are there)
                    "empty_nodes": [{"id": "8.1", "text": "ran", ...}]},              (when there are some)
                   ...],
     "entities": [{"document": 0, "id": "1", "type": "person",                   (with coref=True)
                   "mentions": [{"sentence": 0, "start": 1, "end": 1, "end_sentence": 0, "text": "I",
                                 "head": null, "start_char": 0, "end_char": 1}, ...]}, ...]}

Every column holds its CoNLL-U text (``null`` for ``_``; ``head`` an integer), so :meth:`Document.from_dict`
rebuilds the same CoNLL-U bytes. ``tokens`` lists every surface token (a multiword token once, with the ids of
its words); ``text[start_char:end_char] == token["text"]`` for every token.
"""

from __future__ import annotations

import json
from typing import Iterable, Sequence

from .document_json import conllu_lines, enhanced_edges, sentence_dict
from .io import Sentence
from .io.surface import sentence_spans, token_spans
from .io.views import SurfaceToken, Word
from .io.whitespace import text_from_sentences
from .spans import Entity, Span

__all__ = ["Document", "Entity", "Span", "SurfaceToken", "Token", "Word", "token_spans", "pretokenized_text",
           "enhanced_edges", "sentence_dict"]

Token = SurfaceToken  # the name the 0.1 Document used for its surface tokens


def pretokenized_text(sentences: Sequence[Sentence]) -> str:
    """The text of sentences that came without one: tokens joined by one space, none after ``SpaceAfter=No``
    (:func:`g2gt.ud.io.whitespace.text_from_sentences`)."""
    return text_from_sentences(sentences)


class Document(list):
    """The parsed sentences of one text, with the text and character offsets.

    A ``list`` of :class:`~g2gt.ud.io.Sentence` (so ``for s in doc``, ``len(doc)`` and ``doc[0]`` work as on a list)
    plus :attr:`text` and character offsets (see the module docstring). The sentences' word and token views point into
    :attr:`text`.

    Args:
        sentences: the sentences, in order.
        text: the original text (raw input); ``None`` builds it from the tokens (:func:`pretokenized_text`).
        model: the name of the model that made it (written in the JSON).
    """

    def __init__(self, sentences: Iterable[Sentence] = (), text: str | None = None, model: str | None = None) -> None:
        super().__init__(sentences)
        self.text = pretokenized_text(self) if text is None else text
        self.model = model
        self._anchor()

    def _anchor(self) -> None:
        """Point each sentence's offsets into :attr:`text`: where its search for its first form starts."""
        pos = 0
        for s in self:
            s._text, s._text_start = self.text, pos
            pos = sentence_spans(s, self.text, pos)[1]

    @property
    def sentences(self) -> list[Sentence]:
        """The sentences (a plain list; Stanza's spelling)."""
        return list(self)

    def spans(self) -> list[list[tuple[int, int] | None]]:
        """Per sentence, the ``(start_char, end_char)`` of each entry of ``sentence.rows``.

        See :func:`~g2gt.ud.io.surface.token_spans`; computed on each call, so edits of the sentences are seen.

        Returns:
            One list per sentence, ``None`` for empty nodes.
        """
        return token_spans(self, self.text)

    @property
    def tokens(self) -> list[SurfaceToken]:
        """Every surface token of the document, in order (``sentence.tokens`` of each sentence)."""
        self._anchor()
        return [t for s in self for t in s.tokens]

    @property
    def words(self) -> list[Word]:
        """Every syntactic word of the document, in order (``sentence.words`` of each sentence)."""
        self._anchor()
        return [w for s in self for w in s.words]

    @property
    def entities(self) -> list[Entity]:
        """The coreference entities (``nlp(text, coref=True)``; read from the ``Entity=`` items of MISC) in order
        of their first mention, each an :class:`~g2gt.ud.spans.Entity` whose mentions are
        :class:`~g2gt.ud.spans.Span` objects (``text``, ``start_char``, ``end_char``, ``head``, ``words``)."""
        from .coref.io import entities
        from .spans import document_entities

        self._anchor()
        return document_entities(self, self.text, entities(self))

    # ------------------------------------------------------------------ formats
    def to_dict(self) -> dict:
        """The JSON object of the module docstring (plain dicts and lists).

        With ``"entities"`` (:func:`g2gt.ud.coref.io.entities` plus each mention's ``start_char`` / ``end_char``) when a
        word's MISC has ``Entity=`` (``nlp(text, coref=True)``).

        Returns:
            The JSON object, as a dict.
        """
        out = {"model": self.model, "text": self.text,
               "sentences": [sentence_dict(s, sp) for s, sp in zip(self, self.spans())]}
        if any("Entity" in (w["misc"] or {}) for s in self for w in s.word_rows):
            from .coref.io import entities
            from .spans import document_entities

            self._anchor()
            found = entities(self)
            for e, obj in zip(found, document_entities(self, self.text, found)):
                for m, span in zip(e["mentions"], obj.mentions):
                    m["start_char"], m["end_char"] = span.start_char, span.end_char
            out["entities"] = found
        return out

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as a JSON string (UTF-8 characters kept as they are, not escaped).

        Args:
            indent: as ``json.dumps``'s (``None``: one line).

        Returns:
            The JSON text.
        """
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_dict(cls, data: dict) -> "Document":
        """The document :meth:`to_dict` wrote (``conllu()`` gives the same bytes).

        Keys it does not know are ignored, so the server's answer (with ``svg``, ``conllu``) reads too; the entities
        come back from the ``Entity=`` items of MISC.

        Args:
            data: the dict :meth:`to_dict` wrote.

        Returns:
            The :class:`Document`.

        Raises:
            ValueError: ``data`` is not a dict with a ``"sentences"`` list.
        """
        from .io import parse_conllu_string

        if not isinstance(data, dict) or not isinstance(data.get("sentences"), list):
            raise ValueError("Document.from_dict expects {'sentences': [...], ...} as Document.to_dict writes it")
        text = "".join("\n".join(conllu_lines(d)) + "\n\n" for d in data["sentences"])
        sentences = parse_conllu_string(text, name="<json>") if text else []
        return cls(sentences, data.get("text"), data.get("model"))

    @classmethod
    def from_json(cls, text: str) -> "Document":
        """The document :meth:`to_json` wrote.

        Args:
            text: the JSON text.

        Returns:
            The :class:`Document`.

        Raises:
            ValueError: invalid JSON, or not a dict with a ``"sentences"`` list.
        """
        return cls.from_dict(json.loads(text))

    def conllu(self) -> str:
        """The CoNLL-U text of the sentences (what ``g2gt parse`` writes for the same input).

        Returns:
            The CoNLL-U text.
        """
        return "".join(s.serialize() for s in self)

    # ------------------------------------------------------------------ bridges
    def to_spacy(self, vocab=None):
        """The document as a ``spacy.tokens.Doc``.

        A token per word, sentences, ``pos_``, ``tag_``, ``morph``, ``lemma_``, ``dep_`` (``ROOT`` for the root),
        ``head``, coreference in ``doc.spans["coref_clusters_N"]``; see :func:`g2gt.ud.spacy.convert.to_spacy`.

        Args:
            vocab: a ``spacy.vocab.Vocab`` (``None``: a new one).

        Returns:
            The ``spacy.tokens.Doc``.

        Raises:
            ImportError: spaCy is not installed (``pip install "g2gt[spacy]"``).
        """
        from .spacy.convert import to_spacy

        return to_spacy(self, vocab)

    def to_stanza(self):
        """The document as a ``stanza.models.common.doc.Document``.

        Words, multiword tokens, empty nodes, comments, columns, with ``text`` and every token's ``start_char`` /
        ``end_char`` (see :mod:`g2gt.ud.io.stanza`).

        Returns:
            The stanza ``Document``.
        """
        from .io.stanza import document_from_sentences
        from .io.surface import surface_tokens

        copies = [s.copy() for s in self]
        for s, spans in zip(copies, self.spans()):
            for t in surface_tokens(s):
                if spans[t.row] is not None:
                    tok = s.rows[t.row]
                    misc = dict(tok["misc"]) if isinstance(tok["misc"], dict) else {}
                    misc.update(start_char=str(spans[t.row][0]), end_char=str(spans[t.row][1]))
                    tok["misc"] = misc
        doc = document_from_sentences(copies)
        doc.text = self.text
        return doc

    def to_graphs(self, max_distance: int = 8) -> list:
        """One :class:`g2gt.Graph` per sentence (:meth:`Sentence.to_graph`).

        Relation ids come from one vocabulary shared by the whole document (:func:`g2gt.ud.io.stanza.document_vocab`).

        Args:
            max_distance: clip distance of the position channel.

        Returns:
            The graphs, one per sentence.
        """
        from .io.stanza import document_vocab

        vocab = document_vocab(list(self))
        return [s.to_graph(vocab, max_distance) for s in self]

    def to_networkx(self, max_distance: int = 8) -> list:
        """One ``networkx.DiGraph`` per sentence (:meth:`g2gt.Graph.to_networkx`).

        Args:
            max_distance: clip distance of the position channel.

        Returns:
            The graphs, one per sentence.
        """
        return [g.to_networkx() for g in self.to_graphs(max_distance)]

    def to_pyg(self, max_distance: int = 8) -> list:
        """One ``torch_geometric.data.Data`` per sentence (:meth:`g2gt.Graph.to_pyg`).

        Args:
            max_distance: clip distance of the position channel.

        Returns:
            The ``Data`` objects, one per sentence.
        """
        return [g.to_pyg() for g in self.to_graphs(max_distance)]

    def _repr_html_(self) -> str:
        """Every sentence's tree as SVG (:mod:`g2gt.ud.draw`), coreference mentions marked, for notebooks."""
        from .draw import coref_marks
        from .io.svg import render_svg

        marks = coref_marks(self) if any("Entity" in (w["misc"] or {}) for s in self for w in s.word_rows) \
            else [()] * len(self)
        return "".join(f"<div>{render_svg(s, marks=m)}</div>" for s, m in zip(self, marks))

    def __repr__(self) -> str:
        words = sum(len(s) for s in self)
        return f"Document({len(self)} sentences, {words} words, {len(self.text)} characters)"

    def __reduce__(self):  # pickled with its sentences, text and model (worker processes return Documents)
        return (Document, (list(self), self.text, self.model))
