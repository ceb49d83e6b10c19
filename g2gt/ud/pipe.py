"""Many texts through one pipeline: segmented and parsed in shared batches (``Pipeline.pipe``, the server).

A model call has a fixed cost, and a short text alone fills a batch badly. :func:`parse_many` therefore runs
several inputs together: every raw text's paragraph blocks go to the learned tokenizer in one
``segment_many`` call, every sentence of every input to the parser (and the enhancer, and your stages) in one
call (which cuts length-sorted batches of at most ``batch_tokens`` padded words), and each input gets its own
:class:`~g2gt.ud.document.Document` back, numbered ``s1, s2 ...`` as if it had been parsed alone.
With ``errors="return"`` one input's failure is that input's result (an exception) and the others are
parsed again without it: ``g2gt serve`` answers each request that way.

:meth:`Pipeline.pipe <g2gt.ud.pipeline.Pipeline.pipe>` cuts its stream of texts into groups of consecutive
texts of about :data:`GROUP_WORDS` words (:func:`text_groups`, estimated as one word per 5 characters) and
runs :func:`parse_many` on each group, in this process or, with ``n_process`` > 1, in worker processes of
:class:`g2gt.core.pool.ProcessPool` (one group per job, so the same groups and the same output); while the
workers start (each imports torch and loads the model, about two seconds), this process parses the first
groups itself.

A batch's numbers depend a little on its other members (int8 dynamic quantization scales activations per
batch), so a text parsed in a group can differ in rare last-digit ties from the same text parsed alone; the
CoNLL-U of ``g2gt parse`` is the one-text path (:meth:`Pipeline.__call__`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

from ..core.gc_pause import paused_gc
from .document import Document
from .io import Sentence
from .limits import drop_control_characters, limit_sentence_words

__all__ = ["GROUP_WORDS", "text_groups", "segment_texts", "parse_many", "pipe_documents"]

#: estimated words per group of texts in ``Pipeline.pipe``: the length-sorted parser batches are cut from a
#: group, so larger groups pad less (UD EWT dev's 318 documents, one thread: 2,000 words 5.8 s, 10,000 4.8 s,
#: 30,000 4.6 s); the first documents come back after a group is parsed
GROUP_WORDS = 10000
Prepare = Callable[[int, list[Sentence]], list[Sentence]]


def input_words(x: Any) -> int:
    """Words of an input, estimated for raw text (one per 5 characters); at least 1."""
    if isinstance(x, str):
        return max(1, len(x) // 5)
    try:
        return max(1, sum(len(s) if isinstance(s, Sentence) else (len(s) if isinstance(s, list) else 1) for s in x))
    except TypeError:
        return 1


def text_groups(items: Iterable, group_words: int = GROUP_WORDS) -> Iterator[list]:
    """Consecutive items of ``items`` in lists of about ``group_words`` estimated words (at least one item).

    When ``items`` is a sequence (its size known), the groups of its last ``2 * group_words`` words get smaller
    (half of what is left, at least ``group_words // 8``, as the last pieces of a file,
    :func:`g2gt.core.pieces.piece_target`), so that worker processes sharing them finish together."""
    remaining = sum(input_words(x) for x in items) if isinstance(items, Sequence) else None
    group: list = []
    size = 0
    for x in items:
        if not group:  # a new group: its size, from what is left
            target = group_words if remaining is None else max(1, group_words // 8,
                                                               min(group_words, remaining // 2))
        group.append(x)
        n = input_words(x)
        size += n
        if remaining is not None:
            remaining -= n
        if size >= target:
            yield group
            group, size = [], 0
    if group:
        yield group


def segment_texts(nlp, texts: Sequence[str]) -> list[list[Sentence]]:
    """The sentences of each raw text, as :meth:`Pipeline.text_sentences` gives them (ids ``s1, s2 ...``,
    ``# newdoc`` on the first only); a learned tokenizer reads the paragraph blocks of all texts in one call."""
    if not nlp.learned_tokenizer:
        return [nlp.text_sentences(t) for t in texts]
    from .tokenize.text import paragraph_blocks

    blocks: list[str] = []
    owner: list[tuple[int, int]] = []
    for i, text in enumerate(texts):
        if text.strip():
            for j, block in enumerate(paragraph_blocks(text)):
                blocks.append(block)
                owner.append((i, j))
    out: list[list[Sentence]] = [[] for _ in texts]
    for (i, j), sents in zip(owner, nlp.tokenize.segment_many(blocks, "s", 1) if blocks else []):
        if j and sents:
            sents[0].rows.metadata.pop("newdoc", None)  # one document: only its first sentence opens it
        out[i].extend(sents)
    for sents in out:
        for k, s in enumerate(sents, 1):
            s.rows.metadata["sent_id"] = f"s{k}"
    return out


def _fail(errors: str, e: Exception) -> Exception:
    if errors == "raise":
        raise e
    return e


def parse_many(nlp, inputs: Sequence, *, errors: str = "raise", prepare: Prepare | None = None,
               only_tokenize: bool = False, **options: Any) -> list[Document | Exception]:
    """One :class:`Document` per input (raw text, or anything ``Pipeline.__call__`` takes), all segmented and
    parsed in shared batches (see the module docstring). ``prepare(i, sentences)``: applied to input ``i``'s
    sentences before parsing (e.g. the server's length limit and sentence ids); by default
    :func:`g2gt.ud.limits.limit_sentence_words`. ``errors``: ``"raise"`` (the first failure raises) or
    ``"return"`` (a failing input's result is its exception). ``only_tokenize``: no stage after ``tokenize``
    runs (sentences given are copied). ``options``: ``Pipeline.__call__``'s."""
    with paused_gc():  # no cyclic collections while the batch allocates its results (g2gt.core.gc_pause)
        return _parse_many(nlp, inputs, errors, prepare, only_tokenize, options)


def _parse_many(nlp, inputs: Sequence, errors: str, prepare: Prepare | None, only_tokenize: bool,
                options: dict) -> list[Document | Exception]:
    if errors not in ("raise", "return"):
        raise ValueError(f"errors must be 'raise' or 'return', got {errors!r}")
    options = {"batch_tokens": None, **options}
    nlp._check_options(bool(options.get("enhanced")), options.get("keep", ()))
    inputs = list(inputs)
    if not inputs:
        return []
    results: list[Any] = [None] * len(inputs)
    sentences: list[list[Sentence] | None] = [None] * len(inputs)
    inputs = [drop_control_characters(x) if isinstance(x, str) else x for x in inputs]  # what offsets point into
    texts = [i for i, x in enumerate(inputs) if isinstance(x, str)]
    segmented = set(texts)
    try:
        for i, sents in zip(texts, segment_texts(nlp, [inputs[i] for i in texts])):
            sentences[i] = sents
    except Exception as e:  # a segmenter failure: find the text that causes it
        if errors == "raise" or len(texts) == 1:
            results[texts[0]] = _fail(errors, e)
        else:
            for i in texts:
                results[i] = parse_many(nlp, [inputs[i]], errors=errors, prepare=prepare,
                                        only_tokenize=only_tokenize, **options)[0]
            segmented = set()
    for i, x in enumerate(inputs):
        if results[i] is not None:
            continue
        try:
            sents = sentences[i] if i in segmented else nlp.to_sentences(x)
            sentences[i] = prepare(i, sents) if prepare is not None else limit_sentence_words(sents)
        except Exception as e:
            results[i] = _fail(errors, e)
    todo = [i for i in range(len(inputs)) if results[i] is None]
    flat = [s for i in todo for s in sentences[i]]
    try:
        # sentences segmented from text here, seen by no caller's prepare(): written into instead of copied
        made_here = prepare is None and all(i in segmented for i in todo)
        parsed = [s.copy() for s in flat] if only_tokenize else nlp.run_stages(flat, copy=not made_here, **options)
    except Exception as e:
        if errors == "raise" or len(todo) == 1:
            results[todo[0]] = _fail(errors, e)
            return results
        for i in todo:  # find the input that breaks the batch; the others still get their parse
            results[i] = parse_many(nlp, [inputs[i]], errors=errors, prepare=prepare, only_tokenize=only_tokenize,
                                    **options)[0]
        return results
    k = 0
    for i in todo:
        n = len(sentences[i])
        results[i] = Document(parsed[k:k + n], inputs[i] if isinstance(inputs[i], str) else None, nlp.name)
        k += n
    return results


def pipe_documents(nlp, texts: Iterable, n_process: int, options: dict,
                   worker: Callable[[], Callable] | None = None) -> Iterator[Document]:
    """``Pipeline.pipe``: the groups of :func:`text_groups` through :func:`parse_many`, here or in ``n_process``
    worker processes, each built by ``worker`` (a picklable factory of the job handler
    ``(inputs, options) -> documents``, see :class:`g2gt.core.pool.ProcessPool`)."""
    options = {k: v for k, v in options.items() if k != "progress"}
    nlp._check_options(bool(options.get("enhanced")), options.get("keep", ()))
    if n_process is None or int(n_process) <= 1:
        for group in text_groups(texts):
            yield from parse_many(nlp, group, **options)
        return
    from ..core.pool import ProcessPool

    if worker is None:
        raise ValueError("pipe(n_process > 1) needs a worker factory")
    groups = text_groups(texts)
    pool = ProcessPool(worker, int(n_process), preload=("torch",))
    pool.start(background=True)
    try:
        while not pool.ready_workers():  # the workers import torch and load the model: parse here meanwhile
            group = next(groups, None)
            if group is None:
                return
            yield from parse_many(nlp, group, **options)
        for docs in pool.map((group, options) for group in groups):
            yield from docs
    finally:
        pool.close()
