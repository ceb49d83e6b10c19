"""Parse with Ray Data: documents mapped through an actor pool of pipelines, on a laptop or a cluster.

Needs the optional extra ``pip install "g2gt[ray]"``.

    import ray, ray.data
    from g2gt.ud.scale.ray_data import parse_dataset

    ray.init()                                           # or ray.init(address="auto") on a cluster
    ds = ray.data.from_items([{"text": "He sat. Then he left."}, {"conllu": open("in.conllu").read()}])
    for row in parse_dataset(ds, "en_combined", actors=4, enhanced=True).iter_rows():
        print(row["parsed"])                             # CoNLL-U; row["error"] is "" or FILE:LINE: ...

:func:`parse_dataset` runs ``Dataset.map_batches`` with the callable class :class:`PipelineActor` on an
actor pool (``ActorPoolStrategy(size=actors)``, one CPU and one torch thread per actor); each actor loads
one :class:`g2gt.ud.pipeline.Pipeline` from a :class:`g2gt.ud.scale.parallel.Recipe` and parses every document it
is given exactly as ``g2gt parse`` does (raw text: ``Pipeline.text_sentences``; both: ``Pipeline.stream``
with 2000-sentence chunks), so a document gives the same bytes as one process. A row whose document is
malformed gets its message in ``error`` and an empty ``parsed``; the others go on. Ray restarts an actor
that dies and retries its task (Ray Data's defaults for actor pools: ``max_restarts=-1``,
``max_task_retries=-1``), so a killed actor loses nothing.

:func:`parse_files` is ``g2gt parse --ray ADDRESS|local INPUTS... --output-dir DIR``: the driver reads and
checks the inputs (``FILE:LINE`` errors) and cuts each into the pieces one process and ``--workers`` read
(:mod:`g2gt.ud.scale.piecewise`; a row carries a piece's bytes, so the inputs and outputs need only be on the
driver's machine); the actors parse the pieces as a worker does, and the driver writes one CoNLL-U file per input,
atomically and in order, from the rows that come back: the same bytes as ``g2gt parse`` with one process.
"""

from __future__ import annotations

import sys
from itertools import islice
from typing import Any, Iterable, Iterator

from .corpus import FilesReport, plan_files
from .parallel import PARSE_CHUNK, Recipe, check_options
from ...core.registry import DEFAULT_MODEL

__all__ = ["PipelineActor", "parse_dataset", "parse_files", "init_ray", "ROWS_PER_RUN"]

ROWS_PER_RUN = 64  # rows (documents / chunks) per Dataset run: driver and object-store memory stay bounded


