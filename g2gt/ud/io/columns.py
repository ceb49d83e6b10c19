"""The columns of a CoNLL-U token line: parsing them into the ``conllu`` library's values and writing them back
(a column whose value did not change is copied verbatim), and comment lines."""

from __future__ import annotations

import re
from typing import Any, Sequence

from conllu.models import Token
from conllu.parser import DEFAULT_FIELDS, parse_comment_line, serialize_field

__all__ = ["FIELDS", "parse_columns", "comment_pairs", "serialize_token", "comment_line"]

FIELDS: tuple[str, ...] = tuple(DEFAULT_FIELDS)
_INT_RE = re.compile(r"[1-9][0-9]*\Z")
_RANGE_RE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)\Z")
_EMPTY_RE = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)\Z")
_ANY_HEAD_RE = re.compile(r"(?:0|-?[1-9][0-9]*)\Z")
_DEP = r"(?:0|[1-9][0-9]*|[1-9][0-9]*-[1-9][0-9]*|[0-9]+\.[1-9][0-9]*)(?::[^\d:_\-|][^:|]*)+"
_DEPS_RE = re.compile(rf"{_DEP}(?:\|{_DEP})*\Z")  # HEAD:DEPREL pairs, as the conllu library reads them


def _parse_id(value: str) -> int | tuple[int, str, int]:
    if _INT_RE.match(value):
        return int(value)
    m = _RANGE_RE.match(value) or _EMPTY_RE.match(value)
    if not m:
        raise ValueError(f"ID {value!r} is not an integer, a range N-M or an empty node N.M")
    return (int(m.group(1)), "-" if "-" in value else ".", int(m.group(2)))


def _parse_dict(value: str) -> dict[str, str | None] | None:
    """FEATS / MISC: ``_`` -> None; ``A=1|B|C=x=y`` -> ``{"A": "1", "B": "", "C": "x=y"}``."""
    if value == "_":
        return None
    out: dict[str, str | None] = {}
    for part in value.split("|"):
        key, eq, val = part.partition("=")
        if key in ("", "_"):
            continue
        out[key] = (None if val in ("", "_") else val) if eq else ""
    return out


def _parse_deps(value: str) -> list[tuple[str, int | tuple[int, str, int]]] | str | None:
    """DEPS: ``_`` -> None; ``4:nsubj|6:nmod:poss`` -> ``[("nsubj", 4), ("nmod:poss", 6)]`` (the ``conllu``
    library's form); anything else stays a string."""
    if value == "_":
        return None
    if not _DEPS_RE.match(value):
        return value
    out: list[tuple[str, int | tuple[int, str, int]]] = []
    for part in value.split("|"):
        head, rel = part.split(":", 1)
        if "-" in head:
            a, b = head.split("-")
            if int(b) < int(a):
                raise ValueError(f"DEPS {value!r}: range {head} ends before it starts")
            out.append((rel, (int(a), "-", int(b))))
        elif "." in head:
            a, b = head.split(".")
            out.append((rel, (int(a), ".", int(b))))
        else:
            out.append((rel, int(head)))
    return out


def parse_columns(cols: Sequence[str]) -> Token:
    """The 10 validated columns of a token line -> :class:`conllu.models.Token` (the ``conllu``
    library's value types: ``_`` is None except in FORM, LEMMA, UPOS and DEPREL).

    Raises:
        ValueError: naming the column whose value cannot be parsed.
    """
    idv, form, lemma, upos, xpos, feats, head, deprel, deps, misc = cols
    if head == "_":
        h = None
    elif _ANY_HEAD_RE.match(head):
        h = int(head)
    else:
        raise ValueError(f"HEAD {head!r} is not an integer (expected 0..n or '_')")
    return Token(id=_parse_id(idv), form=form, lemma=lemma, upos=upos, xpos=None if xpos == "_" else xpos,
                 feats=_parse_dict(feats), head=h, deprel=deprel, deps=_parse_deps(deps), misc=_parse_dict(misc))


def _column(tok: Token, name: str) -> str:
    """One regenerated column: ``_`` for an empty value; a value a reader would split or reject
    (tab, newline, whitespace at either end) is an error, not a broken file."""
    text = serialize_field(tok.get(name))
    if text == "":
        return "_"
    if text != text.strip() or "\t" in text or "\n" in text:
        raise ValueError(f"cannot write {name.upper()} {text!r} of token {serialize_field(tok.get('id'))}: a CoNLL-U "
                         "column cannot hold a tab, a newline or whitespace at either end")
    return text


def serialize_token(tok: Token, raw: str | None) -> str:
    """One token line; columns whose parsed value still equals the original are copied verbatim."""
    if raw is None:
        return "\t".join(_column(tok, name) for name in FIELDS)
    cr = raw.endswith("\r")
    raw_cols = (raw[:-1] if cr else raw).split("\t")
    orig = parse_columns(raw_cols)
    if all(orig[name] == tok.get(name) for name in FIELDS):
        return raw
    out = [rc if orig[name] == tok.get(name) else _column(tok, name) for name, rc in zip(FIELDS, raw_cols, strict=True)]
    return "\t".join(out) + ("\r" if cr else "")


def comment_line(key: str, value: Any) -> str:
    return f"# {key} = {value}" if value else f"# {key}"


def comment_pairs(raw: str) -> list[tuple[str, Any]]:
    """The ``(key, value)`` pairs a comment line defines (none for a free comment)."""
    return parse_comment_line(raw.rstrip("\r"))
