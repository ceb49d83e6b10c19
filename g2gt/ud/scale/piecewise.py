"""Parse an input file piece by piece: the one path of ``g2gt parse FILE -o OUT`` for one process, ``--workers
N`` and Ray, so that all three write the same bytes.

The input -- raw text, one sentence per line, or CoNLL-U -- is cut into pieces of whole paragraphs (whole lines
for ``--lines``) of about 64 KiB (:mod:`g2gt.core.pieces`, a cheap scan of its bytes). Each piece is handled
alone, by whoever gets it: :func:`parse_piece` reads its byte range, tokenizes it (raw text: the pipeline's
tokenizer, one piece a document of its own but for the sentence ids), parses it with
:meth:`Pipeline.stream <g2gt.ud.pipeline.Pipeline.stream>` (chunks of 2,000 sentences or 20,000 words inside
the piece) and serialises it as CoNLL-U. The process that writes the output only puts the pieces in order:

* a raw text's sentences are numbered ``s1, s2 ...`` across the whole text, and only its first sentence has
  ``# newdoc``: a piece's sentences carry a placeholder id, which :class:`Numbering` fills in as the pieces are
  written (one ``str.split`` per piece);
* ``--lines`` sentences are numbered by their line (a piece knows its first line), CoNLL-U sentences keep
  their own ids: nothing to fill in.

Since a model batch's numbers depend a little on the batch's other sentences (int8 dynamic quantization scales
activations per batch), the batches are cut inside a piece, never across pieces: who parses a piece does not
change its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from ..io import Sentence
from ..limits import CHUNK_SENTENCES  # noqa: F401 (read at each call: sentences parsed together at most)
from ...core.files import CheckedInput, open_input
from ...core.pieces import PIECE_BYTES, Piece, input_pieces, piece_text, scan_pieces

__all__ = ["KINDS", "piece_bytes", "PieceJob", "ParsedPiece", "Numbering", "open_pieces", "piece_sentences",
           "parsed_sentences", "text_parsed_sentences", "text_jobs", "parse_piece",
           "write_pieces"]

#: input kinds (``raw``: text, ``lines``: a sentence per line, ``conllu``) -> how they are cut and the bytes a
#: piece holds at least: about 11,000 words of text, 8,000 of CoNLL-U (a line per word; 512 KiB: a piece's
#: sentences, with every column, are most of a process's Python objects, and with 1 MiB pieces the peak memory of a
#: long input rose 1.09x where it rises 1.06x now, at the same words/s: docs/benchmarks.md, "Memory over a corpus")
KINDS = {"raw": ("paragraph", PIECE_BYTES), "lines": ("line", PIECE_BYTES), "conllu": ("paragraph", 8 * PIECE_BYTES)}
#: pieces on a GPU are this many times larger: its batches are larger (``batch_tokens`` scales with the device) and a
#: call's fixed cost weighs more
GPU_PIECE_SCALE = 16
_PLACEHOLDER = "\x00"  # a raw text's sentence id until it is numbered (control characters never reach a sentence)
_ID_LINE = f"# sent_id = {_PLACEHOLDER}\n"


def piece_bytes(kind: str, device: Any = "cpu") -> int:
    """Bytes a piece of a ``kind`` input holds at least when parsed on ``device`` (:data:`KINDS`, times
    :data:`GPU_PIECE_SCALE` on a GPU)."""
    size = KINDS[kind][1]
    return size * GPU_PIECE_SCALE if str(device).startswith("cuda") else size


@dataclass(frozen=True)
class PieceJob:
    """One piece to parse (picklable: what a worker is sent).

    Attributes:
        kind: ``"raw"``, ``"lines"`` or ``"conllu"``.
        name: the input's name in messages.
        path: the input's path, where the piece's bytes are read (``None``: they are in ``piece.data``).
        piece: the piece.
        tokenizer: the tokenizer of ``lines`` (``"rule"`` or ``"stanza"``; raw text uses the pipeline's).
    """

    kind: str
    name: str
    path: str | None
    piece: Piece
    tokenizer: str = "rule"


@dataclass(frozen=True)
class ParsedPiece:
    """A parsed piece: its CoNLL-U (raw text: with placeholder ids, see :class:`Numbering`) and its counts."""

    conllu: str
    sentences: int
    words: int


def open_pieces(source: Any, kind: str, name: str | None = None, tokenizer: str = "rule",
                target: int | None = None, with_bytes: bool = False) -> tuple[CheckedInput, Iterator[PieceJob]]:
    """Open and check an input (``FILE:LINE`` errors here, before any model is loaded) and the jobs of its pieces.

    Args:
        source: a path, ``"-"``, a stream, or an already opened :class:`~g2gt.core.files.CheckedInput`.
        kind: ``"raw"``, ``"lines"`` or ``"conllu"``.
        name: the input's name in messages (``None``: its path).
        tokenizer: the tokenizer of ``lines``.
        target: bytes a piece holds at least (``None``: the kind's, :data:`KINDS`).
        with_bytes: every piece carries its bytes (for workers that cannot read the input's path, e.g. a Ray
            cluster); else only the pieces of an input without a path do.

    Returns:
        ``(the opened input, an iterator of its pieces' jobs)``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if isinstance(source, CheckedInput):
        inp = source
    elif kind == "conllu":
        from ..io.conllu import CoNLLUError

        inp = open_input(source, name, error=CoNLLUError, kind="CoNLL-U")
    else:
        inp = open_input(source, name, kind="text")
    unit, size = KINDS[kind]
    pieces = (scan_pieces(inp.blocks(), unit, target or size, total=inp.size) if with_bytes
              else input_pieces(inp, unit, target or size))
    path = None if with_bytes else inp.path
    jobs = (PieceJob(kind, inp.name, path, p, tokenizer) for p in pieces)
    return inp, jobs


def text_jobs(text: str, name: str = "<text>") -> Iterator[PieceJob]:
    """The piece jobs of a raw text held in memory: the pieces of a file holding it (its
    :func:`~g2gt.ud.tokenize.text.paragraph_blocks`), each carrying its bytes."""
    data = text.encode("utf-8")
    for p in scan_pieces([data], KINDS["raw"][0], KINDS["raw"][1], total=len(data)):
        yield PieceJob("raw", name, None, p)


def piece_sentences(nlp, job: PieceJob) -> Iterable[Sentence]:
    """The unparsed sentences of one piece (see the module docstring)."""
    text = piece_text(job.piece, job.path, job.name)
    if job.kind == "conllu":
        from ..io import parse_conllu_string

        return parse_conllu_string(text, job.name, first_line=job.piece.first_line)
    if job.kind == "lines":
        from ..tokenize.text import iter_line_sentences

        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the final newline
        return iter_line_sentences((ln[:-1] if ln.endswith("\r") else ln for ln in lines), job.name, job.tokenizer,
                                   first_line=job.piece.first_line)
    from ..limits import drop_control_characters

    sentences = _segment_block(nlp, drop_control_characters(text, job.name))
    if job.piece.index and sentences:
        sentences[0].rows.metadata.pop("newdoc", None)  # one document: only its first sentence opens it
    for s in sentences:
        s.rows.metadata["sent_id"] = _PLACEHOLDER
    return sentences


def parsed_sentences(nlp, job: PieceJob, options: dict, stats: dict | None = None) -> Iterator[Sentence]:
    """The parsed sentences of one piece (raw text: with placeholder ids), as :func:`parse_piece` makes them.

    Args:
        nlp: the :class:`~g2gt.ud.pipeline.Pipeline`.
        job: the piece.
        options: ``Pipeline.__call__``'s keyword arguments.
        stats: a dict that ``sentences`` / ``words`` counts are added to (``None``: no counts).

    Returns:
        An iterator over the parsed sentences, in order.
    """
    sentences = piece_sentences(nlp, job)
    if options.get("use_input_graph"):  # the first bad input tree in input order is the one reported
        from ..parse.decode import check_input_trees

        sentences = list(sentences)
        check_input_trees(sentences)
    return nlp.stream(sentences, CHUNK_SENTENCES, stats, **options)


def text_parsed_sentences(nlp, text: str, options: dict, stats: dict | None = None) -> Iterator[Sentence]:
    """The parsed sentences of a raw text held in memory, numbered ``s1, s2 ...``, parsed piece by piece as
    ``g2gt parse --raw FILE`` parses the file holding it (its pieces are the text's
    :func:`~g2gt.ud.tokenize.text.paragraph_blocks`): ``--text`` and ``--format json`` give the sentences of the
    CoNLL-U output.

    Args:
        nlp: the :class:`~g2gt.ud.pipeline.Pipeline`.
        text: the raw text (control characters already dropped, as the offsets of ``--format json`` need).
        options: ``Pipeline.__call__``'s keyword arguments.
        stats: a dict that ``sentences`` / ``words`` counts are added to (``None``: no counts).

    Yields:
        The parsed sentences, in order.
    """
    from ..tokenize.text import paragraph_blocks

    k = 0
    for i, block in enumerate(paragraph_blocks(text) if nlp.learned_tokenizer else [text]):
        sentences = _segment_block(nlp, block)
        if i and sentences:
            sentences[0].rows.metadata.pop("newdoc", None)
        for s in sentences:
            k += 1
            s.rows.metadata["sent_id"] = f"s{k}"
        yield from nlp.stream(sentences, CHUNK_SENTENCES, stats, **options)


def _segment_block(nlp, text: str) -> list[Sentence]:
    """The sentences of one piece of a text (a learned tokenizer segments it as one block: it is one of the
    text's :func:`~g2gt.ud.tokenize.text.paragraph_blocks` already)."""
    if nlp.learned_tokenizer:
        return nlp.tokenize.segment(text, sent_id_prefix="s", first_id=1) if text.strip() else []
    return nlp.text_sentences(text)


def parse_piece(nlp, job: PieceJob, options: dict) -> ParsedPiece:
    """Read, tokenize, parse and serialise one piece with the pipeline ``nlp``.

    Args:
        nlp: the :class:`~g2gt.ud.pipeline.Pipeline`.
        job: the piece.
        options: ``Pipeline.__call__``'s keyword arguments.

    Returns:
        The :class:`ParsedPiece`.
    """
    stats = {"sentences": 0, "words": 0}
    parsed = parsed_sentences(nlp, job, options, stats)
    return ParsedPiece("".join(s.serialize() for s in parsed), stats["sentences"], stats["words"])


class Numbering:
    """Fills in a raw text's sentence ids ``s1, s2 ...`` as its pieces are written in order."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, conllu: str) -> str:
        """``conllu`` (a piece's, in order) with its placeholder ids numbered."""
        parts = conllu.split(_ID_LINE)
        if len(parts) == 1:
            return conllu
        out = [parts[0]]
        for k, part in enumerate(parts[1:], self.count + 1):
            out.append(f"# sent_id = s{k}\n")
            out.append(part)
        self.count += len(parts) - 1
        return "".join(out)


def write_pieces(results: Iterable[ParsedPiece], write: Callable[[str], Any], stats: dict | None = None,
                 on_piece: Callable[[ParsedPiece], None] | None = None) -> None:
    """Write parsed pieces (in input order) with ``write``, numbering a raw text's sentences.

    Args:
        results: the parsed pieces, in order (from this process or from workers).
        write: called with the CoNLL-U text of each piece.
        stats: a dict that ``sentences`` / ``words`` counts are added to (``None``: no counts).
        on_piece: called with each piece once written (``None``: nothing), e.g. a progress bar.
    """
    numbering = Numbering()
    for res in results:
        write(numbering(res.conllu))
        if stats is not None:
            stats["sentences"] = stats.get("sentences", 0) + res.sentences
            stats["words"] = stats.get("words", 0) + res.words
        if on_piece is not None:
            on_piece(res)
