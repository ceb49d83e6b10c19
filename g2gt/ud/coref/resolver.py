"""``Coreferencer.load(path)(sentences)``: mentions and entities of parsed documents, as CorefUD ``Entity=``.

The input is parsed sentences (gold or predicted trees; FORM, LEMMA, UPOS, FEATS, HEAD, DEPREL are read),
grouped into documents by ``# newdoc`` (:func:`g2gt.ud.coref.io.documents`). Each document is encoded in
windows of whole sentences of at most ``max_words`` words (default 2048: GUM's longest document fits in one),
and mentions are linked only inside a window. :meth:`Coreferencer.stream` reads a stream of sentences a
document at a time, and a document longer than :data:`g2gt.ud.limits.CHUNK_WORDS` words in parts cut between
windows (:mod:`g2gt.ud.coref.parts`), so that memory does not grow with the input. The output sentences are copies whose words' MISC carry the
predicted ``Entity`` brackets (and no ``SplitAnte`` / ``Bridge``); every other MISC item, column and comment
is kept. The entity layout is the document's ``# global.Entity`` when it has one, else the training
treebank's (declared on the document's first sentence), so that the output can be scored against it.

The name follows the pipeline's stage nouns (``Parser``, ``Enhancer``): the stage resolves coreference.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import torch

from ..limits import CHUNK_WORDS, max_sentence_words, over_limit
from ..stage import checkpoint_record, prepare_for_inference, save_stage
from .data import CorefVocab, DocExample, make_batch, make_doc, window_graph, windows
from .decode import decode_window
from .io import DEFAULT_LAYOUT, Mention, documents, entity_layout, write_mentions
from .parts import document_parts
from .model import CorefConfig, CorefModel

__all__ = ["Coreferencer", "FILE_NAME"]

FILE_NAME = "coref.pt"


def coref_checkpoint(name_or_path: str | os.PathLike) -> Path:
    """The coreference checkpoint of a shipped or installed model's name (``en_combined``) or a model folder
    (its ``coref.pt``), a folder written by ``g2gt train coref`` (``best.pt``, else ``last.pt``) or a checkpoint
    file. ``FileNotFoundError`` naming what is missing (a model without a coreference stage, an unknown name)."""
    from ...core.checkpoint import resolve_checkpoint
    from ...core.registry import find_model, is_model_folder

    p = Path(name_or_path)
    if p.is_dir() and (p / FILE_NAME).is_file():
        return p / FILE_NAME
    where = find_model(name_or_path)
    if where.is_dir() and (where / FILE_NAME).is_file():
        return where / FILE_NAME
    if is_model_folder(where):
        raise FileNotFoundError(f"{name_or_path}: this model folder has no {FILE_NAME} (a model without a "
                                "coreference stage)")
    return resolve_checkpoint(where)


class Coreferencer:
    """A trained coreference model (see the module docstring)."""

    kind = "coref"

    def __init__(self, model: CorefModel, vocab: CorefVocab, layout: str = DEFAULT_LAYOUT,
                 max_words: int = 2048, threshold: float = 0.0) -> None:
        self.model = model
        self.threshold = threshold  # antecedent score a link must beat (0 = "no antecedent" as trained)
        # personal pronouns of different genders never in one entity (g2gt.ud.coref.decode)
        self.agreement = True
        self.vocab = vocab
        self.layout = layout
        self.max_words = max_words
        self.record: dict = {}
        self.file: Path | None = None
        self.dtype: torch.dtype = torch.float32

    @classmethod
    def load(cls, name_or_path: str | Path, device: str | torch.device = "auto",
             dtype: torch.dtype | str | None = "auto") -> "Coreferencer":
        """Load ``coref.pt`` of a model folder, ``best.pt`` (else ``last.pt``) of a folder written by
        ``g2gt train coref``, or a checkpoint file (``weights_only=True``, ``strict=True``); ``device`` and
        ``dtype`` as every loader (:func:`g2gt.core.runtime.resolve_dtype`; ``"auto"`` never picks int8)."""
        path = name_or_path
        from ...core.checkpoint import CHECKPOINT_KINDS, CheckpointError, checkpoint_kind, load_checkpoint
        from ...core.runtime import resolve_device, resolve_dtype

        device = resolve_device(device)
        dt = resolve_dtype(dtype, device)

        file = coref_checkpoint(path)
        ck = load_checkpoint(file, device)
        extra = ck.get("task", {})
        if extra.get("kind") != cls.kind or "vocab" not in extra:
            found = checkpoint_kind(ck)
            held = f"; it holds {CHECKPOINT_KINDS.get(found, repr(found))}" if found and found != cls.kind else ""
            raise CheckpointError(f"{file}: not a coreference checkpoint{held} (train one with 'g2gt train coref')")
        model = CorefModel(CorefConfig.from_dict(ck["model_config"]))
        model.load_state_dict(ck["model"], strict=True)
        out = cls(prepare_for_inference(model, dt, device), CorefVocab.from_dict(extra["vocab"]),
                  extra.get("layout") or DEFAULT_LAYOUT, threshold=float(extra.get("threshold", 0.0)))
        out.record, out.file, out.dtype = checkpoint_record(ck), file, dt
        return out

    def save(self, path: str | Path, storage_dtype: str | torch.dtype = "float16") -> Path:
        """Write this stage as one checkpoint file (``coref.pt`` in a model folder) that :meth:`load` reads."""
        record = self.record or {"model_config": self.model.config.to_dict(),
                                 "task": {"kind": self.kind, "vocab": self.vocab.to_dict(), "layout": self.layout,
                                          "threshold": self.threshold}}
        record = {**record, "task": {**record.get("task", {}), "threshold": self.threshold}}
        return save_stage(path, self.model, record, self.file, False, storage_dtype)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def predict_docs(self, docs: Sequence[DocExample]) -> list[list[Mention]]:
        """The predicted mentions (entity ids ``1, 2, ...`` per document) of each document."""
        return [self._predict_doc(ex) for ex in docs]

    def _predict_doc(self, ex: DocExample, first_eid: int = 1) -> list[Mention]:
        """The predicted mentions of one document (or part of one), entity ids from ``first_eid`` on."""
        model, vocab = self.model, self.vocab
        was = model.training
        model.eval()
        mentions: list[Mention] = []
        with torch.inference_mode():
            for a, b in windows(ex, self.max_words):
                g = window_graph(ex, vocab, a, b, model.config.max_distance)
                pred = model.predict(make_batch([g], vocab).to(self.device))
                first = first_eid + len({m.eid for m in mentions})
                mentions += decode_window(pred, 0, b - a, a, vocab.etypes, first, self.threshold,
                                          ex.genders[a:b] if self.agreement and ex.genders else None)
        model.train(was)
        return mentions

    def tune_threshold(self, sentences: Sequence, grid: Sequence[float] = (0.0, -0.5, -1.0, -1.5, -2.0, -2.5)
                       ) -> dict[float, float]:
        """Set :attr:`threshold` to the value of ``grid`` with the best CoNLL F1 (head match, no singletons) on
        annotated ``sentences`` (a dev set, with trees and ``Entity=``); returns ``{threshold: CoNLL F1}``. The
        model runs once; only the decoding is repeated."""
        import dataclasses

        from .metrics import coref_scores

        docs = [make_doc(d, self.vocab) for d in documents(sentences)]
        no_head = "head" not in self.layout.split("-")
        gold = [ex.mentions for ex in docs]
        preds = []
        with torch.inference_mode():
            for ex in docs:
                preds.append([(a, b, self.model.predict(make_batch([window_graph(
                    ex, self.vocab, a, b, self.model.config.max_distance)], self.vocab).to(self.device)))
                    for a, b in windows(ex, self.max_words)])
        scores = {}
        for t in grid:
            out = []
            for ex, wins in zip(docs, preds):
                ms: list[Mention] = []
                for a, b, p in wins:
                    ms += decode_window(p, 0, b - a, a, self.vocab.etypes, 1 + len({m.eid for m in ms}), t,
                                        ex.genders[a:b] if self.agreement and ex.genders else None)
                out.append([dataclasses.replace(m, head=None) for m in ms] if no_head else ms)
            scores[float(t)] = coref_scores(gold, out)["conll"]
        self.threshold = max(scores, key=lambda t: (scores[t], t))
        return scores

    def resolve(self, sentences: Sequence) -> list:
        """Copies of ``sentences`` with the predicted ``Entity`` annotations (module docstring), each document
        whole. A sentence over the word limit (:mod:`g2gt.ud.limits`) is not read by the model (one warning
        line): no mention is marked in it, and memory stays bounded."""
        return list(self.stream(sentences, max_words=None))

    __call__ = resolve

    def stream(self, sentences: Iterable, max_words: int | None = CHUNK_WORDS,
               stats: dict | None = None) -> Iterator:
        """:meth:`resolve` over a stream of sentences, a document at a time, a document of more than
        ``max_words`` words in parts cut between windows (:func:`g2gt.ud.coref.parts.document_parts`): the
        entity ids of a part continue the previous part's, so the output is :meth:`resolve`'s, and memory
        follows ``max_words``, not the input's length or its longest document.

        Args:
            sentences: parsed sentences, any iterable (e.g. :func:`g2gt.ud.io.iter_conllu`); consumed a part at a
                time.
            max_words: words of a document after which its part ends at the next window boundary (``None``:
                whole documents).
            stats: a dict that the ``sentences`` and ``words`` read are counted into (``None``: no counts).

        Yields:
            Copies of the sentences with the predicted ``Entity`` annotations, in input order.

        Raises:
            ValueError: a sentence without a tree (``FILE:LINE``), when its part is reached.
        """
        limit = max_sentence_words()
        eids, layout = 0, None  # entity ids given so far in the document, and its layout
        for part, first in document_parts(sentences, self.max_words, max_words,
                                          lambda s: limit > 0 and len(s) > limit):
            if stats is not None:
                stats["sentences"] = stats.get("sentences", 0) + len(part)
                stats["words"] = stats.get("words", 0) + sum(len(s) for s in part)
            if first:
                eids, layout = 0, None
            copies, eids, layout = self._resolve_part(part, eids, layout)
            yield from copies

    def _resolve_part(self, part: list, eids: int, layout: str | None) -> tuple[list, int, str | None]:
        """One part of a document resolved: ``(copies, entity ids given so far, the document's layout)``;
        ``layout`` is ``None`` for a document's first part, which finds (or declares) it."""
        for s in part:
            if not s.has_heads:
                raise ValueError(f"{getattr(s, 'path', '<input>')}:{getattr(s, 'line', 0)}: coreference needs "
                                 "parsed sentences (HEAD and DEPREL on every word); parse them first")
        copies = [s.copy() for s in part]
        long = {id(copies[k]) for k in over_limit(copies, "coreference", "no mention is marked in it")}
        # a sentence over the word limit is left out of the model's input (bounded memory), not out of the output
        short = [s for s in copies if id(s) not in long]
        ms = self._predict_doc(make_doc(short, self.vocab, gold=False), eids + 1) if short else []
        eids += len({m.eid for m in ms})
        if long:
            ms = _renumbered(copies, long, ms)
        if layout is None:  # the first part: the document's own layout, else the model's, declared on it
            write_mentions(copies, ms, None if _has_layout(copies) else self.layout)
            layout = entity_layout(copies)
        else:
            write_mentions(copies, ms, layout, declare=False)
        return copies, eids, layout


def _renumbered(doc: Sequence, long: set[int], mentions: list[Mention]) -> list[Mention]:
    """``mentions`` of ``doc`` without its ``long`` sentences (``id()`` of each), as positions in the whole ``doc``."""
    import dataclasses

    where, k = [], 0
    for s in doc:
        if id(s) not in long:
            where += range(k, k + len(s))
        k += len(s)
    return [dataclasses.replace(m, words=[where[w] for w in m.words], head=None if m.head is None else where[m.head],
                                parts=[(where[a], where[b]) for a, b in m.parts]) for m in mentions]


def _has_layout(doc) -> bool:
    return any(s.metadata.get("global.Entity") for s in doc)
