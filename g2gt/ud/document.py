"""The result object of a pipeline: a :class:`Document` is the parsed sentences of one text, with character offsets.

    doc = g2gt.load()("I don't know.  He left.")
    for sentence in doc: ...                          # the g2gt.ud.io.Sentence objects, as a list holds them
    doc.text[t.start_char:t.end_char] == t.text       # for every token t in doc.tokens (and word in doc.words)
    doc.to_json()                                     # the JSON below; Document.from_json(s) reads it back
    doc.conllu()                                      # the CoNLL-U text, the same bytes g2gt parse writes

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
                                 "head": null}, ...]}, ...]}

Every column holds its CoNLL-U text (``null`` for ``_``; ``head`` an integer), so :meth:`Document.from_dict`
rebuilds the same CoNLL-U bytes. ``tokens`` lists every surface token (a multiword token once, with the ids of
its words); ``text[start_char:end_char] == token["text"]`` for every token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .io import Sentence

__all__ = ["Document", "Token", "Word", "token_spans", "pretokenized_text"]

Span = tuple[int, int]
COLUMNS = ("id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")
_WORD_KEYS = ("lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


@dataclass(frozen=True)
class Token:
    """One surface token: ``text`` as written, its span in :attr:`Document.text`, the ids of its words."""

    id: str
    text: str
    start_char: int | None
    end_char: int | None
    words: tuple[int, ...]
    sentence: int  # index of its sentence in the document


@dataclass(frozen=True)
class Word:
    """One syntactic word with its CoNLL-U columns (``None`` for ``_``) and its token's span."""

    id: int
    text: str
    lemma: str | None
    upos: str | None
    xpos: str | None
    feats: str | None
    head: int | None
    deprel: str | None
    deps: str | None
    misc: str | None
    start_char: int | None
    end_char: int | None
    sentence: int


# --------------------------------------------------------------------------- offsets
def _surface(sentence: Sentence) -> list[tuple[int, list[int]]]:
    """``(position in sentence.tokens, positions of its words)`` of each surface token: a multiword-token line
    with the words it spans, or a word outside any (empty nodes skipped)."""
    out: list[tuple[int, list[int]]] = []
    end = 0  # last word id covered by the open multiword token
    for k, tok in enumerate(sentence.tokens):
        tid = tok["id"]
        if isinstance(tid, tuple):
            if tid[1] == "-":
                out.append((k, []))
                end = tid[2]
            continue
        if tid <= end and out:
            out[-1][1].append(k)
        else:
            out.append((k, [k]))
    return out


def token_spans(sentences: Sequence[Sentence], text: str) -> list[list[Span | None]]:
    """For each sentence, the span in ``text`` of each entry of ``sentence.tokens`` (a word of a multiword token
    gets its token's span; empty nodes ``None``), found by reading the surface forms left to right: each form is
    looked for from the end of the previous one. ``None`` for a form not in the rest of ``text`` (never for our
    tokenizers, whose forms are slices of the text). Linear in ``len(text)``."""
    out: list[list[Span | None]] = []
    pos = 0
    for s in sentences:
        spans: list[Span | None] = [None] * len(s.tokens)
        for k, words in _surface(s):
            form = s.tokens[k]["form"]
            at = text.find(form, pos) if form else -1
            if at < 0:
                continue
            span = (at, at + len(form))
            pos = span[1]
            for i in [k, *words]:
                spans[i] = span
        out.append(spans)
    return out


def pretokenized_text(sentences: Sequence[Sentence]) -> str:
    """The text of sentences that came without one: tokens joined by one space, none after ``SpaceAfter=No``
    (see :func:`g2gt.ud.tokenize.text_from_sentences`)."""
    from .tokenize.output import text_from_sentences

    return text_from_sentences(sentences)


# --------------------------------------------------------------------------- columns
def _null(text: str) -> str | None:
    return None if text == "_" else text


def _token_lines(sentence: Sentence) -> tuple[list[str], list[list[str]]]:
    """``(comment lines, the 10 columns of each token line)`` exactly as :meth:`Sentence.serialize` writes them."""
    lines = sentence.serialize().split("\n")
    n_comments = len(sentence.comments)
    rows = [line.rstrip("\r").split("\t") for line in lines[n_comments:n_comments + len(sentence.tokens)]]
    return [c.rstrip("\r") for c in lines[:n_comments]], rows


def _head(text: str) -> int | None:
    return None if text == "_" else int(text)


def _node_id(value: Any) -> int | str:
    return f"{value[0]}{value[1]}{value[2]}" if isinstance(value, tuple) else int(value)


def enhanced_edges(sentence: Sentence) -> list[dict]:
    """The DEPS graph as edges ``{"head", "dependent", "label"}`` (head 0 = root), words and empty nodes."""
    edges = []
    for tok in sentence.tokens:
        tid = tok["id"]
        deps = tok["deps"]
        if (isinstance(tid, tuple) and tid[1] == "-") or not isinstance(deps, list):
            continue
        edges.extend({"head": _node_id(h), "dependent": _node_id(tid), "label": rel} for rel, h in deps)
    return edges


