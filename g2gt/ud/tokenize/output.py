r"""Token spans -> CoNLL-U sentences that keep every character of the text, and back.

Whitespace is written the way UDPipe writes it, in the MISC column of each surface token (the
multiword-token line for a multiword token):

* one space after a token: nothing; no space: ``SpaceAfter=No``;
* any other whitespace after it (newlines, several spaces, tabs ...): ``SpacesAfter=...``, escaped as
  ``\s`` space, ``\t`` tab, ``\r``, ``\n``, ``\p`` for ``|``, ``\\`` for ``\``, and ``\uXXXX`` /
  ``\UXXXXXXXX`` for every other character (other Unicode spaces, zero-width characters left alone between
  whitespace), so that MISC stays one ASCII field;
* whitespace before the first token of the text: ``SpacesBefore=...`` on that token;
* the last token of the text has nothing after it unless MISC says so (then no ``SpaceAfter=No`` is needed
  at the end of a document, which the UD validator would reject before a new document).

``# text`` holds the sentence's characters from its first to its last token, with line breaks written as
spaces (a comment is one line). :func:`text_from_sentences` rebuilds the input text exactly from the FORMs
and MISC of the sentences one :meth:`Segmenter.segment <g2gt.ud.tokenize.Segmenter.segment>` call returned.
The first sentence gets ``# newdoc`` and every sentence that starts a paragraph (the first one, and any after
a blank line) ``# newpar``, as UDPipe does.
"""

from __future__ import annotations

from conllu.models import Metadata

from ..io.build import sentence_from_tokens
from ..io.sentence import Sentence
from ..io.surface import surface_tokens
from ..io.whitespace import escape_spaces, text_from_sentences, unescape_spaces
from .mwt import MWTLexicon
from .spans import Spans, line_breaks

__all__ = ["escape_spaces", "unescape_spaces", "build_sentences", "text_from_sentences"]

_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_TO_SPACE = str.maketrans({c: " " for c in _LINE_BREAKS})


def _misc_value(sep: str, final: bool) -> dict[str, str] | None:
    if sep == ("" if final else " "):
        return None
    if sep == "":
        return {"SpaceAfter": "No"}
    return {"SpacesAfter": escape_spaces(sep)}


def build_sentences(text: str, spans: Spans, lexicon: MWTLexicon, sent_id_prefix: str = "",
                    first_id: int = 1) -> list[Sentence]:
    """:class:`g2gt.ud.io.Sentence` objects for the tokens and sentences of ``spans`` over ``text``:
    FORMs, multiword tokens split by ``lexicon``, MISC whitespace, ``# sent_id = {prefix}{k}``
    (``k`` from ``first_id``), ``# text``, ``# newdoc`` / ``# newpar`` (see the module docstring)."""
    starts, ends = spans.starts.tolist(), spans.ends.tolist()
    mwt = spans.mwt.tolist()
    n_tok = len(starts)
    score = spans.mwt_score.tolist() if spans.mwt_score is not None else [0.0] * n_tok
    lexicon.prepare([text[a:b] for a, b, m in zip(starts, ends, mwt) if m or text[a:b].lower() in lexicon.always],
                    [text[a:b] for a, b, m, c in zip(starts, ends, mwt, score) if not m and lexicon.is_candidate(c)])
    out: list[Sentence] = []
    for s, (a, b) in enumerate(spans.sentences):
        items = []
        miscs = []
        for k in range(a, b):
            form = text[starts[k]:ends[k]]
            words = lexicon.words(form, mwt[k], score[k])
            if len(words) > 1 and any(not w or w != w.strip() for w in words):
                words = [form]
            items.append((form, words, True))
            sep = text[ends[k]:starts[k + 1]] if k + 1 < n_tok else text[ends[k]:]
            miscs.append(_misc_value(sep, k + 1 == n_tok))
        sent_text = text[starts[a]:ends[b - 1]].translate(_TO_SPACE)
        sent = sentence_from_tokens(items, text=sent_text)
        surface = [sent.rows[t.row] for t in surface_tokens(sent)]
        for tok, misc in zip(surface, miscs):
            tok["misc"] = dict(misc) if misc else None
        if s == 0 and starts[0] > 0:
            first = surface[0]
            first["misc"] = {"SpacesBefore": escape_spaces(text[:starts[0]]), **(first["misc"] or {})}
        meta = Metadata()
        if s == 0:
            meta["newdoc"] = None
        if s == 0 or line_breaks(text[ends[a - 1]:starts[a]]) >= 2:
            meta["newpar"] = None
        meta["sent_id"] = f"{sent_id_prefix}{first_id + s}"
        meta["text"] = sent_text
        sent.rows.metadata = meta
        out.append(sent)
    return out
