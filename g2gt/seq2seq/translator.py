"""The translation object: load a model once, translate lines, files and streams.

>>> from g2gt.seq2seq import Translator
>>> translator = Translator.load("en_de_multi30k")          # doctest: +SKIP
>>> translator(["A man sleeps .", "", "Two dogs play ."])   # doctest: +SKIP
['Ein Mann schläft .', '', 'Zwei Hunde spielen .']

Contract of :meth:`Translator.__call__`: one output string per input line, in order; a blank line (only
whitespace) gives ``""`` without running the model; an output never holds a line break. A line longer than
the model's source limit (``max_src_len`` subwords, 256 by default) is cut at word boundaries into pieces of
at most that many subwords, preferably after a sentence-final mark (``. ! ? ; :``), each piece translated on
its own and the translations joined with a space, with a warning naming the line: memory stays bounded for
any input (a batch holds at most ``batch_tokens`` padded source subwords, or one piece).

:meth:`Translator.pipe` streams an iterable of any length in chunks of :data:`CHUNK_LINES` lines, on
``n_process`` worker processes when asked (:mod:`.parallel`); the output is the same as in one process.
Graph-to-sequence models take CoNLL-U sentences (:class:`g2gt.ud.io.sentence.Sentence`) instead of lines.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path

import torch

from ..errors import Error
from ..core.checkpoint import CHECKPOINT_KINDS, CheckpointError, checkpoint_kind, load_checkpoint, save_atomic
from ..nn.transformer import G2GTConfig, G2GTransformer
from .config import TranslateConfig
from .package import CARD_FILE, find_translator
from .task import Seq2SeqTask

__all__ = ["Translator", "CHUNK_LINES"]

#: lines read, translated and written at a time by :meth:`Translator.pipe` (one job of a worker process)
CHUNK_LINES = 2000
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_SENTENCE_END = re.compile(r"[.!?;:][\"'»”)\]]*$")


def _wrong_kind(path: Path, state: dict) -> CheckpointError:
    kind = checkpoint_kind(state)
    what = (f"it holds {CHECKPOINT_KINDS.get(kind, f'a {kind!r} model')}" if kind else
            "it holds no kind of model this version knows")
    return CheckpointError(f"{path}: not a translation model: {what}; give a training folder of 'g2gt train "
                           "seq2seq', a file written by Translator.save, or an installed translation model's name")


class Translator:
    """A translation model ready to use: ``translator(lines) -> list[str]`` (see the module docstring).

    Build one with :meth:`load` (or from a trained ``model`` and its ``task``, e.g. the ones
    :func:`g2gt.seq2seq.train_seq2seq` returns). ``config`` (:class:`TranslateConfig`) holds the decoding
    defaults -- beam size, length penalty, batch sizes; keyword options of a call override them for that call.

    Args:
        model: the trained model.
        task: its :class:`Seq2SeqTask` (tokenizers and settings).
        config: the decoding defaults (``None``: :class:`TranslateConfig`'s).
        card: the model's card (``model.json``; ``None``: an empty one).
        source: where it was loaded from, for messages (``None``: in memory).
    """

    def __init__(self, model: G2GTransformer, task: Seq2SeqTask, config: TranslateConfig | None = None,
                 card: dict | None = None, source: str | os.PathLike | None = None) -> None:
        self.model = model.eval()
        self.task = task
        self.config = (config or TranslateConfig()).check()
        self.card = dict(card or {})
        self.source = None if source is None else Path(source)

    # ------------------------------------------------------------------ loading and saving
    @classmethod
    def load(cls, name_or_path: str | os.PathLike, device: str | torch.device = "auto",
             dtype: str | torch.dtype | None = "auto", threads: int | None = None, **options) -> "Translator":
        """Load a translator.

        An installed model package's name, a model folder (``translator.pt``), a training folder of ``g2gt train
        seq2seq`` (``best.pt``, else ``last.pt``) or a checkpoint file. Loads with ``weights_only=True`` and
        ``strict=True``.

        Args:
            name_or_path: an installed package's name, a model folder, a training folder or a checkpoint file.
            device: ``"auto"`` (default: CUDA when available), ``"cpu"``, ``"cuda:1"`` ...
            dtype: ``"auto"`` (default: as every loader, :func:`g2gt.core.runtime.resolve_dtype`: bfloat16 where it is
                fast, a GPU that has it or a CPU with AMX, else float32), ``"float32"``, ``"bfloat16"``,
                ``"float16"`` or a ``torch.dtype``.
            threads: CPU threads of torch (``None`` leaves them).
            **options: :class:`TranslateConfig` fields (``beam=1`` ...) over the defaults stored with the model.

        Returns:
            The :class:`Translator`, in eval mode.

        Raises:
            g2gt.core.checkpoint.CheckpointError: a checkpoint of another kind of model, naming the file and what it
                holds.
        """
        if threads is not None:
            from ..core.runtime import set_threads

            set_threads(threads)
        from ..core.runtime import resolve_device, resolve_dtype

        dev = resolve_device(device)
        dt = resolve_dtype(dtype, dev)
        if dt not in _DTYPES.values():
            raise Error(f"dtype={dtype!r}: a translator runs in {', '.join(_DTYPES)} (or auto)")
        path = find_translator(name_or_path)
        state = load_checkpoint(path, "cpu")
        if checkpoint_kind(state) != "seq2seq":
            raise _wrong_kind(path, state)
        task = Seq2SeqTask.from_checkpoint_extra(state["task"])
        model = G2GTransformer(G2GTConfig.from_dict(state["model_config"]))
        model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state["model"].items()},
                              strict=True)
        model.to(device=dev, dtype=dt)
        _check_options(options)
        config = TranslateConfig.from_dict({**(state.get("translate") or {}), **options})
        card_file = path.with_name(CARD_FILE)
        card = {}
        if path.name != "best.pt" and path.name != "last.pt" and card_file.is_file():
            import json

            card = json.loads(card_file.read_text(encoding="utf-8"))
        return cls(model, task, config, card, source=path)

    def save(self, path: str | os.PathLike, storage_dtype: str | torch.dtype = "float16") -> Path:
        """Write one checkpoint file that :meth:`load` (and ``g2gt translate --model``) reads back.

        It holds the weights (floating-point ones stored as ``storage_dtype``), the tokenizers, settings and this
        translator's :class:`TranslateConfig`.

        Args:
            path: the file to write.
            storage_dtype: dtype of the floating-point weights in the file (default ``"float16"``: it halves the file,
                and loading gives back the same translations as the translator that was saved when its weights are
                float16 values already).

        Returns:
            The path.
        """
        dt = _DTYPES.get(storage_dtype, storage_dtype) if isinstance(storage_dtype, str) else storage_dtype
        if dt not in _DTYPES.values():
            raise Error(f"storage_dtype must be float16, bfloat16 or float32, got {storage_dtype!r}")
        state, done = {}, {}
        for k, v in self.model.state_dict().items():  # tied weights (embeddings, output) stored once
            key = (v.data_ptr(), tuple(v.shape), v.dtype)
            if key not in done:
                done[key] = (v.detach().to("cpu", dt) if v.is_floating_point() else v.detach().cpu()).contiguous()
            state[k] = done[key]
        out = Path(path)
        save_atomic({"kind": "seq2seq", "model": state, "model_config": self.model.config.to_dict(),
                     "task": self.task.checkpoint_extra(), "translate": self.config.to_dict(),
                     "source": {"dtype": str(dt).removeprefix("torch.")}}, out)
        return out

    # ------------------------------------------------------------------ properties
    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def graph(self) -> bool:
        """Whether the model reads source parses (CoNLL-U sentences) instead of lines."""
        return bool(self.task.settings.graph)

    def max_input_subwords(self, config: TranslateConfig | None = None) -> int:
        """The longest piece of a line translated at once under ``config`` (this translator's by default).

        Its ``max_input_subwords``, at most the model's ``max_src_len`` (longer lines are split).

        Args:
            config: decoding settings (``None``: this translator's).

        Returns:
            The number of subwords.
        """
        cfg = config or self.config
        limit = self.task.settings.max_src_len
        return min(cfg.max_input_subwords, limit) if cfg.max_input_subwords else limit

    def __repr__(self) -> str:
        n = sum(p.numel() for p in self.model.parameters())
        name = self.card.get("name") or (str(self.source) if self.source else "in memory")
        return (f"Translator({name}: {n / 1e6:.1f}M parameters, vocab {self.task.src_tok.vocab_size}, "
                f"beam {self.config.beam}, {str(self.dtype).removeprefix('torch.')} on {self.device})")

    # ------------------------------------------------------------------ translating
    def __call__(self, lines: Sequence[str], **options) -> list[str]:
        """One translation per line (module docstring).

        Args:
            lines: the source lines.
            **options: :class:`TranslateConfig` fields for this call (``beam=1``, ``batch_tokens=...``), over this
                translator's own.

        Returns:
            One translation per line.
        """
        return self._translate(lines, self._options(options), first_line=1)

    def _options(self, options: dict) -> TranslateConfig:
        if not options:
            return self.config
        _check_options(options)
        return dataclasses.replace(self.config, **options).check()

    def _translate(self, lines: Sequence, cfg: TranslateConfig, first_line: int) -> list[str]:
        if isinstance(lines, (str, bytes)):
            raise TypeError("a Translator takes a list of lines, got a single string: translator([line])")
        lines = list(lines)
        kw = dict(beam=cfg.beam, length_penalty=cfg.length_penalty, batch_size=cfg.batch_size,
                  batch_tokens=cfg.batch_tokens)
        if self.graph:
            return [h.replace("\n", " ").replace("\r", " ") for h in self.task.translate(self.model, lines, **kw)]
        bad = next((i for i, x in enumerate(lines) if not isinstance(x, str)), None)
        if bad is not None:
            raise TypeError(f"line {first_line + bad}: expected a str, got {type(lines[bad]).__name__}")
        keep = [i for i, line in enumerate(lines) if line.strip()]
        ids = self.task.src_tok.encode_batch([lines[i] for i in keep]) if keep else []
        pieces, owner = self._pieces(lines, keep, ids, first_line, self.max_input_subwords(cfg))
        hyps = self.task.tgt_tok.decode_batch(self.task.translate_ids(self.model, pieces, **kw))
        out: list[list[str]] = [[] for _ in lines]
        for i, h in zip(owner, hyps, strict=True):
            out[i].append(h)
        return [" ".join(p for p in h if p).replace("\n", " ").replace("\r", " ") for h in out]

    def _pieces(self, lines: Sequence[str], keep: list[int], ids: list[list[int]], first_line: int,
                limit: int) -> tuple[list[list[int]], list[int]]:
        """The subword ids to decode and, for each, the line it belongs to (lines over ``limit`` split)."""
        pieces: list[list[int]] = []
        owner: list[int] = []
        long: list[tuple[int, int, int]] = []  # (line number, subwords, pieces)
        for i, s in zip(keep, ids, strict=True):
            if len(s) <= limit:
                pieces.append(s)
                owner.append(i)
                continue
            parts = self._split(lines[i], limit)
            long.append((first_line + i, len(s), len(parts)))
            pieces += parts
            owner += [i] * len(parts)
        if long:
            where = ", ".join(f"line {n} ({k:,} subwords, {p} pieces)" for n, k, p in long[:5])
            more = f" and {len(long) - 5} more" if len(long) > 5 else ""
            warnings.warn(f"{where}{more}: longer than the {limit} subwords translated at once; each was split at "
                          "word boundaries and its pieces translated one by one", stacklevel=4)
        return pieces, owner

    def _split(self, line: str, limit: int) -> list[list[int]]:
        """``line`` cut between words into pieces of at most ``limit`` subwords, preferably after a
        sentence-final mark in the second half of a piece; a single word longer than ``limit`` is cut."""
        words = line.split()
        counts = [len(c) for c in self.task.src_tok.encode_batch(words)]
        pieces: list[list[int]] = []
        start = 0
        while start < len(words):
            end, total, cut = start, 0, None
            while end < len(words) and total + counts[end] <= limit:
                total += counts[end]
                end += 1
                if _SENTENCE_END.search(words[end - 1]) and total * 2 >= limit:
                    cut = end
            if end == start:  # one word over the limit: its first subwords
                pieces.append(self.task.src_tok.encode(words[start])[:limit])
                start += 1
                continue
            end = cut if cut is not None and end < len(words) else end
            pieces.append(self.task.src_tok.encode(" ".join(words[start:end]))[:limit])
            start = end
        return pieces

    def pipe(self, lines: Iterable, n_process: int = 1, progress: bool = False, **options) -> Iterator[str]:
        """Translations of ``lines``, in order, one per line.

        ``lines`` is any iterable, read :data:`CHUNK_LINES` at a time.

        Args:
            lines: source lines, any iterable.
            n_process: ``> 1``: translate chunks in that many worker processes (the same output); ``1``: in this one.
            progress: count the lines on stderr.
            **options: :class:`TranslateConfig` fields (``beam=1``, ``batch_tokens=...``) over this translator's own.

        Yields:
            One translation per line, in order.
        """
        cfg = self._options(options)
        if isinstance(n_process, bool) or not isinstance(n_process, int) or n_process < 1:
            raise Error(f"n_process must be an integer >= 1, got {n_process!r}")
        from tqdm.auto import tqdm

        chunks = _chunks(lines, CHUNK_LINES)
        bar = tqdm(desc="translate", unit=" lines", disable=not progress, file=sys.stderr, dynamic_ncols=True)
        try:
            if n_process == 1:
                start = 1
                for chunk in chunks:
                    out = self._translate(chunk, cfg, start)
                    start += len(chunk)
                    bar.update(len(out))
                    yield from out
                return
            from .parallel import translate_parallel

            for line in translate_parallel(self, chunks, cfg, n_process):
                bar.update(1)
                yield line
        finally:
            bar.close()

    def translate_file(self, src: str | os.PathLike, out: str | os.PathLike, n_process: int = 1,
                       progress: bool = False, **options) -> int:
        """Translate the lines of ``src`` into ``out``.

        ``src`` is plain or ``.gz`` UTF-8 (CoNLL-U for a graph-to-sequence model); ``out`` gets one line each (``"-"`` =
        standard input / output) and appears only once complete.

        Args:
            src: the input file (``"-"``: standard input).
            out: the output file (``"-"``: standard output).
            n_process: worker processes, as for :meth:`pipe`.
            progress: count the lines on stderr, as for :meth:`pipe`.
            **options: :class:`TranslateConfig` fields (``beam=1``, ``batch_tokens=...``) over this translator's own,
                as for :meth:`pipe`.

        Returns:
            The number of lines written.
        """
        from ..core.files import iter_lines
        from ..core.output import open_output

        if self.graph:
            from ..ud.io import iter_conllu

            source = iter_conllu(src, require_heads=True)
        else:
            source = iter_lines(src)
        n = 0
        with open_output(out) as f:
            for line in self.pipe(source, n_process=n_process, progress=progress, **options):
                f.write(line + "\n")
                n += 1
        return n


def _check_options(options: dict) -> None:
    known = {f.name for f in dataclasses.fields(TranslateConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown translation option(s) {unknown}; expected some of {sorted(known)}")


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk
