"""Reading, validating and writing CoNLL-U files.

Built on the ``conllu`` library (:func:`conllu.parse_token_and_metadata` turns
each sentence block into a :class:`conllu.TokenList`), with two things added on
top:

* **validation** with messages that name the file and line and say what was
  expected (:class:`CoNLLUError`): wrong column count, bad or out-of-order ids,
  non-integer or out-of-range HEAD, empty file, comment block without words,
  bytes that are not UTF-8 (reported at the line of the bad byte);
* a **byte-identical round trip**: every sentence keeps the original text of its
  lines, and :func:`write_conllu` re-emits a line (or a column of it) verbatim
  unless its parsed value was changed.  Multiword-token lines (``3-4``), empty
  nodes (``5.1``), comments, DEPS, FEATS, MISC and every other column pass
  through untouched; :meth:`Sentence.with_parse` changes only HEAD / DEPREL
  (and optionally UPOS) of the syntactic words.

Example::

    sents = read_conllu("en_ewt-ud-dev.conllu")
    s = sents[0]
    s.forms, s.heads, s.deprels          # views over the integer-id words
    g = s.to_graph()                     # g2gt.Graph with "position" + "deps" channels
    write_conllu([s.with_parse(h, r) for s, h, r in ...], "pred.conllu")
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from typing import IO, Any, Iterable, Sequence

from conllu import parse_token_and_metadata
from conllu.exceptions import ParseException
from conllu.models import Token, TokenList
from conllu.parser import DEFAULT_FIELDS, parse_comment_line, parse_line, serialize_field

from ..graph import ChainChannel, Graph, LabelVocab, edges_from_heads

__all__ = [
    "CoNLLUError",
    "Sentence",
    "read_conllu",
    "parse_conllu_string",
    "write_conllu",
    "sentence_from_words",
    "sentence_from_tokens",
    "check_tree",
]

FIELDS: tuple[str, ...] = tuple(DEFAULT_FIELDS)
_COL = {name: i for i, name in enumerate(FIELDS)}
_INT_RE = re.compile(r"[1-9][0-9]*\Z")
_RANGE_RE = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)\Z")
_EMPTY_RE = re.compile(r"(0|[1-9][0-9]*)\.([1-9][0-9]*)\Z")
_HEAD_RE = re.compile(r"(0|[1-9][0-9]*)\Z")


class CoNLLUError(ValueError):
    """Malformed CoNLL-U input. ``str(err)`` is ``"FILE:LINE: what is wrong (expected ...)"``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path = str(path)
        self.line = int(line)
        self.reason = message
        super().__init__(f"{self.path}:{self.line}: {message}")