class PipelineActor:
    """The callable class of :func:`parse_dataset`: ``batch -> batch`` with ``parsed`` (CoNLL-U),
    ``error``, ``sentences`` and ``words`` columns added. A row holds ``text`` (raw text) or ``conllu``."""

    def __init__(self, recipe: Recipe, options: dict, chunk_sentences: int = PARSE_CHUNK, threads: int = 1) -> None:
        if threads > 0:
            import torch

            torch.set_num_threads(threads)
        self.nlp = recipe().nlp
        self.options = check_options(options)
        self.chunk = chunk_sentences

    def parse_document(self, text: str | None, conllu: str | None, name: str) -> tuple[str, int, int]:
        """``(CoNLL-U, sentences, words)`` of one document."""
        from ..io import parse_conllu_string

        if conllu is not None:
            sentences: Iterable = parse_conllu_string(conllu, name=name)
        else:
            sentences = self.nlp.text_sentences(text or "")
        stats = {"sentences": 0, "words": 0}
        out = "".join(s.serialize() for s in self.nlp.stream(sentences, self.chunk, stats, **self.options))
        return out, stats["sentences"], stats["words"]

    def parse_piece(self, row: dict, name: str) -> tuple[str, int, int]:
        """``(CoNLL-U, sentences, words)`` of one piece of a file (:mod:`g2gt.ud.scale.piecewise`)."""
        from .piecewise import PieceJob, parse_piece
        from ...core.pieces import Piece

        data = bytes(row["piece"])
        piece = Piece(int(row["index"]), int(row["offset"]), len(data), int(row["first_line"]), data)
        res = parse_piece(self.nlp, PieceJob(str(row["kind"]), name, None, piece, str(row["tokenizer"])),
                          self.options)
        return res.conllu, res.sentences, res.words

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        n = len(next(iter(batch.values())))
        if "piece" in batch:  # pieces of files (parse_files); a row of a file that failed to read is skipped
            def one(i: int) -> tuple[str, int, int]:
                if batch["fail"][i]:
                    return "", 0, 0
                row = {k: batch[k][i] for k in ("piece", "kind", "index", "offset", "first_line", "tokenizer")}
                return self.parse_piece(row, str(batch["path"][i]))
        else:  # documents (parse_dataset)
            texts, docs, names = batch.get("text"), batch.get("conllu"), batch.get("path")

            def one(i: int) -> tuple[str, int, int]:
                return self.parse_document(_value(texts, i), _value(docs, i), _value(names, i) or f"<row {i}>")
        parsed, errors, sents, words = [], [], [], []
        for i in range(n):
            try:
                out, ns, nw = one(i)
                err = ""
            except ValueError as e:  # a malformed document or file fails alone
                out, ns, nw, err = "", 0, 0, str(e)
            parsed.append(out)
            errors.append(err)
            sents.append(ns)
            words.append(nw)
        return {**batch, "parsed": parsed, "error": errors, "sentences": sents, "words": words}


def _value(column, i: int) -> str | None:
    """Row ``i`` of a string column, None where it is null (Ray turns a null cell into NaN or None)."""
    if column is None:
        return None
    v = column[i]
    return v if isinstance(v, str) else None


def parse_dataset(ds, name_or_path: str = DEFAULT_MODEL, *, actors: int = 2, device: str = "cpu",
                  dtype: str | None = "auto", tokenizer: str = "auto", chunk_sentences: int = PARSE_CHUNK,
                  threads: int = 1, **options: Any):
    """``ds`` (a ``ray.data.Dataset`` with a ``text`` or a ``conllu`` column, any others kept) mapped through
    ``actors`` :class:`PipelineActor` actors; returns the lazy Dataset with ``parsed`` / ``error`` /
    ``sentences`` / ``words`` added. ``options``: ``Pipeline.__call__``'s (keep, enhanced, refine_steps,
    algorithm, use_input_graph, batch_tokens)."""
    from ray.data import ActorPoolStrategy

    recipe = Recipe(str(name_or_path), str(device), dtype, tokenizer)
    return ds.map_batches(PipelineActor, fn_constructor_kwargs=dict(recipe=recipe, options=check_options(options),
                                                                    chunk_sentences=chunk_sentences, threads=threads),
                          batch_size=1, compute=ActorPoolStrategy(size=actors), num_cpus=max(1, threads))


def init_ray(address: str = "local", num_cpus: int | None = None, object_store_memory: int | None = None) -> None:
    """Connect to Ray unless already connected: ``"local"`` starts a one-machine cluster (``num_cpus``,
    ``object_store_memory`` in bytes), anything else is a cluster address (``"auto"``, ``"ray://host:10001"``)."""
    import ray

    if ray.is_initialized():
        return
    if address == "local":
        ray.init(num_cpus=num_cpus, object_store_memory=object_store_memory, include_dashboard=False,
                 log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)


