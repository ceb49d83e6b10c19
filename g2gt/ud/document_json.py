"""The JSON of a :class:`~g2gt.ud.document.Document` (see its module docstring), one sentence at a time: each
column as its CoNLL-U text (``None`` for ``_``), so that :func:`conllu_lines` writes the same bytes back."""

from __future__ import annotations

from typing import Any, Sequence

from .io import Sentence
from .io.surface import surface_tokens

__all__ = ["sentence_dict", "conllu_lines", "enhanced_edges"]

Span = tuple[int, int]
_WORD_KEYS = ("lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc")


def _null(text: str) -> str | None:
    return None if text == "_" else text


def _token_lines(sentence: Sentence) -> tuple[list[str], list[list[str]]]:
    """``(comment lines, the 10 columns of each token line)`` exactly as :meth:`Sentence.serialize` writes them."""
    lines = sentence.serialize().split("\n")
    n_comments = len(sentence.comments)
    rows = [line.rstrip("\r").split("\t") for line in lines[n_comments:n_comments + len(sentence.rows)]]
    return [c.rstrip("\r") for c in lines[:n_comments]], rows


def _head(text: str) -> int | None:
    return None if text == "_" else int(text)


def _node_id(value: Any) -> int | str:
    return f"{value[0]}{value[1]}{value[2]}" if isinstance(value, tuple) else int(value)


def enhanced_edges(sentence: Sentence) -> list[dict]:
    """The DEPS graph as edges ``{"head", "dependent", "label"}`` (head 0 = root), words and empty nodes."""
    edges = []
    for tok in sentence.rows:
        tid = tok["id"]
        deps = tok["deps"]
        if (isinstance(tid, tuple) and tid[1] == "-") or not isinstance(deps, list):
            continue
        edges.extend({"head": _node_id(h), "dependent": _node_id(tid), "label": rel} for rel, h in deps)
    return edges


def sentence_dict(sentence: Sentence, spans: Sequence[Span | None]) -> dict:
    """One sentence as the JSON object of :mod:`g2gt.ud.document` (``spans``: the span of each of its rows,
    :func:`g2gt.ud.io.surface.sentence_spans`)."""
    comments, rows = _token_lines(sentence)
    tokens, words, empty = [], [], []
    by_pos = {t.row: t.word_rows for t in surface_tokens(sentence)}
    for k, (tok, cols) in enumerate(zip(sentence.rows, rows)):
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
            ids = [int(sentence.rows[i]["id"]) for i in by_pos[k]]
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
    if any(isinstance(t["deps"], list) for t in sentence.rows):
        out["enhanced"] = enhanced_edges(sentence)
    if empty:
        out["empty_nodes"] = empty
    return out


def conllu_lines(d: dict) -> list[str]:
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