# --------------------------------------------------------------------------- Sentence
@dataclass
class Sentence:
    """One CoNLL-U sentence: every line as read, plus views over the syntactic words.

    Args:
        tokens: the :class:`conllu.TokenList` (MWT ranges, empty nodes, all columns;
            comments in ``tokens.metadata``).
        path: source file name, used in error messages.
        line: 1-based line number of the sentence's first line in ``path``.

    The private fields keep the original line text so that :func:`write_conllu`
    reproduces the input byte for byte; a :class:`Sentence` built by hand leaves
    them empty and is serialised from ``tokens``.
    """

    tokens: TokenList
    path: str = "<string>"
    line: int = 0
    _raw_tokens: list[str | None] | None = field(default=None, repr=False, compare=False)
    _raw_comments: list[str] | None = field(default=None, repr=False, compare=False)
    _token_lines: list[int] | None = field(default=None, repr=False, compare=False)
    _trailer: list[str] | None = field(default=None, repr=False, compare=False)
    _word_idx: list[int] | None = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ views
    @property
    def word_indices(self) -> list[int]:
        """Positions in ``tokens`` of the syntactic words (integer ids), in order."""
        if self._word_idx is None or len(self._word_idx) > len(self.tokens):
            self._word_idx = [k for k, t in enumerate(self.tokens) if isinstance(t["id"], int)]
        return self._word_idx

    @property
    def words(self) -> list[Token]:
        """The syntactic-word tokens (integer ids), in order."""
        toks = self.tokens
        return [toks[k] for k in self.word_indices]

    @property
    def forms(self) -> list[str]:
        return [t["form"] for t in self.words]

    @property
    def lemmas(self) -> list[str]:
        return [t["lemma"] for t in self.words]

    @property
    def upos(self) -> list[str]:
        """UPOS of each word, ``"_"`` where missing."""
        return [t["upos"] if t["upos"] else "_" for t in self.words]

    @property
    def xpos(self) -> list[str | None]:
        return [t["xpos"] for t in self.words]

    @property
    def heads(self) -> list[int | None]:
        """1-based head of each word (0 = root), ``None`` where the HEAD column is ``_``."""
        return [t["head"] for t in self.words]

    @property
    def deprels(self) -> list[str | None]:
        """DEPREL of each word, ``None`` where the column is ``_``."""
        return [None if t["deprel"] in (None, "_") else t["deprel"] for t in self.words]

    @property
    def space_after(self) -> list[bool]:
        """Whether each word is followed by a space (``SpaceAfter=No`` in MISC, on the word or
        on the multiword token that ends at it)."""
        out = []
        mwt_end: dict[int, bool] = {}
        for t in self.tokens:
            tid = t["id"]
            if isinstance(tid, tuple) and tid[1] == "-":
                mwt_end[tid[2]] = _space_after(t)
        for t in self.words:
            out.append(mwt_end.get(t["id"], True) and _space_after(t))
        return out

    @property
    def metadata(self) -> dict[str, Any]:
        return self.tokens.metadata

    @property
    def text(self) -> str | None:
        """The ``# text = ...`` comment, if any."""
        return self.tokens.metadata.get("text")

    @property
    def sent_id(self) -> str | None:
        """The ``# sent_id = ...`` comment, if any."""
        return self.tokens.metadata.get("sent_id")

    @property
    def has_heads(self) -> bool:
        """True when every word has an integer HEAD."""
        return all(h is not None for h in self.heads)

    def __len__(self) -> int:
        """Number of syntactic words."""
        return len(self.word_indices)

    def word_line(self, i: int) -> int:
        """File line number of word ``i`` (0-based word index), for error messages."""
        k = self.word_indices[i]
        if self._token_lines is not None and k < len(self._token_lines):
            return self._token_lines[k]
        return self.line

    def token_line(self, k: int) -> int:
        """File line number of ``tokens[k]``."""
        if self._token_lines is not None and k < len(self._token_lines):
            return self._token_lines[k]
        return self.line

    def __repr__(self) -> str:
        return f"Sentence(sent_id={self.sent_id!r}, words={len(self)}, path={self.path!r}, line={self.line})"

    # ------------------------------------------------------------------ edits
    def copy(self) -> "Sentence":
        """A deep copy (tokens, metadata and the original line text)."""
        toks = TokenList([_copy_token(t) for t in self.tokens], _copy_value(dict(self.tokens.metadata)),
                         default_fields=FIELDS)
        return Sentence(
            toks, self.path, self.line,
            None if self._raw_tokens is None else list(self._raw_tokens),
            None if self._raw_comments is None else list(self._raw_comments),
            None if self._token_lines is None else list(self._token_lines),
            None if self._trailer is None else list(self._trailer),
            None if self._word_idx is None else list(self._word_idx),
        )

    def with_parse(self, heads: Sequence[int], deprels: Sequence[str], upos: Sequence[str] | None = None) -> "Sentence":
        """A deep copy with HEAD / DEPREL (and UPOS if given) replaced on the integer-id words.

        Everything else (multiword-token lines, empty nodes, comments, FEATS, DEPS,
        MISC ...) is untouched, and :func:`write_conllu` regenerates only the changed
        columns of the changed lines.

        Raises:
            ValueError: if a list's length differs from the number of words or a head
                is outside ``0 .. len(self)``.
        """
        n = len(self)
        if len(heads) != n or len(deprels) != n or (upos is not None and len(upos) != n):
            raise ValueError(
                f"{self.path}:{self.line}: sentence {self.sent_id or ''} has {n} words but got "
                f"{len(heads)} heads, {len(deprels)} deprels" + ("" if upos is None else f", {len(upos)} upos")
            )
        out = self.copy()
        for i, k in enumerate(out.word_indices):
            h = int(heads[i])
            if not 0 <= h <= n:
                raise ValueError(f"{self.path}:{self.word_line(i)}: head {h} of word {i + 1} is outside 0..{n}")
            tok = out.tokens[k]
            tok["head"] = h
            tok["deprel"] = str(deprels[i]) if deprels[i] is not None else "_"
            if upos is not None:
                tok["upos"] = str(upos[i])
        return out

    # ------------------------------------------------------------------ graphs
    def to_graph(self, rel_vocab: LabelVocab | None = None, max_distance: int = 8,
                 graph_channel: bool = True) -> Graph:
        """The sentence as a :class:`g2gt.Graph`.

        ``tokens`` = word forms; ``node_features = {"upos": [...]}``; channels
        ``"position"`` (:class:`ChainChannel` with clip distance ``max_distance``) and,
        when ``graph_channel`` and every word has a head, ``"deps"``: an
        :class:`EdgeChannel` built by :func:`g2gt.graph.edges_from_heads` (word -> head
        labelled ``rel↑``, head -> word ``rel↓``; ids from ``rel_vocab``, by default a
        :meth:`LabelVocab.for_dependencies` of this sentence's relations).
        ``meta`` holds ``sent_id``, ``text``, ``path`` and ``line``.
        """
        channels: dict[str, Any] = {"position": ChainChannel(max_distance)}
        heads = self.heads
        if graph_channel and heads and all(h is not None for h in heads):
            rels = [r if r is not None else "_" for r in self.deprels]
            vocab = rel_vocab if rel_vocab is not None else LabelVocab.for_dependencies(sorted(set(rels)))
            channels["deps"] = edges_from_heads([int(h) for h in heads], rels, vocab)  # type: ignore[arg-type]
        meta = {"sent_id": self.sent_id, "text": self.text, "path": self.path, "line": self.line}
        return Graph(self.forms, channels, {"upos": self.upos}, meta)

    # ------------------------------------------------------------------ output
    def serialize(self) -> str:
        """CoNLL-U text of this sentence (comment lines, token lines, blank line(s))."""
        lines = self._comment_lines()
        toks = self.tokens
        raw = self._raw_tokens
        for k, tok in enumerate(toks):
            r = raw[k] if raw is not None and k < len(raw) else None
            lines.append(_serialize_token(tok, r))
        trailer = self._trailer if self._trailer else [""]
        return "\n".join(lines) + "\n" + "\n".join(trailer) + "\n"

    def _comment_lines(self) -> list[str]:
        meta = self.tokens.metadata
        if self._raw_comments is None:
            return [f"# {k} = {v}" if v else f"# {k}" for k, v in meta.items()]
        out: list[str] = []
        seen: set[str] = set()
        for raw in self._raw_comments:
            pairs = parse_comment_line(raw.rstrip("\r").strip())
            if not pairs:
                out.append(raw)  # free-form comment, kept as is
                continue
            keep = True
            regenerated: list[str] = []
            for key, value in pairs:
                seen.add(key)
                if key not in meta:
                    keep = False
                elif meta[key] != value:
                    keep = False
                    v = meta[key]
                    regenerated.append(f"# {key} = {v}" if v else f"# {key}")
                else:
                    regenerated.append(f"# {key} = {value}" if value else f"# {key}")
            out.extend([raw] if keep else regenerated)
        for key, v in meta.items():
            if key not in seen:
                out.append(f"# {key} = {v}" if v else f"# {key}")
        return out