def _file_rows(src: str, dst: str, kind: str, tokenizer: str) -> Iterator[dict]:
    """The rows of one input: its pieces (:mod:`g2gt.ud.scale.piecewise`), read and checked here and carrying their
    bytes. Each row says whether it is the file's ``last``; a ``FILE:LINE`` error while reading ends the file with
    a row that carries it (``fail``), so the writer drops what it has of that file."""
    from .piecewise import open_pieces

    def row(job=None, last: bool = False, fail: str = "") -> dict:
        p = job.piece if job is not None else None
        return {"piece": p.data if p else b"", "kind": kind, "index": p.index if p else 0,
                "offset": p.offset if p else 0, "first_line": p.first_line if p else 1, "tokenizer": tokenizer,
                "path": src, "dst": dst, "last": last, "fail": fail}

    try:
        _, jobs = open_pieces(src, kind, tokenizer=tokenizer, with_bytes=True)
        job = next(jobs, None)
        for nxt in jobs:  # one piece of look-ahead: a row knows whether it is the last one
            yield row(job)
            job = nxt
    except (ValueError, OSError) as e:
        yield row(None, True, str(e))
        return
    yield row(job, True)  # an empty input: one empty piece, an empty output


def parse_files(inputs: Iterable, output_dir, *, address: str = "local", kind: str = "conllu", resume: bool = False,
                actors: int | None = None, name_or_path: str = DEFAULT_MODEL, device: str = "cpu",
                dtype: str | None = "auto", tokenizer: str = "auto", num_cpus: int | None = None,
                object_store_memory: int | None = None, rows_per_run: int = ROWS_PER_RUN,
                log=sys.stderr, **options: Any) -> FilesReport:
    """One CoNLL-U file per input in ``output_dir`` through Ray (see the module docstring); ``actors``
    (default: the cluster's CPUs) pipelines. The inputs are read ``rows_per_run`` rows at a time, so the
    driver's memory does not grow with the corpus. Returns the :class:`~g2gt.ud.scale.corpus.FilesReport`."""
    import ray
    import ray.data

    todo, skipped = plan_files(inputs, output_dir, resume)
    report = FilesReport(skipped=[str(d) for _, d in skipped])
    if not todo:
        return report
    init_ray(address, num_cpus, object_store_memory)
    ray.data.DataContext.get_current().execution_options.preserve_order = True
    n_actors = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    options = check_options(options)
    lines_tokenizer = tokenizer if tokenizer in ("rule", "stanza") else "rule"
    rows = (r for src, dst in todo for r in _file_rows(src, str(dst), kind, lines_tokenizer))
    writer = _Writer(report)
    try:
        while run := list(islice(rows, rows_per_run)):
            ds = ray.data.from_items(run)
            for row in parse_dataset(ds, name_or_path, actors=n_actors, device=device, dtype=dtype,
                                     tokenizer=tokenizer, **options).iter_rows():
                writer.add(row)
    finally:
        writer.close()
    if log is not None and report.failed:
        print(report.summary(), file=log)
    return report


class _Writer:
    """Rows back in input order -> one atomic output per input; a row with an error fails its file."""

    def __init__(self, report: FilesReport) -> None:
        self.report = report
        self.out = None  # the AtomicOutput being written, None while a failed file's rows go by
        self.file = None
        self.current = None  # the output path of the file being written
        self.numbering = None  # a raw text's sentence ids, across its pieces

    def add(self, row: dict) -> None:
        from ...core.output import AtomicOutput

        if row["dst"] != self.current:
            from .piecewise import Numbering

            self.current, self.out, self.numbering = row["dst"], AtomicOutput(row["dst"]), Numbering()
            self.file = self.out.__enter__()
        error = row["fail"] or row["error"]
        if self.out is not None and error:
            self.report.failed.append((row["path"], error))
            self._drop()
        elif self.out is not None:
            self.file.write(self.numbering(row["parsed"]))
            self.report.sentences += int(row["sentences"])
            self.report.words += int(row["words"])
            if row["last"]:
                self.out.__exit__(None, None, None)  # renamed into place
                self.report.done.append(row["dst"])
                self.out = self.file = None

    def _drop(self) -> None:
        self.out.__exit__(ValueError, ValueError("dropped"), None)  # removes the temporary file
        self.out = self.file = None

    def close(self) -> None:
        if self.out is not None:  # an interrupted run leaves no partial output
            self._drop()
