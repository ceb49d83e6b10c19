"""Word and surface-token objects over a :class:`~g2gt.ud.io.Sentence`, named as in Stanza and spaCy.

    for word in sentence:                   # Word: text, lemma, upos, xpos, feats, head, head_word, deprel ...
        print(word.text, word.lemma, word.upos, word.deprel, word.head_word.text if word.head_word else "ROOT")
    for token in sentence.tokens:           # SurfaceToken: text, start_char, end_char, space_after, words
        print(token.text, [w.text for w in token.words])

The objects are views: they hold the sentence and a position and read the sentence's columns when asked, so
making them costs one small object per word and nothing is copied. Values follow the CoNLL-U columns with
``_`` read as ``None`` (``feats`` / ``misc``: a dict, empty for ``_``). Character offsets are Python string
indices into the text the sentence came from (a document's :attr:`~g2gt.ud.document.Document.text`, see
:meth:`Sentence.char_spans`); a word of a multiword token has its token's span.
"""

from __future__ import annotations

from typing import Any

from .surface import space_after, surface_tokens

__all__ = ["Layout", "Word", "SurfaceToken"]


class Layout:
    """The words and surface tokens of one sentence, made when first asked and shared by the views of one
    :attr:`Sentence.words` / :attr:`Sentence.tokens` call (so that ``word.head_word`` is an object of the same
    list). Character spans are computed once, on the first offset asked.

    Args:
        sentence: the :class:`~g2gt.ud.io.Sentence`.
    """

    __slots__ = ("sentence", "_words", "_tokens", "_spans", "_children", "_surface", "_space")

    def __init__(self, sentence: Any) -> None:
        self.sentence = sentence
        self._words: list[Word] | None = None
        self._tokens: list[SurfaceToken] | None = None
        self._spans: list | None = None
        self._children: dict[int, list[Word]] | None = None
        self._surface: list | None = None
        self._space: list[bool] | None = None

    @property
    def words(self) -> list["Word"]:
        if self._words is None:
            rows = self.sentence.rows
            self._words = [Word(self, i, k, rows[k]) for i, k in enumerate(self.sentence.word_indices)]
        return self._words

    @property
    def surface(self) -> list:
        if self._surface is None:
            self._surface = surface_tokens(self.sentence)
        return self._surface

    @property
    def tokens(self) -> list["SurfaceToken"]:
        if self._tokens is None:
            self._tokens = [SurfaceToken(self, i) for i in range(len(self.surface))]
        return self._tokens

    def span(self, row: int) -> tuple[int | None, int | None]:
        """``(start_char, end_char)`` of line ``row`` of the sentence, ``(None, None)`` when unknown."""
        if self._spans is None:
            self._spans = self.sentence.char_spans()
        sp = self._spans[row] if row < len(self._spans) else None
        return sp if sp is not None else (None, None)

    def space_after(self, i: int) -> bool:
        """Whether whitespace follows word ``i`` (0-based): :attr:`Sentence.space_after`."""
        if self._space is None:
            self._space = self.sentence.space_after
        return self._space[i]

    def children(self, i: int) -> list["Word"]:
        """The words whose head is word ``i`` (0-based), in order."""
        if self._children is None:
            self._children = {}
            for w in self.words:
                h = w.head
                if h:
                    self._children.setdefault(h - 1, []).append(w)
        return self._children.get(i, [])

    def token_of(self, i: int) -> "SurfaceToken":
        """The surface token that word ``i`` (0-based) belongs to."""
        for tok in self.tokens:
            if i in self.surface[tok.index].words:
                return tok
        raise IndexError(f"word {i} is outside the sentence's {len(self.words)} words")


def _null(value: Any) -> Any:
    return None if value == "_" else value