def _space_after(tok: Token) -> bool:
    misc = tok.get("misc")
    return not (isinstance(misc, dict) and misc.get("SpaceAfter") == "No")


def _copy_value(v: Any) -> Any:
    if isinstance(v, dict):
        return type(v)((k, _copy_value(x)) for k, x in v.items())
    if isinstance(v, list):
        return [_copy_value(x) for x in v]
    return v  # str, int, None, tuples of immutables


def _copy_token(tok: Token) -> Token:
    return Token((k, _copy_value(v)) for k, v in tok.items())


def _serialize_token(tok: Token, raw: str | None) -> str:
    """One token line; columns whose parsed value still equals the original are copied verbatim."""
    cols = [serialize_field(tok.get(name)) for name in FIELDS]
    if raw is None:
        return "\t".join(cols)
    text = raw.rstrip("\r")
    raw_cols = text.split("\t")
    if raw_cols == cols:
        return raw
    if len(raw_cols) != len(FIELDS):
        return "\t".join(cols)
    orig = parse_line(text, FIELDS)
    out = [rc if orig[name] == tok.get(name) else c for name, rc, c in zip(FIELDS, raw_cols, cols)]
    line = "\t".join(out)
    return line + ("\r" if raw.endswith("\r") else "")


# --------------------------------------------------------------------------- reading
def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise CoNLLUError(name, line, f"byte 0x{data[e.start]:02x} at column {col} is not valid UTF-8 "
                                      "(expected a UTF-8 encoded file)") from None


