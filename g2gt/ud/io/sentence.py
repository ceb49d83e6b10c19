"""One CoNLL-U sentence (:class:`Sentence`): its lines as read, and views over its syntactic words.

A sentence read from a file keeps the original text of every line (comments, token lines,
the blank lines after it), so :meth:`Sentence.serialize` gives back the input byte for byte;
a column of a token line is regenerated only when its parsed value was changed, a comment
line only when its key's value was changed (``sentence.metadata[key] = ...``).  Comments
keep their order, and a key that occurs twice (``# sent_id = a``, ``# sent_id = b``) keeps
both lines (``metadata`` holds the last value, as the ``conllu`` library does).

Sentences built from words (:mod:`g2gt.ud.io.build`) have no original lines and are serialised from
their rows. The word and token objects a sentence hands out are in :mod:`g2gt.ud.io.views`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from conllu.models import Metadata, Token, TokenList

from ...core.graph import ChainChannel, Graph, LabelVocab, edges_from_heads
from .columns import FIELDS, comment_line, comment_pairs, parse_columns, serialize_token
from .surface import sentence_spans, surface_tokens
from .surface import space_after as _space_after
from .views import Layout
from .whitespace import text_from_sentences

if TYPE_CHECKING:
    from .views import SurfaceToken, Word

__all__ = ["Sentence", "check_tree", "FIELDS", "parse_columns"]

# --------------------------------------------------------------------------- Sentence
@dataclass
class Sentence:
    """One CoNLL-U sentence: every line as read, plus views over its words and surface tokens.

    A sentence is a sequence of its syntactic words: ``len(sentence)``, ``sentence[i]`` (a
    :class:`~g2gt.ud.io.views.Word`, 0-based) and ``for word in sentence`` work as on a list;
    :attr:`words` and :attr:`tokens` are Stanza's spellings (words; surface tokens with their multiword
    tokens' words), :attr:`forms`, :attr:`heads`, :attr:`deprels` ... the columns as lists.

    The private fields keep the original line text so that :func:`write_conllu`
    reproduces the input byte for byte; a :class:`Sentence` built by hand leaves
    them empty and is serialised from ``rows``. ``_text`` / ``_text_start`` say which text the
    character offsets of the views point into (set by :class:`g2gt.ud.document.Document` to the
    document's text and where this sentence's search starts; by default the sentence's own text).

    Args:
        rows: the :class:`conllu.TokenList` of its token lines (multiword-token ranges, words, empty nodes;
            every column, as the ``conllu`` library parses it), comments in ``rows.metadata`` (the last value
            of each key).
        path: source file name, used in error messages.
        line: 1-based line number of the sentence's first line in ``path``.
    """

    rows: TokenList
    path: str = "<string>"
    line: int = 0
    _raw_tokens: list[str] | None = field(default=None, repr=False, compare=False)
    _raw_comments: list[str] | None = field(default=None, repr=False, compare=False)
    _token_lines: list[int] | None = field(default=None, repr=False, compare=False)
    _trailer: list[str] | None = field(default=None, repr=False, compare=False)
    _word_idx: list[int] | None = field(default=None, repr=False, compare=False)
    _text: str | None = field(default=None, repr=False, compare=False)
    _text_start: int = field(default=0, repr=False, compare=False)

    # ------------------------------------------------------------------ views
    @property
    def word_indices(self) -> list[int]:
        """Positions in :attr:`rows` of the syntactic words (integer ids), in order."""
        if self._word_idx is None or len(self._word_idx) > len(self.rows):
            self._word_idx = [k for k, t in enumerate(self.rows) if isinstance(t["id"], int)]
        return self._word_idx

    @property
    def word_rows(self) -> list[Token]:
        """The token lines of the syntactic words (``conllu`` dicts, integer ids), in order; writing into one
        edits the sentence."""
        rows = self.rows
        return [rows[k] for k in self.word_indices]

    @property
    def words(self) -> list[Word]:
        """The syntactic words as :class:`~g2gt.ud.io.views.Word` objects (``text``, ``lemma``, ``upos``,
        ``head_word``, ``children``, ``start_char`` ...), in order; views that read this sentence's columns."""
        return Layout(self).words

    @property
    def tokens(self) -> list[SurfaceToken]:
        """The surface tokens as :class:`~g2gt.ud.io.views.SurfaceToken` objects (``text``, ``start_char``,
        ``end_char``, ``space_after``, ``words``: several for a multiword token), in order."""
        return Layout(self).tokens

    def __iter__(self) -> Iterator[Word]:
        """The words (:attr:`words`)."""
        return iter(self.words)

    def __getitem__(self, i: int | slice) -> Word | list[Word]:
        """Word ``i`` (0-based; a slice gives a list)."""
        return self.words[i]

    @property
    def root(self) -> Word | None:
        """The first word whose head is 0 (``None`` before parsing)."""
        return next((w for w in self.words if w.head == 0), None)

    def char_spans(self) -> list[tuple[int, int] | None]:
        """``(start_char, end_char)`` of each line of :attr:`rows`; ``None`` for empty nodes.

        The offsets point into the document's text inside a :class:`~g2gt.ud.document.Document`, else :attr:`text`, else
        the forms joined as MISC says (see :func:`g2gt.ud.io.surface.sentence_spans`).

        Returns:
            One pair (or ``None``) per line of :attr:`rows`.
        """
        return sentence_spans(self, *self._offset_text())[0]

    def _offset_text(self) -> tuple[str, int]:
        if self._text is not None:
            return self._text, self._text_start
        if self.text is not None:
            return self.text, 0
        return text_from_sentences([self]), 0

    @property
    def forms(self) -> list[str]:
        return [t["form"] for t in self.word_rows]

    @property
    def lemmas(self) -> list[str]:
        return [t["lemma"] for t in self.word_rows]

    @property
    def upos(self) -> list[str]:
        """UPOS of each word, ``"_"`` where missing."""
        return [t["upos"] if t["upos"] else "_" for t in self.word_rows]

    @property
    def xpos(self) -> list[str | None]:
        return [t["xpos"] for t in self.word_rows]

    @property
    def heads(self) -> list[int | None]:
        """1-based head of each word (0 = root), ``None`` where the HEAD column is ``_``."""
        return [t["head"] for t in self.word_rows]

    @property
    def deprels(self) -> list[str | None]:
        """DEPREL of each word, ``None`` where the column is ``_``."""
        return [None if t["deprel"] in (None, "_") else t["deprel"] for t in self.word_rows]

    @property
    def space_after(self) -> list[bool]:
        """Whether whitespace follows each word in the text: only after the last word of a surface token, as
        its line's MISC says (``SpaceAfter=No``: none); the words inside a multiword token have none."""
        out = [False] * len(self)
        rows = self.rows
        for tok in surface_tokens(self):
            out[tok.words[-1]] = _space_after(rows[tok.row])
        return out

    def _repr_html_(self) -> str:
        """The dependency tree as an SVG (:func:`g2gt.ud.draw.draw_svg`) in a notebook."""
        from .svg import render_svg

        return render_svg(self)

    @property
    def metadata(self) -> dict[str, Any]:
        return self.rows.metadata

    @property
    def text(self) -> str | None:
        """The ``# text = ...`` comment, if any."""
        return self.rows.metadata.get("text")

    @property
    def sent_id(self) -> str | None:
        """The ``# sent_id = ...`` comment, if any."""
        return self.rows.metadata.get("sent_id")

    @property
    def comments(self) -> list[str]:
        """The comment lines as they will be written (verbatim unless a value was changed)."""
        return [c.rstrip("\r") for c in self._comment_lines()]

    @property
    def has_heads(self) -> bool:
        """True when every word has an integer HEAD."""
        return all(h is not None for h in self.heads)

    def __len__(self) -> int:
        """Number of syntactic words."""
        return len(self.word_indices)

    def word_line(self, i: int) -> int:
        """File line number of word ``i`` (0-based word index), for error messages.

        Args:
            i: 0-based word index.

        Returns:
            The line number.
        """
        return self.token_line(self.word_indices[i])

    def token_line(self, k: int) -> int:
        """File line number of ``tokens[k]``.

        Args:
            k: 0-based surface token index.

        Returns:
            The line number.
        """
        if self._token_lines is not None and k < len(self._token_lines):
            return self._token_lines[k]
        return self.line

    def __getstate__(self) -> dict:
        """Pickled without the document text its offsets point into (a :class:`~g2gt.ud.document.Document`
        pickles that once and points its sentences into it again)."""
        state = dict(self.__dict__)
        state.pop("_text", None)
        state.pop("_text_start", None)
        return state

    def __repr__(self) -> str:
        return f"Sentence(sent_id={self.sent_id!r}, words={len(self)}, path={self.path!r}, line={self.line})"

    # ------------------------------------------------------------------ edits
    def copy(self) -> "Sentence":
        """A deep copy (tokens, metadata and the original line text).

        Returns:
            The copy.
        """
        toks = TokenList([_copy_token(t) for t in self.rows], Metadata(_copy_value(dict(self.rows.metadata))),
                         default_fields=FIELDS)

        def dup(x: list | None) -> list | None:
            return None if x is None else list(x)

        return Sentence(toks, self.path, self.line, dup(self._raw_tokens), dup(self._raw_comments),
                        dup(self._token_lines), dup(self._trailer), dup(self._word_idx))

    def with_parse(self, heads: Sequence[int], deprels: Sequence[str], upos: Sequence[str] | None = None) -> "Sentence":
        """A deep copy with HEAD / DEPREL (and UPOS if given) replaced on the integer-id words.

        Everything else (multiword-token lines, empty nodes, comments, FEATS, DEPS,
        MISC ...) is untouched, and :func:`write_conllu` regenerates only the changed
        columns of the changed lines.

        Args:
            heads: 1-based head of each word (0 = root).
            deprels: the relation of each word.
            upos: the UPOS of each word (``None``: unchanged).

        Returns:
            The copy.

        Raises:
            ValueError: if a list's length differs from the number of words or a head
                is outside ``0 .. len(self)``.
        """
        self._check_parse(heads, deprels, upos)
        return self.copy()._write_parse(heads, deprels, upos)

    def set_parse(self, heads: Sequence[int], deprels: Sequence[str], upos: Sequence[str] | None = None
                  ) -> "Sentence":
        """:meth:`with_parse` written into this sentence instead of a copy; returns ``self``.

        For sentences you made and own. Checked before anything is written: on a ``ValueError`` the sentence is
        unchanged.

        Args:
            heads: 1-based head of each word (0 = root).
            deprels: the relation of each word.
            upos: the UPOS of each word (``None``: unchanged).

        Returns:
            ``self``.

        Raises:
            ValueError: as :meth:`with_parse`; the sentence is then unchanged.
        """
        self._check_parse(heads, deprels, upos)
        return self._write_parse(heads, deprels, upos)

    def _write_parse(self, heads: Sequence[int], deprels: Sequence[str], upos: Sequence[str] | None) -> "Sentence":
        tokens = self.rows
        for i, k in enumerate(self.word_indices):
            tok = tokens[k]
            tok["head"] = int(heads[i])
            tok["deprel"] = str(deprels[i]) if deprels[i] is not None else "_"
            if upos is not None:
                tok["upos"] = str(upos[i])
        return self

    def _check_parse(self, heads: Sequence[int], deprels: Sequence[str], upos: Sequence[str] | None) -> None:
        n = len(self)
        if len(heads) != n or len(deprels) != n or (upos is not None and len(upos) != n):
            raise ValueError(
                f"{self.path}:{self.line}: sentence {self.sent_id or ''} has {n} words but got "
                f"{len(heads)} heads, {len(deprels)} deprels" + ("" if upos is None else f", {len(upos)} upos")
            )
        for i, h in enumerate(heads):
            if not 0 <= int(h) <= n:
                raise ValueError(f"{self.path}:{self.word_line(i)}: head {int(h)} of word {i + 1} is outside 0..{n}")

    # ------------------------------------------------------------------ graphs
    def to_graph(self, rel_vocab: LabelVocab | None = None, max_distance: int = 8,
                 graph_channel: bool = True) -> Graph:
        """The sentence as a :class:`g2gt.Graph`.

        ``tokens`` = word forms; ``node_features = {"upos": [...]}``; channels
        ``"position"`` (:class:`ChainChannel` with clip distance ``max_distance``) and,
        when ``graph_channel`` and every word has a head, ``"deps"``: an
        :class:`EdgeChannel` built by :func:`g2gt.core.graph.edges_from_heads` (word -> head
        labelled ``rel↑``, head -> word ``rel↓``; ids from ``rel_vocab``, by default a
        :meth:`LabelVocab.for_dependencies` of this sentence's relations).
        ``meta`` holds ``sent_id``, ``text``, ``path`` and ``line``.

        Args:
            rel_vocab: relation ids (``None``: a :meth:`LabelVocab.for_dependencies` of this sentence's relations).
            max_distance: clip distance of the ``"position"`` channel.
            graph_channel: add the ``"deps"`` channel when every word has a head.

        Returns:
            The :class:`g2gt.Graph`.
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
        """CoNLL-U text of this sentence.

        Comment lines, token lines, then the blank line(s) that followed it in the input (one blank line if none did).

        Returns:
            The CoNLL-U text.
        """
        lines = self._comment_lines()
        raw = self._raw_tokens
        for k, tok in enumerate(self.rows):
            lines.append(serialize_token(tok, raw[k] if raw is not None and k < len(raw) else None))
        trailer = self._trailer if self._trailer else [""]
        return "\n".join(lines) + "\n" + "\n".join(trailer) + "\n"

    def _comment_lines(self) -> list[str]:
        """Comment lines in order: verbatim, except the line that gave a key its current value
        when that value was changed (regenerated) or the key was deleted (dropped, with all
        its earlier duplicates); keys that were added come last."""
        meta = self.rows.metadata
        if self._raw_comments is None:
            return [comment_line(k, v) for k, v in meta.items()]
        parsed = [comment_pairs(r) for r in self._raw_comments]
        last = {key: i for i, pairs in enumerate(parsed) for key, _ in pairs}
        out: list[str] = []
        for i, (raw, pairs) in enumerate(zip(self._raw_comments, parsed, strict=True)):
            same = True
            new: list[str] = []
            for key, value in pairs:
                if key not in meta:
                    same = False  # deleted key: drop its lines
                elif last[key] == i and meta[key] != value:
                    same = False
                    new.append(comment_line(key, meta[key]))
                else:
                    new.append(comment_line(key, value))
            if same:
                out.append(raw)
            else:
                out.extend(line + ("\r" if raw.endswith("\r") else "") for line in new)
        out.extend(comment_line(k, v) for k, v in meta.items() if k not in last)
        return out


def _copy_value(v: Any) -> Any:
    if isinstance(v, dict):
        return type(v)((k, _copy_value(x)) for k, x in v.items())
    if isinstance(v, list):
        return [_copy_value(x) for x in v]
    return v  # str, int, None, tuples of immutables


def _copy_token(tok: Token) -> Token:
    return Token((k, _copy_value(v)) for k, v in tok.items())


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
    state = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 done (reaches the root)
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