class Word:
    """One syntactic word (a CoNLL-U line with an integer id): Stanza's ``Word``, spaCy's ``Token``.

    Attributes:
        sentence: the :class:`~g2gt.ud.io.Sentence` it belongs to.
        index: its 0-based position in the sentence (``id - 1`` in a well-formed sentence).

    Args:
        layout: the sentence's shared :class:`Layout` (views are made by :attr:`Sentence.words`, not by hand).
        index: its 0-based position among the words.
        k: its position in the sentence's ``rows``.
        row: its token line (a ``conllu`` dict).
    """

    __slots__ = ("_layout", "index", "_row", "_k")

    def __init__(self, layout: Layout, index: int, k: int, row: dict) -> None:
        self._layout, self.index, self._k, self._row = layout, index, k, row

    # columns --------------------------------------------------------------
    @property
    def sentence(self) -> Any:
        return self._layout.sentence

    @property
    def id(self) -> int:
        """The ID column (1-based)."""
        return self._row["id"]

    @property
    def text(self) -> str:
        """The FORM column."""
        return self._row["form"]

    @property
    def lemma(self) -> str | None:
        return _null(self._row["lemma"])

    @property
    def upos(self) -> str | None:
        return _null(self._row["upos"])

    @property
    def xpos(self) -> str | None:
        return _null(self._row["xpos"])

    @property
    def feats(self) -> dict[str, str | None]:
        """FEATS as a dict (``{"Number": "Sing"}``; empty for ``_``); writing into a non-empty one edits the
        sentence."""
        feats = self._row["feats"]
        return feats if isinstance(feats, dict) else {}

    @property
    def head(self) -> int | None:
        """The HEAD column: the head's id, 0 for the root, ``None`` before parsing."""
        return self._row["head"]

    @property
    def head_word(self) -> "Word | None":
        """The head as a :class:`Word` (``None`` for the root and before parsing)."""
        h = self.head
        words = self._layout.words
        return words[h - 1] if h and 0 < h <= len(words) else None

    @property
    def deprel(self) -> str | None:
        return _null(self._row["deprel"])

    @property
    def deps(self) -> str | None:
        """The DEPS column as written in CoNLL-U (``"4:nsubj|6:nsubj:xsubj"``), ``None`` for ``_``."""
        from conllu.parser import serialize_field

        deps = self._row["deps"]
        return None if deps is None else serialize_field(deps) if not isinstance(deps, str) else _null(deps)

    @property
    def misc(self) -> dict[str, str | None]:
        """MISC as a dict (empty for ``_``)."""
        misc = self._row["misc"]
        return misc if isinstance(misc, dict) else {}

    @property
    def row(self) -> dict:
        """The word's line as the ``conllu`` library's dict (every column; writing into it edits the sentence)."""
        return self._row

    # tree and text ----------------------------------------------------------
    @property
    def children(self) -> list["Word"]:
        """The words whose head is this word, in order."""
        return self._layout.children(self.index)

    @property
    def token(self) -> "SurfaceToken":
        """The surface token this word belongs to (itself, or its multiword token)."""
        return self._layout.token_of(self.index)

    @property
    def start_char(self) -> int | None:
        return self._layout.span(self._k)[0]

    @property
    def end_char(self) -> int | None:
        return self._layout.span(self._k)[1]

    @property
    def space_after(self) -> bool:
        """Whether whitespace follows the word in the text (never inside a multiword token)."""
        return self._layout.space_after(self.index)

    def __getitem__(self, key: str) -> Any:
        """Column ``key`` of the word's line as the ``conllu`` library holds it (``word["misc"]``: a dict or
        ``None``; ``word["head"]``), as when ``sentence.words`` listed those dicts; ``word[key] = value`` writes
        it."""
        return self._row[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._row[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        """``word.row.get(key, default)``.

        Args:
            key: a column name (``"form"``, ``"misc"`` ...).
            default: the value for a missing key.

        Returns:
            The column's value.
        """
        return self._row.get(key, default)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Word) and other.sentence is self.sentence and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.sentence), self.index))

    def __repr__(self) -> str:
        return (f"Word(id={self.id}, text={self.text!r}, lemma={self.lemma!r}, upos={self.upos!r}, "
                f"head={self.head}, deprel={self.deprel!r})")


class SurfaceToken:
    """One surface token, as written in the text: Stanza's ``Token`` (a multiword token holds several words).

    Attributes:
        sentence: the :class:`~g2gt.ud.io.Sentence` it belongs to.
        index: its 0-based position among the sentence's surface tokens.

    Args:
        layout: the sentence's shared :class:`Layout` (views are made by :attr:`Sentence.tokens`, not by hand).
        index: its 0-based position among the surface tokens.
    """

    __slots__ = ("_layout", "index")

    def __init__(self, layout: Layout, index: int) -> None:
        self._layout, self.index = layout, index

    @property
    def sentence(self) -> Any:
        return self._layout.sentence

    @property
    def _surface(self):
        return self._layout.surface[self.index]

    @property
    def _line(self) -> dict:
        return self.sentence.rows[self._surface.row]

    @property
    def id(self) -> tuple[int, ...]:
        """The ids of its words, as Stanza writes them: ``(4,)``, or ``(2, 3)`` for the multiword token 2-3."""
        tid = self._line["id"]
        return (tid[0], tid[2]) if isinstance(tid, tuple) else (tid,)

    @property
    def text(self) -> str:
        return self._line["form"]

    @property
    def words(self) -> list[Word]:
        words = self._layout.words
        return [words[i] for i in self._surface.words]

    @property
    def is_mwt(self) -> bool:
        """True for a multiword token."""
        return self._surface.is_mwt

    @property
    def misc(self) -> dict[str, str | None]:
        """MISC of its line (the multiword-token line for a multiword token) as a dict, empty for ``_``."""
        misc = self._line["misc"]
        return misc if isinstance(misc, dict) else {}

    @property
    def space_after(self) -> bool:
        """False when MISC says ``SpaceAfter=No``."""
        return space_after(self._line)

    @property
    def start_char(self) -> int | None:
        return self._layout.span(self._surface.row)[0]

    @property
    def end_char(self) -> int | None:
        return self._layout.span(self._surface.row)[1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SurfaceToken) and other.sentence is self.sentence and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.sentence), "token", self.index))

    def __repr__(self) -> str:
        return f"SurfaceToken(id={self.id}, text={self.text!r}, start_char={self.start_char}, " \
               f"end_char={self.end_char})"
