"""Parse a corpus with N worker processes: the same bytes as one process, N times the words per second.

    from g2gt.ud.scale.parallel import ParallelPipeline

    with ParallelPipeline("en_combined", workers=4) as nlp:            # 4 processes, one thread each
        stats = nlp.parse_file("story.txt", "story.conllu", kind="raw")
        for block in nlp.parse_sentences(iter_conllu("in.conllu")):  # CoNLL-U text, one sentence each
            ...

Each worker loads the pipeline once from a :class:`Recipe` (model name, device, dtype, tokenizer, call
options -- never a loaded model) and runs with one torch thread. The main process reads the input, cuts it
into jobs, and writes the results in input order.

**Byte-identical to one process.** The one-process path (``g2gt parse``) segments raw text one paragraph
block at a time (:meth:`g2gt.ud.pipeline.Pipeline.text_sentences`) and parses ``chunk_sentences`` (2000) at
a time, fewer once a chunk holds ``chunk_words`` words (:meth:`~g2gt.ud.pipeline.Pipeline.stream`); inside a chunk the parser cuts length-sorted batches of
at most ``batch_tokens`` padded nodes (:func:`g2gt.ud.parse.batching.length_batches`). A batch's result
depends on its whole content (int8 dynamic quantization scales activations per batch), so the jobs here are
exactly those units:

* a **segment job** is one paragraph block (the same ``Segmenter.segment`` call); the main process numbers
  the sentences ``s1, s2 ...`` across blocks and keeps ``# newdoc`` on the first one only, as
  ``text_sentences`` does;
* a **parse job** is a run of whole batches of one chunk, in the chunk's length-sorted order: the batching
  of a run that starts at a batch boundary is the same greedy cut, so the worker forms the very batches the
  one-process path forms (with ``enhanced``, cuts are made only where the enhancer's batches also end).

The main process puts each chunk back in input order. With a tokenizer without weights (rule / stanza)
the whole text is one segment job.
"""

from __future__ import annotations

import functools
import sys
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from .corpus import FilesReport, plan_files
from ..limits import CHUNK_WORDS, iter_chunks
from ...core.pool import ProcessPool, worker_setup
from ...core.registry import DEFAULT_MODEL

__all__ = ["Recipe", "EnhanceRecipe", "ParallelPipeline", "enhance_parallel", "job_plan", "map_batch_runs",
           "worker_setup", "parse_options", "PARSE_CHUNK"]

PARSE_CHUNK = 2000  # sentences per chunk, as Pipeline.stream / g2gt parse
_NO_PAIR_LIMIT = 1 << 62  # the enhancer cuts batches by padded nodes only
#: the keyword arguments of ``Pipeline.__call__`` a job does not carry (the main process draws the one bar)
_MAIN_PROCESS_OPTIONS = ("progress",)


# ---------------------------------------------------------------------------- the worker's recipe
@dataclass(frozen=True)
class Recipe:
    """What a worker needs to build its pipeline (picklable; the fields are :func:`g2gt.load`'s).
    ``keep_freed_memory``: apply :func:`g2gt.core._compat.keep_freed_memory` in the worker, as the ``g2gt``
    command does in its own process. Calling it (in the worker) loads the pipeline and returns the job
    handler."""

    model: str = DEFAULT_MODEL
    device: str = "cpu"
    dtype: str | None = "auto"
    tokenizer: str = "auto"
    keep_freed_memory: bool = True

    def __call__(self) -> "JobHandler":
        worker_setup(self.keep_freed_memory)
        from ..pipeline import Pipeline

        return JobHandler(Pipeline.load(self.model, self.device, self.dtype, tokenizer=self.tokenizer))


@functools.cache
def parse_options() -> tuple[str, ...]:
    """The options a parse job carries to the workers: every keyword-only argument of
    :meth:`g2gt.ud.pipeline.Pipeline.__call__` (the one definition ``g2gt parse`` maps its flags to) but
    ``progress``, so an option added there reaches the workers with nothing to update here."""
    import inspect

    from ..pipeline import Pipeline

    params = inspect.signature(Pipeline.__call__).parameters.values()
    return tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY and p.name not in _MAIN_PROCESS_OPTIONS)


def check_options(options: dict) -> dict:
    """``options`` for ``Pipeline.__call__`` (a ``ValueError`` naming an unknown one), ``batch_tokens`` filled
    in."""
    from ..pipeline import BATCH_TOKENS

    options = dict(options)
    known = parse_options()
    unknown = set(options) - set(known)
    if unknown:
        raise ValueError(f"unknown parse option(s) {sorted(unknown)}; expected some of {', '.join(known)}")
    if options.get("batch_tokens") is None:
        options["batch_tokens"] = BATCH_TOKENS
    return options


