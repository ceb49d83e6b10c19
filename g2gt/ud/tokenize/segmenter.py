"""The user-facing segmenter: raw text in, CoNLL-U sentences out.

>>> seg = Segmenter.load("runs/segmenter")                      # doctest: +SKIP
>>> [s.forms for s in seg("I don't know. He left.")]           # doctest: +SKIP
[['I', 'do', "n't", 'know', '.'], ['He', 'left', '.']]

:meth:`Segmenter.segment` takes a whole document (any length, any Unicode) and returns
:class:`g2gt.ud.io.Sentence` objects: FORMs, multiword tokens, ``SpaceAfter=No`` / ``SpacesAfter`` /
``SpacesBefore`` in MISC, ``# sent_id``, ``# text``, ``# newdoc`` / ``# newpar``; every other column is
``_`` for the parser to fill. :func:`g2gt.ud.tokenize.text_from_sentences` gives the text back exactly.
"""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Iterator, Sequence

import torch

from ..io.sentence import Sentence
from ..limits import drop_control_characters
from .chars import CharVocab
from .config import SegmenterConfig
from .infer import decode_text, predict_probs
from .model import SegmenterModel
from .mwt import MWTLexicon
from .output import build_sentences
from .spans import Spans
from ...core.registry import DEFAULT_MODEL

__all__ = ["Segmenter", "CHECKPOINT_KIND"]

CHECKPOINT_KIND = "segmenter"


