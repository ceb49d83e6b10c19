"""Parsed sentences as the JSON of ``POST /v1/parse`` (plain dicts, ready for ``json.dumps``).

One sentence::

    {"id": "1", "text": "I don't know.", "start": 0, "end": 13,
     "words": [{"id": 1, "form": "I", "lemma": "I", "upos": "PRON", "xpos": "PRP", "feats": "Case=Nom|...",
                "head": 4, "deprel": "nsubj", "deps": "4:nsubj", "misc": null, "start": 0, "end": 1}, ...],
     "tokens": [{"id": "2-3", "form": "don't", "words": [2, 3], "start": 2, "end": 7}],
     "enhanced": [{"head": 4, "dependent": 1, "label": "nsubj"}, ...],       (with "enhanced": true)
     "empty_nodes": [{"id": "8.1", "form": "ran", ...}],                        (with "enhanced": true)
     "svg": "<svg ...>"}                                                         (with "svg": true)

``head`` is 0 for the root and null where the column is ``_``; columns that are ``_`` are null; offsets are
Python string indices (code points) into the request's text, null where a form was not found; ``tokens``
lists only multiword tokens (one surface token, several syntactic words).
"""

from __future__ import annotations

from typing import Any

from conllu.parser import serialize_field

from ..ud.io import Sentence
from .formats import Span

__all__ = ["sentence_json", "enhanced_edges"]


def _field(value: Any) -> str | None:
    text = serialize_field(value) if value is not None else ""
    return None if text in ("", "_") else text


def _node_id(value: Any) -> int | str:
    """An integer word id as it is; an empty node ``(8, '.', 1)`` as ``"8.1"``."""
    if isinstance(value, tuple):
        return f"{value[0]}{value[1]}{value[2]}"
    return int(value)


def enhanced_edges(sentence: Sentence) -> list[dict]:
    """The DEPS graph as edges ``{"head", "dependent", "label"}`` (head 0 = root), words and empty nodes."""
    edges = []
    for tok in sentence.tokens:
        tid = tok["id"]
        if isinstance(tid, tuple) and tid[1] == "-":
            continue
        deps = tok["deps"]
        if not isinstance(deps, list):
            continue
        for label, head in deps:
            edges.append({"head": _node_id(head), "dependent": _node_id(tid), "label": label})
    return edges


def _word(tok, span: Span | None) -> dict:
    head = tok["head"]
    return {
        "id": int(tok["id"]), "form": tok["form"], "lemma": _field(tok["lemma"]), "upos": _field(tok["upos"]),
        "xpos": _field(tok["xpos"]), "feats": _field(tok["feats"]), "head": None if head is None else int(head),
        "deprel": _field(tok["deprel"]), "deps": _field(tok["deps"]), "misc": _field(tok["misc"]),
        "start": span[0] if span else None, "end": span[1] if span else None,
    }


def sentence_json(sentence: Sentence, spans: tuple[Span | None, list[Span | None]] | None = None,
                  enhanced: bool = False, svg: str | None = None) -> dict:
    """One parsed sentence as a dict (see the module docstring); ``spans`` from :func:`formats.locate`."""
    sent_span, word_spans = spans if spans is not None else (None, [None] * len(sentence))
    words, tokens, empty = [], [], []
    k = 0
    for tok in sentence.tokens:
        tid = tok["id"]
        if isinstance(tid, tuple):
            if tid[1] == "-":
                first = word_spans[tid[0] - 1] if tid[0] - 1 < len(word_spans) else None
                tokens.append({"id": f"{tid[0]}-{tid[2]}", "form": tok["form"],
                               "words": list(range(tid[0], tid[2] + 1)),
                               "start": first[0] if first else None, "end": first[1] if first else None})
            elif enhanced:
                empty.append({"id": _node_id(tid), "form": tok["form"], "lemma": _field(tok["lemma"]),
                              "upos": _field(tok["upos"]), "deps": _field(tok["deps"])})
            continue
        words.append(_word(tok, word_spans[k] if k < len(word_spans) else None))
        k += 1
    out: dict[str, Any] = {
        "id": sentence.sent_id, "text": sentence.text,
        "start": sent_span[0] if sent_span else None, "end": sent_span[1] if sent_span else None,
        "words": words, "tokens": tokens,
    }
    if enhanced:
        out["enhanced"] = enhanced_edges(sentence)
        out["empty_nodes"] = empty
    if svg is not None:
        out["svg"] = svg
    return out