class JobHandler:
    """The worker's side of a job, ``(kind, data, options) -> result``, around one loaded pipeline ``nlp``."""

    def __init__(self, nlp) -> None:
        self.nlp = nlp

    def __call__(self, job: tuple[str, Any, dict]) -> Any:
        kind, data, options = job
        if kind == "parse":  # sentences in length-sorted order -> their CoNLL-U text, same order
            if options.get("enhanced") and self.nlp.enhancer is None:
                raise ValueError(f"enhanced=True: the model {self.nlp.source} has no enhanced-UD stage "
                                 "(enhancer.pt); use a model folder that has one, e.g. the shipped en_combined")
            return [s.serialize() for s in self.nlp(data, progress=False, **options)]
        if kind == "piece":  # a piece of an input file (g2gt.ud.scale.piecewise) -> its ParsedPiece
            from .piecewise import parse_piece

            if options.get("enhanced") and self.nlp.enhancer is None:
                raise ValueError(f"enhanced=True: the model {self.nlp.source} has no enhanced-UD stage "
                                 "(enhancer.pt); use a model folder that has one, e.g. the shipped en_combined")
            return parse_piece(self.nlp, data, options)
        if kind == "docs":  # a group of inputs (Pipeline.pipe) -> their Documents
            from ..pipe import parse_many

            return parse_many(self.nlp, data, **options)
        if kind == "segment":  # one paragraph block -> sentences s1, s2 ... (renumbered by the main process)
            return self.nlp.tokenize.segment(data, sent_id_prefix="s", first_id=1)
        if kind == "text":  # a whole text, for a tokenizer without weights
            return self.nlp.text_sentences(data)
        if kind == "info":
            return {"learned_tokenizer": bool(self.nlp.learned_tokenizer), "source": self.nlp.source,
                    "name": self.nlp.name}
        raise ValueError(f"unknown job kind {kind!r}")


@dataclass(frozen=True)
class EnhanceRecipe:
    """A worker of ``g2gt enhance --workers N``: :meth:`g2gt.ud.enhance.Enhancer.load` ``(model, device, dtype)``
    once, then ``("enhance", sentences, {"batch_tokens": n}) -> their CoNLL-U text``."""

    model: str = DEFAULT_MODEL
    device: str = "cpu"
    keep_freed_memory: bool = True
    dtype: str = "auto"

    def __call__(self) -> Callable[[tuple[str, Any, dict]], list[str]]:
        worker_setup(self.keep_freed_memory)
        from ..enhance import Enhancer

        enhancer = Enhancer.load(self.model, self.device, self.dtype)

        def handle(job: tuple[str, Any, dict]) -> list[str]:
            _, sentences, options = job
            return [s.serialize() for s in enhancer.enhance(sentences, batch_tokens=options["batch_tokens"])]

        return handle


def enhance_parallel(model: str, sentences: list, workers: int, device: str = "cpu", batch_tokens: int | None = None,
                     progress: bool = False, stats: dict | None = None, dtype: str = "auto") -> Iterator[str]:
    """``Enhancer.load(model, device, dtype).enhance(sentences, batch_tokens)`` with ``workers`` processes, as
    CoNLL-U texts in input order and the same bytes (one job per run of the enhancer's own batches).
    ``batch_tokens``: ``None`` is the device's default (:func:`g2gt.core.batch.inference_batch_tokens`)."""
    from ...core.batch import inference_batch_tokens

    batch_tokens = inference_batch_tokens(device, batch_tokens)
    with ProcessPool(EnhanceRecipe(str(model), str(device), dtype=str(dtype)), workers, preload=("torch",)) as pool:
        yield from map_batch_runs(pool, sentences, None,
                                  lambda part: job_plan([len(s.forms) + 1 for s in part], batch_tokens, parse=False),
                                  lambda sents: ("enhance", sents, {"batch_tokens": batch_tokens}), stats,
                                  progress=progress)