class Segmenter:
    """A trained :class:`SegmenterModel` with its character vocabulary and multiword-token lexicon.

    Args:
        model: the character tagger (its dtype and device are used as they are).
        vocab: the training character vocabulary.
        lexicon: multiword-token splits.
        batch_tokens: characters per forward pass, padding included (memory grows with it): the texts' windows
            of ``window`` characters are read ``batch_tokens // window`` at a time (at least one; the default
            6144 is 64 windows of the shipped models' 96 characters).
        max_sentence_tokens: longer predicted sentences are cut where the model's sentence-end score is
            highest (0 = no limit).
    """

    def __init__(self, model: SegmenterModel, vocab: CharVocab, lexicon: MWTLexicon, batch_tokens: int = 6144,
                 max_sentence_tokens: int = 250) -> None:
        self.model = model.eval()
        self.record: dict = {}  # the checkpoint's config / vocabularies / training record, for save()
        self.file: Path | None = None
        self.dtype: torch.dtype = torch.float32
        self.vocab = vocab
        self.lexicon = lexicon
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be a positive number of characters, got {batch_tokens}")
        self.batch_tokens = batch_tokens
        self.max_sentence_tokens = max_sentence_tokens

    @property
    def batch_windows(self) -> int:
        """Windows per forward pass: ``batch_tokens // window``, at least 1."""
        return max(1, self.batch_tokens // self.model.config.window)

    kind = CHECKPOINT_KIND

    @classmethod
    def load(cls, name_or_path: str | os.PathLike = DEFAULT_MODEL, device: str | torch.device = "auto",
             dtype: torch.dtype | str | None = "auto", **kwargs) -> Segmenter:
        """Load the tokenize stage.

        Of a shipped model by name (``"en_combined"``), a model folder's ``segmenter.pt``, a training folder (its
        ``best.pt``, else ``last.pt``) or a checkpoint file (``weights_only=True``, ``strict=True``).

        Args:
            name_or_path: a shipped model's name (default ``"en_combined"``), a model folder, a training folder or a
                checkpoint file.
            device: ``"auto"`` (default: a GPU when there is one, else the CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"``.
            dtype: ``"auto"`` (default: :func:`g2gt.core.runtime.resolve_dtype`'s choice for the device; never int8
                here: its accuracy with int8 is unmeasured), ``"float32"``, ``"bfloat16"``, ``"float16"`` or a
                ``torch.dtype``.
            **kwargs: passed to the :class:`Segmenter` constructor (``batch_tokens``, ``max_sentence_tokens``).

        Returns:
            The :class:`Segmenter`.
        """
        path = name_or_path
        from ..stage import checkpoint_record, prepare_for_inference, read_stage

        file, ck, device, dt = read_stage(path, "segmenter", CHECKPOINT_KIND, device, dtype)
        extra = ck.get("task") or {}
        model = SegmenterModel(SegmenterConfig.from_dict(ck["model_config"]))
        model.load_state_dict(ck["model"], strict=True)
        model = prepare_for_inference(model, dt, device)
        lexicon = MWTLexicon.from_checkpoint(extra)  # table, always-split set, rules, learned expander
        out = cls(model, CharVocab.from_list(extra["vocab"]), lexicon, **kwargs)
        out.record, out.file, out.dtype = checkpoint_record(ck), Path(file), dt
        return out

    def save(self, path: str | os.PathLike, storage_dtype: str | torch.dtype = "float16") -> Path:
        """Write this stage as one checkpoint file that :meth:`load` reads.

        Args:
            path: the file to write.
            storage_dtype: dtype of the floating-point weights in the file (default ``"float16"``).

        Returns:
            The path.
        """
        from ..stage import save_stage

        if not self.record:
            raise ValueError("this segmenter was not loaded from a checkpoint; save its training folder's "
                             "checkpoint instead (g2gt train segmenter writes one)")
        return save_stage(path, self.model, self.record, self.file, self.dtype is torch.qint8, storage_dtype)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def spans_many(self, texts: Sequence[str]) -> list[Spans]:
        """Token and sentence spans of several texts (their windows share batches).

        Args:
            texts: the raw texts.

        Returns:
            One :class:`Spans` per text.
        """
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"text {i} is a {type(t).__name__}, expected str (raw text); for words that are "
                                "already tokenized, build sentences with g2gt.ud.io.sentence_from_words")
        out = predict_probs(self.model, self.vocab, texts, self.batch_windows, self.device)
        return [decode_text(t, *o, max_sentence_tokens=self.max_sentence_tokens, final_tokens=self.lexicon.final_tokens)
                for t, o in zip(texts, out)]

    def spans(self, text: str) -> Spans:
        """Token spans (``starts``, ``ends``, ``mwt``) and sentences (token ranges) of one text.

        Args:
            text: the raw text.

        Returns:
            The :class:`Spans`.
        """
        return self.spans_many([text])[0]

    def segment(self, text: str, sent_id_prefix: str = "", first_id: int = 1) -> list[Sentence]:
        """Sentences of a document (see the module docstring).

        ``[]`` for a text without tokens (empty or only whitespace). Sentence ids are ``{sent_id_prefix}{k}``, ``k =
        first_id, first_id + 1 ...``.

        Args:
            text: the document's raw text.
            sent_id_prefix: prefix of the sentence ids.
            first_id: number of the first sentence.

        Returns:
            The sentences.
        """
        return self.segment_many([text], sent_id_prefix, first_id)[0]

    def segment_document(self, text: str) -> list[Sentence]:
        """Sentences of a whole raw-text document of any length.

        It is read one block of paragraphs at a time (:func:`g2gt.ud.tokenize.text.paragraph_blocks`: memory bounded by
        the block), with running ids ``s1, s2 ...`` and ``newdoc`` on the first sentence only.

        Args:
            text: the document's raw text.

        Returns:
            The sentences.
        """
        return list(self.iter_document(text))

    def iter_document(self, text: str) -> Iterator[Sentence]:
        """:meth:`segment_document` one block of paragraphs at a time.

        The sentences of a block are made when the previous block's have been taken, so memory does not grow with
        the document.

        Args:
            text: the document's raw text.

        Yields:
            The sentences, in order.
        """
        from .text import paragraph_blocks

        n = 0
        for i, block in enumerate(paragraph_blocks(text)):
            sents = self.segment(block, sent_id_prefix="s", first_id=n + 1)
            if i and sents:
                sents[0].rows.metadata.pop("newdoc", None)  # one document: only its first sentence opens it
            n += len(sents)
            yield from sents

    def segment_many(self, texts: Sequence[str], sent_id_prefix: str = "", first_id: int = 1
                     ) -> list[list[Sentence]]:
        """:meth:`segment` for several documents at once (batched); sentence ids continue across them.

        Args:
            texts: the documents' raw texts.
            sent_id_prefix: prefix of the sentence ids.
            first_id: number of the first sentence.

        Returns:
            The sentences of each document.
        """
        texts = [drop_control_characters(t) for t in texts]
        out = []
        k = first_id
        for text, sp in zip(texts, self.spans_many(texts)):
            sents = build_sentences(text, sp, self.lexicon, sent_id_prefix, k)
            k += len(sents)
            out.append(sents)
        return out

    __call__ = segment

    def tokenize(self, text: str) -> list[list[str]]:
        """The surface tokens of each sentence (no multiword splitting).

        Args:
            text: the raw text.

        Returns:
            One list of token strings per sentence.
        """
        sp = self.spans(text)
        s, e = sp.starts.tolist(), sp.ends.tolist()
        return [[text[s[k]:e[k]] for k in range(a, b)] for a, b in sp.sentences]

    def __repr__(self) -> str:
        return (f"Segmenter({self.model.num_parameters():,} parameters, {len(self.vocab)} characters, "
                f"{len(self.lexicon)} multiword tokens)")
