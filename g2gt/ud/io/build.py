"""Sentences built from words or surface tokens (no original lines: serialised from their rows), for raw text
to be parsed."""

from __future__ import annotations

from typing import Sequence

from conllu.models import Metadata, Token, TokenList

from .sentence import FIELDS, Sentence

__all__ = ["sentence_from_words", "sentence_from_tokens"]


def _check_word(w: str, what: str) -> None:
    if not w or w != w.strip() or "\t" in w or "\n" in w:
        raise ValueError(f"{what} {w!r} is empty, has a tab/newline or leading/trailing whitespace "
                         "(a CoNLL-U column cannot hold it)")


def _word_token(k: int, form: str, space: bool) -> Token:
    return Token(id=k, form=form, lemma="_", upos="_", xpos=None, feats=None, head=None, deprel="_", deps=None,
                 misc=None if space else {"SpaceAfter": "No"})


def _meta(sent_id: str | None, text: str) -> Metadata:
    meta = Metadata()
    if sent_id is not None:
        meta["sent_id"] = sent_id
    meta["text"] = text
    return meta


def sentence_from_words(words: Sequence[str], text: str | None = None, sent_id: str | None = None,
                        space_after: Sequence[bool] | None = None) -> Sentence:
    """A sentence with forms only (no parse) for raw text to be parsed.

    Every column but ID, FORM and MISC is ``_``; MISC gets ``SpaceAfter=No`` where
    ``space_after[i]`` is False.  ``# sent_id`` / ``# text`` comments are added when given
    (``text`` defaults to the words joined according to ``space_after``).

    Args:
        words: the word forms.
        text: the ``# text`` comment (``None``: the words joined according to ``space_after``).
        sent_id: the ``# sent_id`` comment (``None``: none).
        space_after: whether a space follows each word (``None``: everywhere).

    Returns:
        The :class:`Sentence`.
    """
    if space_after is not None and len(space_after) != len(words):
        raise ValueError(f"space_after has {len(space_after)} entries for {len(words)} words")
    if not words:
        raise ValueError("a sentence needs at least one word")
    sa = list(space_after) if space_after is not None else [True] * len(words)
    for i, w in enumerate(words):
        _check_word(w, f"word {i + 1}")
    toks = [_word_token(i + 1, w, s) for i, (w, s) in enumerate(zip(words, sa, strict=True))]
    if text is None:
        text = "".join(w + (" " if s else "") for w, s in zip(words, sa, strict=True)).rstrip(" ")
    return Sentence(TokenList(toks, _meta(sent_id, text), default_fields=FIELDS), "<text>", 0)


def sentence_from_tokens(tokens: Sequence[tuple[str, Sequence[str], bool]], text: str | None = None,
                         sent_id: str | None = None) -> Sentence:
    """Like :func:`sentence_from_words` for surface tokens that may hold several syntactic words.

    Each item is ``(surface, words, space_after)``; a token with more than one word becomes a multiword-token line
    ``a-b`` (carrying ``SpaceAfter=No``) followed by its word lines, as UD English EWT writes ``don't`` -> ``do n't``.

    Args:
        tokens: ``(surface, words, space_after)`` of each surface token.
        text: the ``# text`` comment (``None``: the tokens joined according to their ``space_after``).
        sent_id: the ``# sent_id`` comment (``None``: none).

    Returns:
        The :class:`Sentence`.
    """
    if not tokens:
        raise ValueError("a sentence needs at least one token")
    toks: list[Token] = []
    k = 0
    for surface, words, space in tokens:
        words = list(words) or [surface]
        for w in [surface, *words]:
            _check_word(w, f"token {surface!r}: word")
        if len(words) > 1:
            toks.append(Token(id=(k + 1, "-", k + len(words)), form=surface, lemma="_", upos="_", xpos=None,
                              feats=None, head=None, deprel="_", deps=None,
                              misc=None if space else {"SpaceAfter": "No"}))
            toks.extend(_word_token(k + 1 + j, w, True) for j, w in enumerate(words))
            k += len(words)
        else:
            k += 1
            toks.append(_word_token(k, words[0], space))
    if text is None:
        text = "".join(s + (" " if sp else "") for s, _, sp in tokens).rstrip(" ")
    return Sentence(TokenList(toks, _meta(sent_id, text), default_fields=FIELDS), "<text>", 0)