# ---------------------------------------------------------------------------- planning
def job_plan(lengths: list[int], batch_tokens: int, enhanced: bool = False,
             parse: bool = True) -> tuple[list[int], list[int]]:
    """``(order, cuts)`` for one chunk of sentences with ``lengths`` nodes each (words + ROOT): ``order`` is
    the stable length sort both the parser and the enhancer use, and ``order[cuts[k]:cuts[k + 1]]`` is job
    ``k``, a run of whole batches of the parser's :func:`g2gt.ud.parse.batching.length_batches` and, with
    ``enhanced``, of the enhancer's batching too (the same greedy cut by padded nodes, without the parser's
    cap on node pairs). ``parse=False``: the enhancer's batches alone (``g2gt enhance``). ``cuts`` starts
    with 0 and ends with ``len(lengths)``."""
    from ..parse.batching import length_batches

    def ends(batches: list[list[int]]) -> set[int]:
        out, pos = set(), 0
        for b in batches:
            pos += len(b)
            out.add(pos)
        return out

    plans = []
    if parse:
        plans.append(length_batches(lengths, batch_tokens))
    if enhanced or not parse:
        plans.append(length_batches(lengths, batch_tokens, max_pairs=_NO_PAIR_LIMIT))
    order = [i for b in plans[0] for i in b]
    bounds = set.intersection(*(ends(p) for p in plans))
    return order, [0] + sorted(bounds)


def map_batch_runs(pool: ProcessPool, sentences: Iterable, chunk: int | None,
                   plan: Callable[[list], tuple[list[int], list[int]]], job: Callable[[list], Any],
                   stats: dict | None = None, on_done: Callable[[int], None] | None = None,
                   progress: bool = False, check: Callable[[list], None] | None = None,
                   chunk_words: int | None = None) -> Iterator[str]:
    """The engine: ``sentences`` cut into chunks of ``chunk`` sentences, fewer once a chunk holds ``chunk_words``
    words (:func:`g2gt.ud.limits.iter_chunks`, as ``Pipeline.stream`` cuts them); ``plan(chunk) -> (order, cuts)`` (see
    :func:`job_plan`) makes one job ``job(sentences in order)`` per run; the jobs' results (one CoNLL-U text
    per sentence, in the job's order) are yielded in input order. ``check(chunk)`` runs first (e.g. the
    ``--refine`` trees, so the first bad one in input order fails)."""
    meta: deque[tuple[int, list[int]]] = deque()  # per submitted job: (its chunk's number, positions)
    sizes: dict[int, int] = {}

    def jobs() -> Iterator[Any]:
        for c, part in enumerate(iter_chunks(sentences, chunk, chunk_words)):
            if check is not None:
                check(part)
            if stats is not None:
                stats["sentences"] = stats.get("sentences", 0) + len(part)
                stats["words"] = stats.get("words", 0) + sum(len(s) for s in part)
            order, cuts = plan(part)
            sizes[c] = len(part)
            for a, b in zip(cuts, cuts[1:]):
                meta.append((c, order[a:b]))
                yield job([part[i] for i in order[a:b]])

    bar = _progress_bar(progress)
    out: list[str | None] = []
    current, filled = -1, 0
    try:
        for texts in pool.map(jobs()):
            c, positions = meta.popleft()
            if len(texts) != len(positions):  # never write a chunk with sentences missing or extra
                raise RuntimeError(f"a worker returned {len(texts)} sentences for a job of {len(positions)}")
            if c != current:
                current, out, filled = c, [None] * sizes.pop(c), 0
            for i, text in zip(positions, texts):
                out[i] = text
            filled += len(positions)
            if bar is not None:
                bar.update(len(positions))
            if on_done is not None:
                on_done(len(positions))
            if filled == len(out):
                yield from out  # type: ignore[misc]
    finally:
        if bar is not None:
            bar.close()