def _read_source(source: str | os.PathLike | IO[str] | IO[bytes], name: str | None) -> tuple[str, str]:
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as f:
            data = f.read()
        return _decode(data, name or path), name or path
    label = name or getattr(source, "name", None) or "<stream>"
    content = source.read()
    if isinstance(content, bytes):
        return _decode(content, str(label)), str(label)
    return content, str(label)


def read_conllu(source: str | os.PathLike | IO[str] | IO[bytes], *, name: str | None = None,
                require_heads: bool = False) -> list[Sentence]:
    """Read and validate a CoNLL-U file.

    Args:
        source: a path, or an open text / binary stream.
        name: file name used in messages (default: the path or the stream's ``name``).
        require_heads: reject ``_`` in the HEAD column of syntactic words.

    Returns:
        The sentences in file order; ``write_conllu`` of them reproduces the file.

    Raises:
        CoNLLUError: ``"FILE:LINE: ..."`` for the first problem found: a token line
            without exactly 10 tab-separated columns, an empty column, an id that is not
            ``N``, ``N-M`` or ``N.M`` or is out of order (words must be numbered 1, 2, ...),
            a HEAD that is not an integer in ``0..n`` (or ``_``), a comment block with no
            words, an empty file, or bytes that are not UTF-8.
        FileNotFoundError: if the path does not exist.
    """
    text, label = _read_source(source, name)
    return _parse_text(text, label, require_heads)


def parse_conllu_string(text: str, name: str = "<string>", *, require_heads: bool = False) -> list[Sentence]:
    """Like :func:`read_conllu` for CoNLL-U text held in a string."""
    return _parse_text(text, name, require_heads)


def _parse_text(text: str, label: str, require_heads: bool) -> list[Sentence]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    sentences: list[Sentence] = []
    block: list[str] = []
    start = 0
    i = 0
    nlines = len(lines)
    while i < nlines:
        if lines[i].strip() == "":
            if sentences and not block:
                trailer = sentences[-1]._trailer
                assert trailer is not None
                trailer.append(lines[i])
            elif block:
                sentences.append(_parse_block(block, start + 1, label, require_heads))
                sentences[-1]._trailer = [lines[i]]
                block = []
            i += 1
            continue
        if not block:
            start = i
        block.append(lines[i])
        i += 1
    if block:
        sentences.append(_parse_block(block, start + 1, label, require_heads))
        sentences[-1]._trailer = []
    if not sentences:
        raise CoNLLUError(label, max(1, nlines), "empty file (expected at least one sentence of "
                                                 "tab-separated token lines)")
    return sentences