def sentence_dict(sentence: Sentence, spans: Sequence[Span | None]) -> dict:
    """One sentence as the JSON object of the module docstring (``spans`` from :func:`token_spans`)."""
    comments, rows = _token_lines(sentence)
    tokens, words, empty = [], [], []
    by_pos = {k: words_ for k, words_ in _surface(sentence)}
    for k, (tok, cols) in enumerate(zip(sentence.tokens, rows)):
        span = spans[k] if k < len(spans) else None
        start, end = (span if span is not None else (None, None))
        tid = tok["id"]
        if isinstance(tid, tuple) and tid[1] == ".":
            node = {"id": cols[0], "text": cols[1]}
            node.update((key, _null(c)) for key, c in zip(_WORD_KEYS, cols[2:]))
            node["head"] = _head(cols[6])
            empty.append(node)
            continue
        if k in by_pos:
            ids = [int(sentence.tokens[i]["id"]) for i in by_pos[k]]
            entry: dict[str, Any] = {"id": cols[0], "text": cols[1], "start_char": start, "end_char": end,
                                     "words": ids}
            if isinstance(tid, tuple):  # a multiword-token line: its MISC (and any other column it fills)
                entry["misc"] = _null(cols[9])
                entry.update((key, _null(c)) for key, c in zip(_WORD_KEYS[:-1], cols[2:9]) if c != "_")
            tokens.append(entry)
        if isinstance(tid, int):
            word = {"id": tid, "text": cols[1]}
            word.update((key, _null(c)) for key, c in zip(_WORD_KEYS, cols[2:]))
            word["head"] = _head(cols[6])
            word["start_char"], word["end_char"] = start, end
            words.append(word)
    placed = [sp for sp in spans if sp is not None]
    out: dict[str, Any] = {"id": sentence.sent_id, "text": sentence.text,
                           "start_char": placed[0][0] if placed else None,
                           "end_char": placed[-1][1] if placed else None,
                           "comments": comments, "tokens": tokens, "words": words}
    if any(isinstance(t["deps"], list) for t in sentence.tokens):
        out["enhanced"] = enhanced_edges(sentence)
    if empty:
        out["empty_nodes"] = empty
    return out


def _conllu_lines(d: dict) -> list[str]:
    """The CoNLL-U lines of one sentence dict (the inverse of :func:`sentence_dict`)."""
    def row(tid: str, form: str, entry: dict) -> str:
        cols = [tid, form] + ["_" if entry.get(k) is None else str(entry[k]) for k in _WORD_KEYS]
        return "\t".join(cols)

    lines = list(d.get("comments") or [])
    if not d.get("comments"):
        lines += [f"# sent_id = {d['id']}"] if d.get("id") is not None else []
        lines += [f"# text = {d['text']}"] if d.get("text") is not None else []
    mwt = {t["words"][0]: t for t in d.get("tokens", ()) if "-" in str(t["id"])}
    empty: dict[int, list[dict]] = {}
    for e in d.get("empty_nodes", ()):
        empty.setdefault(int(str(e["id"]).split(".")[0]), []).append(e)
    lines += [row(e["id"], e["text"], e) for e in empty.get(0, ())]
    for w in d["words"]:
        if w["id"] in mwt:
            t = mwt[w["id"]]
            lines.append(row(t["id"], t["text"], t))
        lines.append(row(str(w["id"]), w["text"], w))
        lines += [row(e["id"], e["text"], e) for e in empty.get(w["id"], ())]
    return lines


