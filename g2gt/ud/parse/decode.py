"""Sentences in, parses out: THE inference path of the parser, used by dev evaluation during training
(:class:`g2gt.ud.parse.ParsingTask`), by :class:`g2gt.ud.parse.Parser` and by ``benchmarks/parse_speed.py``.

:func:`decode_sentences` cuts the sentences into length-sorted batches of at most ``batch_tokens`` padded
nodes, runs :meth:`ParserModel.decode` on each and turns its ids into strings
(:class:`SentenceParse`, in input order, inside a :class:`ParseResult`).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Iterator, Sequence

from ...core.batch import inference_batch_tokens
from .batching import length_batches, make_batch, make_example
from .host import HostBatch, to_host
from .overlap import batches_ahead, in_order, thread_context
from ..lemma.config import needs_fallback
from .lemma_rules import lemma_if_applies
from .model import ParserModel
from .vocab import ParserVocab

__all__ = ["Tree", "SentenceParse", "ParseResult", "decode_sentences", "check_input_trees", "LEMMA_TOPK",
           "REFINE_CONFIDENCE"]

#: sentences whose first tree has every word's best head at this probability or more are not refined
#: (:meth:`ParserModel.decode`): with ``en_combined``, 1.38 instead of 2.11 encoder passes per sentence on UD
#: EWT dev and 1.53 instead of 2.16 on GUM dev, for LAS -0.02 and -0.03 (gold tokenisation; 0.8: 1.46 / 1.62
#: passes, -0.02 / -0.01; 0.6: 1.27 / 1.39 passes, -0.08 / -0.07)
REFINE_CONFIDENCE = 0.7

LEMMA_TOPK = 5  # lemma rules tried per word, best first, until one applies to the form


@dataclass(frozen=True)
class Tree:
    """One iteration's output for one sentence: 1-based heads (0 = root), relations, UPOS."""

    heads: list[int]
    deprels: list[str]
    upos: list[str]


@dataclass
class SentenceParse:
    """The parser's prediction for one sentence of ``n`` words (lists of length ``n``).

    ``xpos`` / ``feats`` / ``lemmas`` are None when the model has no such head; ``feats`` are whole
    FEATS strings (``"_"`` = none). ``passes``: encoder passes run for this sentence (1 + the
    refinement passes it needed before reaching a fixed point). ``iterations``: with
    ``record_iterations``, the :class:`Tree` after every iteration (iteration 0 first; after a fixed
    point the tree repeats), else None.
    """

    heads: list[int]
    deprels: list[str]
    upos: list[str]
    xpos: list[str] | None = None
    feats: list[str] | None = None
    lemmas: list[str] | None = None
    passes: int = 0
    iterations: list[Tree] | None = None


@dataclass
class ParseResult(Sequence[SentenceParse]):
    """The :class:`SentenceParse` of each input sentence, in input order (a sequence of them)."""

    sentences: list[SentenceParse]

    def __len__(self) -> int:
        return len(self.sentences)

    def __getitem__(self, i):  # type: ignore[override]
        return self.sentences[i]

    def __iter__(self) -> Iterator[SentenceParse]:
        return iter(self.sentences)

    @property
    def passes(self) -> int:
        """Encoder passes run over all sentences (a sentence-level count: one pass of a batch of 8 = 8)."""
        return sum(s.passes for s in self.sentences)

    def iteration(self, k: int) -> list[Tree]:
        """Every sentence's :class:`Tree` after iteration ``k`` (needs ``record_iterations=True``)."""
        if any(s.iterations is None for s in self.sentences):
            raise ValueError("iterations were not recorded: decode with record_iterations=True")
        return [s.iterations[min(k, len(s.iterations) - 1)] for s in self.sentences]  # type: ignore[index]