def _parse_block(block: list[str], first_line: int, label: str, require_heads: bool) -> Sentence:
    comments: list[str] = []
    token_lines: list[str] = []
    line_nos: list[int] = []
    n_words = 0
    last_empty = (0, 0)  # (word id, sub id) of the last empty node
    pending_range_end = 0
    head_checks: list[tuple[int, str]] = []
    for off, raw in enumerate(block):
        ln = first_line + off
        line = raw.rstrip("\r")
        if line.startswith("#"):
            if token_lines:
                raise CoNLLUError(label, ln, "comment line inside a sentence (expected comments only before "
                                             "the first token line)")
            comments.append(raw)
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise CoNLLUError(label, ln, f"found {len(cols)} tab-separated column(s), expected 10 "
                                         "(ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC)")
        for c, val in enumerate(cols):
            if val == "" or val != val.strip():
                raise CoNLLUError(label, ln, f"column {c + 1} ({FIELDS[c].upper()}) is empty or has leading/"
                                             "trailing whitespace (expected a value or '_')")
        tid = cols[0]
        if _INT_RE.match(tid):
            k = int(tid)
            if k != n_words + 1:
                raise CoNLLUError(label, ln, f"word id {k} out of order (expected {n_words + 1})")
            n_words = k
            head = cols[6]
            if head == "_":
                if require_heads:
                    raise CoNLLUError(label, ln, "HEAD is '_' (expected an integer head, 0 for the root)")
            elif not _HEAD_RE.match(head):
                raise CoNLLUError(label, ln, f"HEAD {head!r} is not an integer (expected 0..n or '_')")
            else:
                head_checks.append((ln, head))
        else:
            m = _RANGE_RE.match(tid)
            if m:
                a, b = int(m.group(1)), int(m.group(2))
                if a != n_words + 1 or b <= a:
                    raise CoNLLUError(label, ln, f"multiword token range {tid} out of order (expected "
                                                 f"{n_words + 1}-M with M > {n_words + 1})")
                pending_range_end = max(pending_range_end, b)
            else:
                m = _EMPTY_RE.match(tid)
                if not m:
                    raise CoNLLUError(label, ln, f"ID {tid!r} is not an integer, a range N-M or an empty "
                                                 "node N.M")
                a, b = int(m.group(1)), int(m.group(2))
                expected_sub = last_empty[1] + 1 if last_empty[0] == a else 1
                if a != n_words or b != expected_sub:
                    raise CoNLLUError(label, ln, f"empty node {tid} out of order (expected "
                                                 f"{n_words}.{expected_sub if a == n_words else 1})")
                last_empty = (a, b)
        token_lines.append(raw)
        line_nos.append(ln)
    if not token_lines:
        raise CoNLLUError(label, first_line, "empty sentence: comment lines not followed by any token line")
    if n_words == 0:
        raise CoNLLUError(label, first_line, "sentence has no syntactic words (expected word ids 1, 2, ...)")
    if pending_range_end > n_words:
        raise CoNLLUError(label, first_line, f"a multiword token ends at word {pending_range_end} but the "
                                             f"sentence has {n_words} words")
    for ln, head in head_checks:
        if int(head) > n_words:
            raise CoNLLUError(label, ln, f"HEAD {head} is out of range (expected 0..{n_words})")
    try:
        toks = parse_token_and_metadata("\n".join(comments + token_lines), fields=FIELDS)
    except (ParseException, ValueError) as e:
        raise CoNLLUError(label, first_line, f"cannot parse sentence: {e}") from None
    word_idx = [k for k, t in enumerate(toks) if isinstance(t["id"], int)]
    return Sentence(toks, label, first_line, list(token_lines), comments, line_nos, None, word_idx)


# --------------------------------------------------------------------------- writing
def write_conllu(sentences: Iterable[Sentence], dest: str | os.PathLike | IO[str]) -> None:
    """Write sentences as CoNLL-U (UTF-8, ``\\n`` line ends).

    Sentences read by :func:`read_conllu` are reproduced byte for byte except for the
    columns whose values were changed (e.g. by :meth:`Sentence.with_parse`).  A path
    is written atomically (temporary file + rename).
    """
    if isinstance(dest, (str, os.PathLike)):
        path = os.fspath(dest)
        tmp = f"{path}.tmp{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8", newline="") as f:
                _write(sentences, f)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    else:
        _write(sentences, dest)


def _write(sentences: Iterable[Sentence], f: IO[str]) -> None:
    prev_open = False  # previous sentence ended without a blank line
    for s in sentences:
        if prev_open:
            f.write("\n")
        f.write(s.serialize())
        prev_open = s._trailer is not None and len(s._trailer) == 0


def to_conllu_string(sentences: Iterable[Sentence]) -> str:
    """The CoNLL-U text :func:`write_conllu` would write."""
    buf = io.StringIO()
    _write(sentences, buf)
    return buf.getvalue()


