"""A parsed :class:`~g2gt.ud.document.Document` as a ``spacy.tokens.Doc``.

One spaCy token per syntactic word, as spacy-stanza does: a multiword token's words become consecutive tokens
with no whitespace between them, the whitespace after the surface token goes after its last word (``don't``
-> ``do`` + ``n't``, ``doc.text`` unchanged when the words spell the surface form, as in English). Whitespace
other than one space between tokens (line breaks, several spaces, text before the first token) becomes
spaCy's whitespace tokens (``pos_ == "SPACE"``, ``tag_ == "_SP"``, attached to the word before them), so
``spacy_doc.text == doc.text`` and every token's ``idx`` is its word's ``start_char``.

Per token: ``pos_`` = UPOS, ``tag_`` = XPOS, ``morph`` = FEATS, ``lemma_`` = LEMMA, ``dep_`` = DEPREL with the
root's ``root`` written ``ROOT`` (spaCy's spelling), ``head`` = the head word's token (the root is its own
head, as in spaCy). Sentences: ``doc.sents`` follow the document's sentences (from the trees when every word
has a head, else from sentence starts). Coreference (``nlp(text, coref=True)``): each entity with two or more
mentions is a span group ``doc.spans["coref_clusters_N"]`` (N from 1, in order of first mention), as spaCy's
coreference component stores its clusters; each mention is a ``Span`` from its first word to its last. Values
``_`` are left empty.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_spacy", "spacy_vocab"]

_INSTALL = 'spaCy is not installed: pip install "g2gt[spacy]" (or pip install spacy)'


def spacy_vocab(vocab: Any = None) -> Any:
    """``vocab``, or a new ``spacy.vocab.Vocab`` when it is ``None``.

    Raises:
        ImportError: spaCy is not installed (the message says how to install it).
    """
    try:
        from spacy.vocab import Vocab
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(_INSTALL) from e
    return Vocab() if vocab is None else vocab


def _gap_tokens(gap: str) -> tuple[bool, str]:
    """How the text ``gap`` between two tokens is written in spaCy: ``(space after the previous token, the text
    of a whitespace token or "")`` (one space: ``(True, "")``; ``"  \\n"``: ``(True, " \\n")``)."""
    if gap.startswith(" "):
        return True, gap[1:]
    return False, gap


def to_spacy(doc: Any, vocab: Any = None) -> Any:
    """The ``spacy.tokens.Doc`` of a g2gt document (see the module docstring for the mapping).

    Args:
        doc: a :class:`~g2gt.ud.document.Document` (``nlp(text)``).
        vocab: the ``spacy.vocab.Vocab`` to build with (``nlp.vocab`` of a spaCy pipeline); default a new one.

    Returns:
        A ``spacy.tokens.Doc`` with ``len(words) + whitespace tokens`` tokens; ``doc.text`` is the document's
            text when every surface form was found in it and the words of each multiword token spell its form.

    Raises:
        ImportError: spaCy is not installed.
    """
    from spacy.tokens import Doc

    vocab = spacy_vocab(vocab)
    text = doc.text
    words: list[str] = []
    spaces: list[bool] = []
    pos: list[str] = []
    tags: list[str] = []
    morphs: list[str] = []
    lemmas: list[str] = []
    deps: list[str] = []
    heads: list[int | None] = []
    starts: list[int] = []
    index: dict[tuple[int, int], int] = {}  # (sentence, word index) -> token index

    def whitespace(gap: str, head: int, sent_start: bool) -> None:
        words.append(gap)
        spaces.append(False)
        pos.append("SPACE")
        tags.append("_SP")
        morphs.append("")
        lemmas.append(gap)
        deps.append("dep")
        heads.append(head)
        starts.append(1 if sent_start else -1)

    tokens = [(si, t) for si, s in enumerate(doc) for t in s.tokens]
    if tokens and tokens[0][1].start_char:  # text before the first token: a token attached to the first word
        gap = text[:tokens[0][1].start_char]
        whitespace(gap, 1, True)
    lead = bool(words)
    for n, (si, tok) in enumerate(tokens):
        end = tok.end_char
        nxt = tokens[n + 1][1].start_char if n + 1 < len(tokens) else len(text)
        if tok.start_char is not None and end is not None and nxt is not None:
            space, extra = _gap_tokens(text[end:nxt])
        else:  # a form not found in the text: its MISC says
            space, extra = tok.space_after and n + 1 < len(tokens), ""
        tok_words = tok.words
        for j, w in enumerate(tok_words):
            index[(si, w.index)] = len(words)
            words.append(w.text)
            spaces.append(space if j == len(tok_words) - 1 else False)
            pos.append(w.upos or "")
            tags.append(w.xpos or "")
            morphs.append("|".join(f"{k}={v}" for k, v in w.feats.items() if v is not None))
            lemmas.append(w.lemma or "")
            deps.append("ROOT" if w.head == 0 else (w.deprel or ""))
            heads.append(None if w.head is None else -1 - w.head)  # resolved below: -1 - head id
            starts.append(1 if w.index == 0 and not (lead and n == 0) else -1)
        if extra:
            whitespace(extra, len(words) - 1, False)
    # heads: word ids -> token indices (the root is its own head)
    sent_of = [None] * len(words)
    for (si, i), k in index.items():
        sent_of[k] = (si, i)
    parsed = all(h is not None for h in heads)
    abs_heads: list[int] = []
    for k, h in enumerate(heads):
        if h is None:
            abs_heads.append(k)
        elif h >= 0:  # a whitespace token: already an index
            abs_heads.append(h)
        else:
            hid = -1 - h
            si, _ = sent_of[k]
            abs_heads.append(k if hid == 0 else index.get((si, hid - 1), k))
    kwargs: dict[str, Any] = dict(words=words, spaces=spaces, pos=pos, tags=tags, morphs=morphs, lemmas=lemmas)
    if parsed and words:
        kwargs.update(heads=abs_heads, deps=deps)
    else:
        kwargs.update(sent_starts=[s == 1 for s in starts])
    out = Doc(vocab, **kwargs)
    _add_coref(doc, out, index)
    return out


def _add_coref(doc: Any, out: Any, index: dict[tuple[int, int], int]) -> None:
    """``out.spans["coref_clusters_N"]``: the mentions of each entity with two or more mentions."""
    if not any("Entity" in (w["misc"] or {}) for s in doc for w in s.word_rows):
        return
    position = {id(s): si for si, s in enumerate(doc)}
    n = 0
    for e in doc.entities:
        if len(e.mentions) < 2:
            continue
        n += 1
        spans = []
        for m in e.mentions:
            a = index[(position[id(m.words[0].sentence)], m.words[0].index)]
            b = index[(position[id(m.words[-1].sentence)], m.words[-1].index)]
            spans.append(out[a:b + 1])
        out.spans[f"coref_clusters_{n}"] = spans