# ---------------------------------------------------------------------------- the engine
class ParallelPipeline:
    """``workers`` processes, each holding one pipeline (see the module docstring).

    The parsing methods take ``Pipeline.__call__``'s keyword arguments (keep, enhanced, refine_steps,
    algorithm, use_input_graph, batch_tokens, treebank ...: :func:`parse_options`) as ``**options``;
    :meth:`pipe` yields :class:`~g2gt.ud.document.Document` objects as ``Pipeline.pipe`` does.

    Args:
        name_or_path: as :func:`g2gt.load`: a model's name (default ``"en_combined"``) or folder.
        workers: processes (one torch thread each by default, ``threads``).
        device: as :func:`g2gt.load` (default ``"cpu"``).
        dtype: as :func:`g2gt.load` (default ``"auto"``).
        tokenizer: as :func:`g2gt.load`; it matters for raw text only.
        chunk_sentences: sentences per chunk (2000, as ``g2gt parse``: the same chunks give the same bytes).
        progress: one progress bar (sentences) over all workers, on stderr.
        threads: torch threads of each worker.
        start_method: ``"forkserver"`` or ``"spawn"``, see :class:`g2gt.core.pool.ProcessPool` (``None``: its default).
        max_tries: runs of one job that may end in a dead worker before it fails, see
            :class:`g2gt.core.pool.ProcessPool`.
        keep_freed_memory: apply :func:`g2gt.core._compat.keep_freed_memory` in each worker, as the ``g2gt`` command
            does in its own process.
        chunk_words: words per chunk at most: a chunk ends before ``chunk_sentences`` once it holds this many
            (:data:`g2gt.ud.limits.CHUNK_WORDS`; ``None``: no word limit).
    """

    def __init__(self, name_or_path: str = DEFAULT_MODEL, workers: int = 2, *, device: str = "cpu",
                 dtype: str | None = "auto", tokenizer: str = "auto", chunk_sentences: int = PARSE_CHUNK,
                 progress: bool = False, threads: int = 1, start_method: str | None = None, max_tries: int = 3,
                 keep_freed_memory: bool = True, chunk_words: int | None = CHUNK_WORDS) -> None:
        self.recipe = Recipe(str(name_or_path), str(device), dtype, tokenizer, keep_freed_memory)
        self.chunk = chunk_sentences
        self.chunk_words = chunk_words
        self.progress = progress
        self.pool = ProcessPool(self.recipe, workers, threads=threads, start_method=start_method,
                                max_tries=max_tries, preload=("torch",))
        self._info: dict | None = None

    def __enter__(self) -> "ParallelPipeline":
        self.pool.start(background=True)  # the caller goes on while the fork server imports torch
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.pool.close()

    @property
    def info(self) -> dict:
        """What a worker's pipeline is (``learned_tokenizer``, ``source``); waits for the workers to load."""
        if self._info is None:
            self._info = self.pool.run(("info", None, {}))
        return self._info

    # ------------------------------------------------------------------ sentences
    def parse_sentences(self, sentences: Iterable, stats: dict | None = None,
                        on_done: Callable[[int], None] | None = None, **options: Any) -> Iterator[str]:
        """The CoNLL-U text of each parsed sentence of ``sentences``, in order.

        Args:
            sentences: the input :class:`g2gt.ud.io.Sentence` objects.
            stats: a dict that ``sentences`` / ``words`` counts are added to (``None``: no counts).
            on_done: called with ``n`` after each job of ``n`` sentences (``None``: nothing).
            **options: ``Pipeline.__call__``'s keyword arguments.

        Yields:
            The CoNLL-U text of each sentence, in order.
        """
        options = check_options(options)
        enhanced, batch_tokens = bool(options.get("enhanced")), int(options["batch_tokens"])
        check = None
        if options.get("use_input_graph"):  # the first bad tree in input order fails, as in one process
            from ..parse.decode import check_input_trees as check
        from ..limits import iter_limit_sentence_words, long_sentences

        # cut long sentences here, as Pipeline.stream does, so that a job returns one text per sentence it was given
        sentences = iter_limit_sentence_words(sentences, **long_sentences(bool(options.get("use_input_graph"))))
        return map_batch_runs(self.pool, sentences, self.chunk,
                              lambda part: job_plan([len(s.forms) + 1 for s in part], batch_tokens, enhanced),
                              lambda sents: ("parse", sents, options), stats, on_done, self.progress, check,
                              self.chunk_words)

    def pipe(self, texts: Iterable, **options: Any) -> Iterator:
        """One :class:`~g2gt.ud.document.Document` per item of ``texts``, in order.

        Items are raw text or tokenized input: the groups of :func:`g2gt.ud.pipe.text_groups`, one job each
        (``Pipeline.pipe(n_process=N)``).

        Args:
            texts: raw texts or tokenized input.
            **options: ``Pipeline.__call__``'s keyword arguments.

        Yields:
            One :class:`~g2gt.ud.document.Document` per text, in order.
        """
        from ..pipe import text_groups

        options = {k: v for k, v in check_options(options).items() if k != "progress"}
        for docs in self.pool.map(("docs", group, options) for group in text_groups(texts)):
            yield from docs

    # ------------------------------------------------------------------ raw text
    def text_sentences(self, text: str) -> Iterator:
        """The sentences of a raw-text document, segmented by the workers.

        Numbered as :meth:`g2gt.ud.pipeline.Pipeline.text_sentences` numbers them (lazily, block by block).

        Args:
            text: the document's raw text.

        Yields:
            The sentences, in order.
        """
        if not text.strip():
            return
        if not self.info["learned_tokenizer"]:
            yield from self.pool.run(("text", text, {}))
            return
        from ..tokenize.text import paragraph_blocks

        k = 0
        for i, sents in enumerate(self.pool.map(("segment", b, {}) for b in paragraph_blocks(text))):
            if i and sents:
                sents[0].rows.metadata.pop("newdoc", None)  # one document: only its first sentence opens it
            for s in sents:
                k += 1
                s.rows.metadata["sent_id"] = f"s{k}"
                yield s

    def parse_text(self, text: str, stats: dict | None = None, **options: Any) -> Iterator[str]:
        """The CoNLL-U text of each sentence of a raw-text document, in order.

        Args:
            text: the document's raw text.
            stats: a dict that ``sentences`` / ``words`` counts are added to (``None``: no counts).
            **options: ``Pipeline.__call__``'s keyword arguments.

        Yields:
            The CoNLL-U text of each sentence, in order.
        """
        return self.parse_sentences(self.text_sentences(text), stats, **options)

    # ------------------------------------------------------------------ files
    def parse_file(self, source, output, kind: str = "conllu", name: str | None = None, tokenizer: str = "rule",
                   **options: Any) -> dict:
        """Parse one input into ``output``, piece by piece (:mod:`g2gt.ud.scale.piecewise`): each worker reads,
        tokenizes, parses and serialises its own pieces; this process writes them in order.

        Args:
            source: a path, ``"-"``, a stream or an opened :class:`~g2gt.core.files.CheckedInput`.
            output: a path (written atomically), ``"-"`` or a stream.
            kind: the input's kind: ``"conllu"`` (default), ``"raw"`` or ``"lines"``.
            name: the input's name in messages (``None``: its path).
            tokenizer: the tokenizer of ``kind="lines"`` (``"rule"`` or ``"stanza"``; raw text uses the pipeline's).
            **options: ``Pipeline.__call__``'s keyword arguments.

        Returns:
            ``{"sentences", "words"}`` counts.
        """
        from .piecewise import open_pieces, piece_bytes, write_pieces
        from ...core.output import open_output

        from ...core.runtime import resolve_device

        _, jobs = open_pieces(source, kind, name, tokenizer, target=piece_bytes(kind, resolve_device(self.recipe.device)))
        stats = {"sentences": 0, "words": 0}
        bar = _progress_bar(self.progress)
        results = self.parse_jobs(jobs, **options)
        on_piece = None if bar is None else (lambda res: bar.update(res.sentences))
        try:
            if hasattr(output, "write"):
                write_pieces(results, output.write, stats, on_piece)
            else:
                with open_output(output) as f:
                    write_pieces(results, f.write, stats, on_piece)
        finally:
            if bar is not None:
                bar.close()
        return stats

    def parse_jobs(self, jobs: Iterable, **options: Any) -> Iterator:
        """The :class:`~g2gt.ud.scale.piecewise.ParsedPiece` of each piece job (:mod:`g2gt.ud.scale.piecewise`), in
        order, parsed by the workers.

        Args:
            jobs: the :class:`~g2gt.ud.scale.piecewise.PieceJob` objects.
            **options: ``Pipeline.__call__``'s keyword arguments.

        Returns:
            An iterator over the parsed pieces, in order.
        """
        options = check_options(options)
        return self.pool.map(("piece", job, options) for job in jobs)

    def parse_files(self, inputs: Iterable, output_dir, kind: str = "conllu", resume: bool = False,
                    **options: Any) -> FilesReport:
        """One output per input in ``output_dir`` (see :mod:`g2gt.ud.scale.corpus`).

        Each is written atomically, with ``resume`` the finished ones skipped; a file that fails (``FILE:LINE: ...``) is
        reported in the returned :class:`~g2gt.ud.scale.corpus.FilesReport` and the others go on.

        Args:
            inputs: the input files.
            output_dir: the folder of the outputs.
            kind: ``"conllu"`` (default), ``"raw"`` or ``"lines"``.
            resume: skip the inputs whose output is finished.
            **options: ``Pipeline.__call__``'s keyword arguments.

        Returns:
            The :class:`~g2gt.ud.scale.corpus.FilesReport`.
        """
        todo, skipped = plan_files(inputs, output_dir, resume)
        report = FilesReport(skipped=[str(d) for _, d in skipped])
        for src, dst in todo:
            try:
                stats = self.parse_file(src, dst, kind, **options)
            except (ValueError, OSError) as e:  # bad input (InputError, CoNLLUError, JobError), unreadable file
                report.failed.append((src, str(e)))
                continue
            report.done.append(str(dst))
            report.sentences += stats["sentences"]
            report.words += stats["words"]
        return report


def _progress_bar(enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(desc="parse", unit="sent", file=sys.stderr)
