"""What a batch of requests does in a worker thread: segment raw texts together, then parse all sentences
in one call of the model (through :mod:`g2gt.serve.adapter`), then hand each request its own sentences.

A request's work is a :class:`Work` (raw text, or sentences already read); requests share a batch when they
ask for the same :class:`Options` (model and steps). One request's bad input never fails the others: if the
joint call raises, each request is run alone and only the one that fails gets the error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

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


@dataclass
class Work:
    """One request's input: ``text`` (raw, to be segmented; ``presegmented``: one sentence per line) or
    ``sentences`` (tokenized already). ``split_long``: cut sentences over the length limit instead of
    refusing them."""

    text: str | None = None
    sentences: list[Sentence] | None = None
    presegmented: bool = False
    split_long: bool = True

    @property
    def size(self) -> int:
        """Words, estimated for raw text (one per 5 characters), for the batch budget."""
        if self.sentences is not None:
            return max(1, sum(len(s) for s in self.sentences))
        return max(1, len(self.text or "") // 5)


class ParseService:
    """The batch runner for :class:`g2gt.serve.batching.Batcher`: ``run(options, works)`` -> for each work
    its parsed sentences, or the exception it caused."""

    def __init__(self, models: dict[str, LoadedModel], max_sentence_words: int = 500, batch_tokens: int = 500) -> None:
        self.models = models
        self.max_sentence_words = max_sentence_words
        self.batch_tokens = batch_tokens

    def run(self, options: Options, works: Sequence[Work]) -> list:
        model = self.models[options.model]
        inputs: list = [None] * len(works)
        results: list = [None] * len(works)
        try:
            segmented = self._segment(model, works)
        except Exception as e:  # a segmenter failure: isolate it per request
            if len(works) == 1:
                return [_as_request_error(e)]
            return [self.run(options, [w])[0] for w in works]
        for i, (w, sents) in enumerate(zip(works, segmented)):
            try:
                inputs[i] = limit_lengths(sents, self.max_sentence_words, w.split_long)
            except RequestError as e:
                results[i] = e
        todo = [i for i in range(len(works)) if results[i] is None]
        flat = [s for i in todo for s in inputs[i]]
        try:
            parsed = model.parse(flat, options.tag, options.parse, options.enhanced, self.batch_tokens)
        except Exception as e:
            if len(todo) == 1:
                results[todo[0]] = _as_request_error(e)
                return results
            for i in todo:  # find the request that breaks the batch; the others still get their parse
                results[i] = self.run(options, [works[i]])[0]
            return results
        k = 0
        for i in todo:
            n = len(inputs[i])
            results[i] = parsed[k:k + n]
            k += n
        return results

    @staticmethod
    def _segment(model: LoadedModel, works: Sequence[Work]) -> list[list[Sentence]]:
        """Every work's sentences; all raw texts (all lines of presegmented ones) in one segmenter call."""
        texts: list[str] = []
        plan: list[tuple[int, int]] = []  # (first text, number of texts) per work
        for w in works:
            if w.sentences is not None:
                plan.append((len(texts), 0))
                continue
            parts = [line for line in (w.text or "").splitlines() if line.strip()] if w.presegmented else [w.text or ""]
            plan.append((len(texts), len(parts)))
            texts.extend(parts)
        segs = model.segment_many(texts) if texts else []
        out = []
        for w, (a, n) in zip(works, plan):
            if w.sentences is not None:
                out.append(w.sentences)
                continue
            if w.presegmented:
                lines = [segs[j] for j in range(a, a + n) if segs[j]]
                sents = [merge_sentences(line, str(k)) for k, line in enumerate(lines, 1)]
            else:
                sents = segs[a] if n else []
            for k, s in enumerate(sents, 1):  # ids count from 1 in every request
                s.metadata["sent_id"] = str(k)
            out.append(sents)
        return out


def _as_request_error(e: Exception) -> Exception:
    """A ValueError from the library is a problem with the input (as the g2gt command treats it): 400."""
    if isinstance(e, RequestError):
        return e
    if isinstance(e, ValueError):
        return RequestError(str(e).splitlines()[0] if str(e) else type(e).__name__)
    log.exception("internal error while parsing a batch", exc_info=e)
    return e