def decode_sentences(model: ParserModel, vocab: ParserVocab, sentences: Sequence, max_distance: int,
                     refine_steps: int = 2, algorithm: str = "mst", use_input_graph: bool = False,
                     batch_tokens: int | None = None, progress: bool = False,
                     record_iterations: bool = False, treebank: int = 0, lemmatizer=None,
                     refine_confidence: float | None = REFINE_CONFIDENCE, ahead: int | None = None) -> ParseResult:
    """Parse ``sentences`` (objects with ``forms``, e.g. :class:`g2gt.ud.io.Sentence`) with ``model``.

    ``refine_steps``: refinement passes after iteration 0 (a sentence stops early at a fixed point).
    ``use_input_graph``: the sentences' own HEAD / DEPREL columns are iteration 0's graph; they must
    form one single-rooted tree per sentence, else a :class:`ValueError` naming ``file:line``.
    ``batch_tokens``: padded nodes per batch (None: the model's device's default,
    :func:`g2gt.core.batch.inference_batch_tokens`: 1000 on the CPU, more on a GPU). ``treebank``: the
    treebank whose conventions to follow (an index into ``model.config.treebanks``; 0 = the default).
    ``lemmatizer``: a character lemmatizer (:class:`g2gt.ud.lemma.CharLemmatizer`) that writes the lemma of
    each word where :func:`g2gt.ud.lemma.needs_fallback` says so (its answer None keeps the edit script's
    lemma).
    ``refine_confidence``: sentences whose first tree is this confident are not refined
    (:meth:`ParserModel.decode`; None = refine every sentence until its fixed point). ``ahead``: batches
    decoded at once, on worker threads when above 1, so that one batch's host work (tree decoder, host copy)
    overlaps the next one's device work (:func:`g2gt.ud.parse.overlap.in_order`; None: 2 on CUDA, 1 = a plain
    loop elsewhere). Every output is exactly one single-rooted tree.
    """
    if algorithm not in ("mst", "eisner"):
        raise ValueError(f"algorithm must be 'mst' or 'eisner', got {algorithm!r}")
    if use_input_graph:
        check_input_trees(sentences)
    check_treebank(model, treebank)
    examples = [make_example(s, vocab, treebank, targets=use_input_graph) for s in sentences]
    root_rel = vocab.rel_index.get("root", 0)
    device = next(model.parameters()).device
    out: list[SentenceParse | None] = [None] * len(examples)
    asks: list[tuple[int, int]] = []  # (sentence, word) whose lemma the character lemmatizer writes
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(examples), desc="parse", unit="sent", leave=False)

    def run(idx: list[int]) -> tuple[list[int], HostBatch]:
        batch = make_batch([examples[i] for i in idx], idx, vocab, max_distance).to(device)
        res = model.decode(batch, refine_steps, root_rel, algorithm, use_input_graph, LEMMA_TOPK,
                           record_history=record_iterations, refine_confidence=refine_confidence)
        return idx, to_host(res, batch.lengths, vocab)  # one device-to-host copy per batch

    batches = length_batches([len(ex.words) for ex in examples], inference_batch_tokens(device, batch_tokens))
    n_ahead = batches_ahead(device, ahead)
    was = model.training
    model.eval()  # once for all threads: decode()'s own switch and restore would race between them
    try:
        for idx, host in in_order(batches, run, n_ahead,
                                  thread_context(device) if n_ahead > 1 else nullcontext):
            for b, i in enumerate(idx):
                n = host.lengths[b]
                sp = SentenceParse(host.heads[b], host.deprels[b], host.upos[b], passes=host.passes[b])
                fallback = _set_tags(sp, {name: t[b] for name, t in host.tags.items()},
                                     examples[i].forms[1 : n + 1], vocab, lemmatizer)
                asks.extend((i, k) for k in fallback)
                if record_iterations:
                    sp.iterations = [Tree(hh[b], rr[b], uu[b]) for hh, rr, uu in host.history]
                out[i] = sp
            if bar is not None:
                bar.update(len(idx))
    finally:
        model.train(was)
    if bar is not None:
        bar.close()
    if asks:
        _char_lemmas(out, asks, [examples[i].forms[k + 1] for i, k in asks], lemmatizer)  # type: ignore[arg-type]
    return ParseResult(out)  # type: ignore[arg-type]


