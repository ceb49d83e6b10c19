"""A stream of parsed sentences cut into bounded parts of documents, for coreference a part at a time.

Coreference is resolved per document (``# newdoc`` starts one, :func:`g2gt.ud.coref.io.documents`), and inside a
document per *window*: consecutive whole sentences of at most ``window_words`` words, cut greedily
(:func:`g2gt.ud.coref.data.windows`: a window ends before the sentence that would take it over ``window_words``;
a longer sentence is a window alone). Mentions are linked only inside a window, so a document cut between two
windows gives the same mentions as the whole document, once the second part's entity ids continue the first
part's (:class:`g2gt.ud.coref.resolver.Coreferencer` carries them).

:func:`document_parts` yields each document whole when it has fewer than ``max_words`` words; a longer one is
cut at the first window boundary after each ``max_words`` words, so a part holds at most ``max_words`` words
plus one window (and one sentence). Windows are made of the sentences the model reads; a sentence over the word
limit (``is_long``) is not read (:mod:`g2gt.ud.limits`) and belongs to no window. A run of such sentences in a
part that already holds ``max_words`` words ends the part before the next one, which bounds a part even
then; the window open at that cut ends there too, the one place where the parts differ from the whole
document (a document with more than ``max_words`` words and a sentence over the word limit at that point).

Memory then follows ``max_words`` (one part's sentences, copies and :class:`~g2gt.ud.coref.data.DocExample`)
and ``window_words`` (the model's input), not the length of the input or of its longest document.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

__all__ = ["document_parts", "starts_document"]


def starts_document(sentence) -> bool:
    """Whether ``sentence`` starts a document (a ``# newdoc`` comment, with or without an id)."""
    md = sentence.metadata
    return "newdoc id" in md or "newdoc" in md


def document_parts(sentences: Iterable, window_words: int, max_words: int | None,
                   is_long: Callable[[object], bool] = lambda s: False) -> Iterator[tuple[list, bool]]:
    """``sentences`` as consecutive parts of documents (module docstring), read one sentence at a time.

    Args:
        sentences: parsed sentences, any iterable; documents start at ``# newdoc`` (the sentences before the first
            one form a document of their own, as in :func:`g2gt.ud.coref.io.documents`).
        window_words: words per window at most (the resolver's ``max_words``).
        max_words: words after which a document's part ends at the next window boundary (``None``: whole
            documents, however long).
        is_long: whether a sentence is over the word limit (not read by the model, in no window).

    Yields:
        ``(part, first)``: a list of consecutive sentences of one document, and whether it is the document's
        first part.
    """
    part: list = []
    first = True
    words = 0  # words in the part
    window = 0  # words in the window being filled (0: none open)
    for s in sentences:
        if part and starts_document(s):
            yield part, first
            part, first, words, window = [], True, 0, 0
        n = len(s)
        full = max_words is not None and words >= max_words
        if is_long(s):
            if full:
                yield part, first
                part, first, words, window = [], False, 0, 0
        elif window and window + n > window_words:  # s opens the next window: a boundary
            if full:
                yield part, first
                part, first, words = [], False, 0
            window = n
        else:
            window += n
        part.append(s)
        words += n
    if part:
        yield part, first
