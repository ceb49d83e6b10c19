"""What a batch of requests does in a worker thread: every request's input goes to
:meth:`g2gt.serve.adapter.LoadedModel.run` (:func:`g2gt.ud.pipe.parse_many`: raw texts segmented together,
all sentences parsed in one call of the model, one :class:`~g2gt.ud.document.Document` per request back).

A request's work is a :class:`Work` (raw text, or sentences already read); requests share a batch when they
ask for the same :class:`Options` (model and steps). One request's bad input never fails the others: a
request that fails is answered with its own error and the others are parsed without it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

from ..ud.document import Document
from ..ud.io import Sentence
from .adapter import LoadedModel
from .formats import RequestError, limit_lengths, merge_sentences

__all__ = ["Options", "Work", "ParseService"]

log = logging.getLogger("g2gt.serve")


@dataclass(frozen=True)
class Options:
    """What a request asks for (the batch key): the model's name and which steps run."""

    model: str
    tag: bool = True
    parse: bool = True
    enhanced: bool = False
    coref: bool = False


@dataclass
class Work:
    """One request's input: ``text`` (raw, to be segmented; ``presegmented``: one sentence per line) or
    ``sentences`` (tokenized already). ``split_long``: cut sentences over the length limit instead of
    refusing them. ``id_prefix``: the sentences of a text are numbered ``{id_prefix}1, {id_prefix}2 ...``
    (``""``: UDPipe's ``1, 2 ...``; ``"s"``: the library's own ids, as ``g2gt parse`` writes them)."""

    text: str | None = None
    sentences: list[Sentence] | None = None
    presegmented: bool = False
    split_long: bool = True
    id_prefix: str = ""

    @property
    def size(self) -> int:
        """Words, estimated for raw text (one per 5 characters), for the batch budget."""
        if self.sentences is not None:
            return max(1, sum(len(s) for s in self.sentences))
        return max(1, len(self.text or "") // 5)


class ParseService:
    """The batch runner for :class:`g2gt.serve.batching.Batcher`: ``run(options, works)`` -> for each work
    its :class:`~g2gt.ud.document.Document`, or the exception it caused."""

    def __init__(self, models: dict[str, LoadedModel], max_sentence_words: int = 500, batch_tokens: int = 500) -> None:
        self.models = models
        self.max_sentence_words = max_sentence_words
        self.batch_tokens = batch_tokens

    def run(self, options: Options, works: Sequence[Work]) -> list:
        model = self.models[options.model]
        inputs: list = []
        early: dict[int, Exception] = {}
        for i, w in enumerate(works):
            try:
                inputs.append(self._input(model, w))
            except Exception as e:  # a segmenter failure on a presegmented text: that request only
                early[i] = _as_request_error(e)
                inputs.append([])

        def prepare(i: int, sentences: list[Sentence]) -> list[Sentence]:
            w = works[i]
            if w.sentences is None:  # ids count from 1 in every request
                for k, s in enumerate(sentences, 1):
                    s.metadata["sent_id"] = f"{w.id_prefix}{k}"
            return limit_lengths(sentences, self.max_sentence_words, w.split_long)

        docs = model.run(inputs, options.tag, options.parse, options.enhanced, self.batch_tokens, prepare,
                         coref=options.coref)
        out: list = []
        for i, (w, doc) in enumerate(zip(works, docs)):
            if i in early:
                out.append(early[i])
            elif isinstance(doc, Document):
                if w.presegmented:
                    doc.text = w.text or ""
                out.append(doc)
            else:
                out.append(_as_request_error(doc))
        return out

    @staticmethod
    def _input(model: LoadedModel, w: Work) -> str | list[Sentence]:
        """What the pipeline reads for a work: its text, its sentences, or the lines of a presegmented text
        segmented (all in one call) and each made one sentence (the first alone starts the document)."""
        if w.sentences is not None:
            return w.sentences
        if not w.presegmented:
            return w.text or ""
        lines = [line for line in (w.text or "").splitlines() if line.strip()]
        segs = [s for s in model.segment(lines) if s] if lines else []
        out = [merge_sentences(line, str(k)) for k, line in enumerate(segs, 1)]
        for s in out[1:]:  # one text, one document: only its first sentence opens it (as for coreference)
            s.metadata.pop("newdoc", None)
        return out


def _as_request_error(e: Exception) -> Exception:
    """A ValueError from the library is a problem with the input (as the g2gt command treats it): 400."""
    if isinstance(e, RequestError):
        return e
    if isinstance(e, ValueError):
        return RequestError(str(e).splitlines()[0] if str(e) else type(e).__name__)
    log.exception("internal error while parsing a batch", exc_info=e)
    return e