# --------------------------------------------------------------------------- building
def sentence_from_words(words: Sequence[str], text: str | None = None, sent_id: str | None = None,
                        space_after: Sequence[bool] | None = None) -> Sentence:
    """A sentence with forms only (no parse) for raw text to be parsed.

    Every column but ID, FORM and MISC is ``_``; MISC gets ``SpaceAfter=No`` where
    ``space_after[i]`` is False.  ``# sent_id`` / ``# text`` comments are added when given
    (``text`` defaults to the words joined according to ``space_after``).
    """
    if space_after is not None and len(space_after) != len(words):
        raise ValueError(f"space_after has {len(space_after)} entries for {len(words)} words")
    if not words:
        raise ValueError("a sentence needs at least one word")
    toks = []
    for i, w in enumerate(words):
        if not w or any(ch in w for ch in "\t\n"):
            raise ValueError(f"word {i + 1} {w!r} is empty or contains a tab/newline")
        misc = None if space_after is None or space_after[i] else {"SpaceAfter": "No"}
        toks.append(Token(id=i + 1, form=w, lemma="_", upos="_", xpos=None, feats=None, head=None,
                          deprel="_", deps=None, misc=misc))
    if text is None:
        sa = space_after if space_after is not None else [True] * len(words)
        text = "".join(w + (" " if s else "") for w, s in zip(words, sa)).rstrip(" ")
    meta: dict[str, Any] = {}
    if sent_id is not None:
        meta["sent_id"] = sent_id
    meta["text"] = text
    from conllu.models import Metadata

    tl = TokenList(toks, Metadata(meta), default_fields=FIELDS)
    return Sentence(tl, "<text>", 0)


def sentence_from_tokens(tokens: Sequence[tuple[str, Sequence[str], bool]], text: str | None = None,
                         sent_id: str | None = None) -> Sentence:
    """Like :func:`sentence_from_words` for surface tokens that may hold several
    syntactic words: each item is ``(surface, words, space_after)``; a token with more
    than one word becomes a multiword-token line ``a-b`` (carrying ``SpaceAfter=No``)
    followed by its word lines, as UD English EWT writes ``don't`` -> ``do n't``."""
    from conllu.models import Metadata

    if not tokens:
        raise ValueError("a sentence needs at least one token")
    toks: list[Token] = []
    k = 0
    for surface, words, space in tokens:
        words = list(words) or [surface]
        for w in [surface, *words]:
            if not w or any(ch in w for ch in "\t\n"):
                raise ValueError(f"token {surface!r} has an empty word or one with a tab/newline")
        misc = None if space else {"SpaceAfter": "No"}
        if len(words) > 1:
            toks.append(Token(id=(k + 1, "-", k + len(words)), form=surface, lemma="_", upos="_", xpos=None,
                              feats=None, head=None, deprel="_", deps=None, misc=misc))
            for w in words:
                k += 1
                toks.append(Token(id=k, form=w, lemma="_", upos="_", xpos=None, feats=None, head=None,
                                  deprel="_", deps=None, misc=None))
        else:
            k += 1
            toks.append(Token(id=k, form=words[0], lemma="_", upos="_", xpos=None, feats=None, head=None,
                              deprel="_", deps=None, misc=misc))
    if text is None:
        text = "".join(s + (" " if sp else "") for s, _, sp in tokens).rstrip(" ")
    meta: dict[str, Any] = {}
    if sent_id is not None:
        meta["sent_id"] = sent_id
    meta["text"] = text
    return Sentence(TokenList(toks, Metadata(meta), default_fields=FIELDS), "<text>", 0)


def check_tree(heads: Sequence[int]) -> str | None:
    """``None`` if ``heads`` (1-based heads of words 1..n, 0 = root) form a tree with
    exactly one root; otherwise the reason, e.g. ``"cycle 3->5->3"``, ``"no root"``,
    ``"several roots: words 2, 5"`` or ``"head 9 of word 4 is outside 0..7"``."""
    n = len(heads)
    if n == 0:
        return "no words"
    for i, h in enumerate(heads):
        if h is None:
            return f"word {i + 1} has no head"
        if not 0 <= int(h) <= n:
            return f"head {h} of word {i + 1} is outside 0..{n}"
        if int(h) == i + 1:
            return f"word {i + 1} is its own head"
    roots = [i + 1 for i, h in enumerate(heads) if int(h) == 0]
    state = [0] * (n + 1)  # 0 unseen, 1 on current path, 2 done (reaches root)
    state[0] = 2
    for start in range(1, n + 1):
        path = []
        v = start
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = int(heads[v - 1])
        if state[v] == 1:
            cyc = path[path.index(v):]
            return "cycle " + "->".join(str(x) for x in cyc + [v])
        for u in path:
            state[u] = 2
    if not roots:
        return "no root"
    if len(roots) > 1:
        return "several roots: words " + ", ".join(map(str, roots))
    return None