def check_treebank(model: ParserModel, treebank: int) -> None:
    """``treebank`` must index ``model.config.treebanks`` (only 0 for a model without treebank vectors)."""
    names = model.config.treebanks
    if not 0 <= treebank < max(len(names), 1):
        raise ValueError(f"treebank index {treebank} out of range: the model knows "
                         f"{', '.join(names) if names else 'one treebank only (index 0)'}")


def _set_tags(sp: SentenceParse, top: dict[str, list], forms: list[str], vocab: ParserVocab,
              lemmatizer=None) -> list[int]:
    """XPOS / FEATS / LEMMA strings of one sentence from the heads' answers (:class:`HostBatch` ``tags``: the
    XPOS / FEATS strings, ``[n][k]`` lemma classes, column 0 the best class with ``<unk>`` allowed, then the
    best rules). Returns the words (0-based) whose lemma ``lemmatizer`` is to write
    (:func:`g2gt.ud.lemma.needs_fallback`; none without one)."""
    if "xpos" in top:
        sp.xpos = top["xpos"]
    if "feats" in top:
        sp.feats = top["feats"]
    asks: list[int] = []
    if "lemma" in top:
        lemmas = []
        rules = vocab.lemma_rules
        for k, (form, upos, cands) in enumerate(zip(forms, sp.upos, top["lemma"])):
            seen = vocab.lexicon_lemma(form, upos)
            ruled = None  # the lemma of the best rule that applies to the form
            if seen is None:
                for c in cands:
                    if c and (ruled := lemma_if_applies(form, rules[c])) is not None:
                        break
            if lemmatizer is not None and needs_fallback(lemmatizer.use_when, seen is not None,
                                                         cands[0] == 0 or ruled is None, lemmatizer.knows(form)):
                asks.append(k)
            if seen is not None:  # a (form, UPOS) pair training always lemmatised the same way
                lemmas.append(seen)
            else:
                lemmas.append(form.lower() if ruled is None else ruled)
        sp.lemmas = lemmas
    return asks


def _char_lemmas(out: list[SentenceParse], asks: list[tuple[int, int]], forms: list[str], lemmatizer) -> None:
    """Overwrite the lemmas of the ``(sentence, word)`` pairs ``asks`` with ``lemmatizer``'s (from the form and
    the predicted UPOS and FEATS), in one batched call; a None answer keeps the edit script's lemma."""
    words = []
    for (i, k), form in zip(asks, forms):
        sp = out[i]
        words.append((form, sp.upos[k], sp.feats[k] if sp.feats is not None else None))
    for (i, k), lemma in zip(asks, lemmatizer.lemmatize(words)):
        if lemma is not None:
            out[i].lemmas[k] = lemma  # type: ignore[index]


def check_input_trees(sentences: Sequence) -> None:
    """Every sentence's HEAD column must be a single-rooted tree (for ``use_input_graph``);
    ``ValueError("FILE:LINE: ...")`` otherwise."""
    from ..io import check_tree

    for s in sentences:
        heads = s.heads
        if any(h is None for h in heads):
            bad = next(k for k, h in enumerate(heads) if h is None)
            raise ValueError(f"{_where(s, bad)}: --refine needs a HEAD for every word, found '_' "
                             "(expected an integer head 0..n)")
        why = check_tree([int(h) for h in heads])
        if why is not None:
            raise ValueError(f"{_where(s)}: the input graph of --refine is not a single-rooted tree: "
                             f"{why} (expected exactly one word with HEAD 0 and no cycles)")


def _where(sent, word: int | None = None) -> str:
    """``FILE:LINE`` of a sentence (or of its word ``word``, 0-based) for error messages."""
    path = getattr(sent, "path", "<input>")
    line = getattr(sent, "line", 0)
    if word is not None and hasattr(sent, "word_line"):
        line = sent.word_line(word)
    return f"{path}:{line}"