# --------------------------------------------------------------------------- the document
class Document(list):
    """The parsed sentences of one text (a ``list`` of :class:`~g2gt.ud.io.Sentence`, so ``for s in doc``,
    ``len(doc)`` and ``doc[0]`` work as on a list) plus :attr:`text` and character offsets (see the module
    docstring).

    Args:
        sentences: the sentences, in order.
        text: the original text (raw input); ``None`` builds it from the tokens (:func:`pretokenized_text`).
        model: the name of the model that made it (written in the JSON).
    """

    def __init__(self, sentences: Iterable[Sentence] = (), text: str | None = None, model: str | None = None) -> None:
        super().__init__(sentences)
        self.text = pretokenized_text(self) if text is None else text
        self.model = model

    @property
    def sentences(self) -> list[Sentence]:
        """The sentences (a plain list; Stanza's spelling)."""
        return list(self)

    def spans(self) -> list[list[Span | None]]:
        """Per sentence, the ``(start_char, end_char)`` of each entry of ``sentence.tokens`` (see
        :func:`token_spans`; computed on each call, so edits of the sentences are seen)."""
        return token_spans(self, self.text)

    @property
    def tokens(self) -> list[Token]:
        """Every surface token of the document, in order."""
        out = []
        for i, (s, spans) in enumerate(zip(self, self.spans())):
            for k, words in _surface(s):
                sp = spans[k] or (None, None)
                tid = s.tokens[k]["id"]
                out.append(Token(f"{tid[0]}-{tid[2]}" if isinstance(tid, tuple) else str(tid), s.tokens[k]["form"],
                                 sp[0], sp[1], tuple(int(s.tokens[j]["id"]) for j in words), i))
        return out

    @property
    def words(self) -> list[Word]:
        """Every syntactic word of the document, in order, with its columns and its token's span."""
        return [Word(**{k: v for k, v in w.items()}, sentence=i)
                for i, d in enumerate(self.to_dict()["sentences"]) for w in d["words"]]

    # ------------------------------------------------------------------ formats
    @property
    def entities(self) -> list[dict]:
        """Coreference entities of the ``Entity=`` annotations (``nlp(text, coref=True)``), each with its id,
        type and mentions (sentence index, 1-based word span, text): :func:`g2gt.ud.coref.io.entities`."""
        from .coref.io import entities

        return entities(self)

    def to_dict(self) -> dict:
        """The JSON object of the module docstring (plain dicts and lists), with ``"entities"``
        (:attr:`entities`) when a word's MISC has ``Entity=`` (``nlp(text, coref=True)``)."""
        out = {"model": self.model, "text": self.text,
               "sentences": [sentence_dict(s, sp) for s, sp in zip(self, self.spans())]}
        if any("Entity" in (w["misc"] or {}) for s in self for w in s.words):
            out["entities"] = self.entities
        return out

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as a JSON string (UTF-8 characters kept as they are, not escaped)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    @classmethod
    def from_dict(cls, data: dict) -> "Document":
        """The document :meth:`to_dict` wrote (``conllu()`` gives the same bytes). Keys it does not know are
        ignored, so the server's answer (with ``svg``, ``conllu``) reads too."""
        from .io import parse_conllu_string

        if not isinstance(data, dict) or not isinstance(data.get("sentences"), list):
            raise ValueError("Document.from_dict expects {'sentences': [...], ...} as Document.to_dict writes it")
        text = "".join("\n".join(_conllu_lines(d)) + "\n\n" for d in data["sentences"])
        sentences = parse_conllu_string(text, name="<json>") if text else []
        return cls(sentences, data.get("text"), data.get("model"))

    @classmethod
    def from_json(cls, text: str) -> "Document":
        """The document :meth:`to_json` wrote."""
        return cls.from_dict(json.loads(text))

    def conllu(self) -> str:
        """The CoNLL-U text of the sentences (what ``g2gt parse`` writes for the same input)."""
        return "".join(s.serialize() for s in self)

    # ------------------------------------------------------------------ bridges
    def to_stanza(self):
        """A ``stanza.models.common.doc.Document`` (words, multiword tokens, empty nodes, comments, columns),
        with ``text`` and every token's ``start_char`` / ``end_char`` (see :mod:`g2gt.ud.io.stanza`)."""
        from .io.stanza import document_from_sentences

        copies = [s.copy() for s in self]
        for s, spans in zip(copies, self.spans()):
            for k, _ in _surface(s):
                if spans[k] is not None:
                    tok = s.tokens[k]
                    misc = dict(tok["misc"]) if isinstance(tok["misc"], dict) else {}
                    misc.update(start_char=str(spans[k][0]), end_char=str(spans[k][1]))
                    tok["misc"] = misc
        doc = document_from_sentences(copies)
        doc.text = self.text
        return doc

    def to_graphs(self, max_distance: int = 8) -> list:
        """One :class:`g2gt.Graph` per sentence (:meth:`Sentence.to_graph`), relation ids from one vocabulary
        shared by the whole document (:func:`g2gt.ud.io.stanza.document_vocab`)."""
        from .io.stanza import document_vocab

        vocab = document_vocab(list(self))
        return [s.to_graph(vocab, max_distance) for s in self]

    def to_networkx(self, max_distance: int = 8) -> list:
        """One ``networkx.DiGraph`` per sentence (:meth:`g2gt.Graph.to_networkx`)."""
        return [g.to_networkx() for g in self.to_graphs(max_distance)]

    def to_pyg(self, max_distance: int = 8) -> list:
        """One ``torch_geometric.data.Data`` per sentence (:meth:`g2gt.Graph.to_pyg`)."""
        return [g.to_pyg() for g in self.to_graphs(max_distance)]

    def __repr__(self) -> str:
        words = sum(len(s) for s in self)
        return f"Document({len(self)} sentences, {words} words, {len(self.text)} characters)"

    def __reduce__(self):  # pickled with its sentences, text and model (worker processes return Documents)
        return (Document, (list(self), self.text, self.model))
