r"""Reading the DEPS column into training targets, vocabularies, noisy input trees and batches.

A sentence of ``n`` words becomes ``n + 1`` nodes (node 0 = ROOT). Its *input* is the basic tree
(HEAD / DEPREL, gold or predicted); its *target* is the enhanced graph of the DEPS column: a set of
edges ``(dependent d, head h, label)`` with ``d`` in ``1..n`` and ``h`` in ``0..n``, at most one label
per ordered pair. Labels are stored as templates (:mod:`g2gt.ud.enhance.labels`). Edges to or from
empty nodes (``8.1``) are not predicted: :func:`sentence_edges` returns them with a string head and the
targets leave them out (``g2gt enhance`` keeps the input's empty nodes and their edges).

Batches (:class:`EnhancerBatch`) are dense: ``gold_edges [B, n, n]`` bool (row = dependent, column =
head) and ``gold_labels [B, n, n]`` (template id on gold edges, ``-100`` elsewhere).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import Tensor

from ...core.batch import pad_sequences
from ..io.conllu import CoNLLUError
from ..io import check_tree
from ..vocab import PAD, ROOT, UNK, FormIds, count_words, index_of
from .labels import MARKED_RELATIONS, TreeView, is_template, sentence_markers, template_label

__all__ = [
    "PAD", "UNK", "ROOT", "Head", "sentence_edges", "check_input_tree", "EnhancerVocab", "Example",
    "make_example", "EnhancerBatch", "make_batch", "corrupt_tree", "deps_sort_key", "template_coverage",
]

Head = int | str  # a word (0 = ROOT) or an empty node "8.1"
_LABEL_RE = re.compile(r"[a-z]+(:[^\s:|]+)*\Z")


def deps_sort_key(head: Head) -> tuple[int, int]:
    """Sort key of a DEPS head as the UD validator orders them: ``3 < 3.1 < 3.2 < 4``."""
    if isinstance(head, int):
        return (head, 0)
    major, _, minor = str(head).partition(".")
    return (int(major), int(minor or 0))


def _head_text(h) -> Head:
    if isinstance(h, tuple):  # conllu's (8, '.', 1)
        return "".join(str(x) for x in h)
    return h


def _raw_deps(tok) -> str:
    d = tok["deps"]
    if isinstance(d, list):
        return "|".join(f"{_head_text(h)}:{lab}" for lab, h in d)
    return "_" if d is None else str(d)


def sentence_edges(sent, required: bool = True) -> list[tuple[int, Head, str]]:
    """The enhanced edges ``(d, h, label)`` of a sentence's words, checked.

    ``d`` is the 1-based word index, ``h`` an int ``0..n`` or an empty-node id string such as
    ``"8.1"``. ``required``: a word whose DEPS is ``_`` is an error (else it has no edges).

    Raises:
        CoNLLUError: ``FILE:LINE: ...`` for a DEPS value that is malformed, names a head that is not
            in the sentence, is a self loop, repeats a head, or has a relation that is not lowercase
            ``rel[:subtype...]``.
    """
    n = len(sent)
    empties = {_head_text(t["id"]) for t in sent.rows if isinstance(t["id"], tuple) and t["id"][1] == "."}
    out: list[tuple[int, Head, str]] = []
    path = getattr(sent, "path", "<input>")
    for i, tok in enumerate(sent.word_rows, 1):
        line = sent.word_line(i - 1) if hasattr(sent, "word_line") else getattr(sent, "line", 0)
        deps = tok["deps"]
        if deps is None:
            if required:
                raise CoNLLUError(path, line, f"DEPS of word {i} is '_' (expected the enhanced graph: HEAD:DEPREL "
                                              "pairs joined by '|', e.g. 2:nsubj|4:nsubj:xsubj)")
            continue
        if not isinstance(deps, list):
            raise CoNLLUError(path, line, f"DEPS {_raw_deps(tok)!r} of word {i} is malformed (expected HEAD:DEPREL "
                                          "pairs joined by '|', heads 0..n or empty nodes N.M)")
        seen = set()
        for lab, h in deps:
            head = _head_text(h)
            if isinstance(h, tuple) and h[1] != ".":
                raise CoNLLUError(path, line, f"DEPS {_raw_deps(tok)!r} of word {i}: head {head} is a multiword "
                                              "token range (expected a word 0..n or an empty node N.M)")
            if isinstance(head, int) and not 0 <= head <= n:
                raise CoNLLUError(path, line, f"DEPS {_raw_deps(tok)!r} of word {i}: head {head} is outside "
                                              f"0..{n} (expected HEAD:DEPREL pairs whose heads exist: words 0..{n} "
                                              "or this sentence's empty nodes)")
            if isinstance(head, str) and head not in empties:
                raise CoNLLUError(path, line, f"DEPS {_raw_deps(tok)!r} of word {i}: empty node {head} does not "
                                              "exist in this sentence (expected heads that exist: words 0..n or its "
                                              "empty nodes)")
            if head == i:
                raise CoNLLUError(path, line, f"DEPS {_raw_deps(tok)!r} of word {i} is a self loop (expected heads "
                                              "other than the word itself)")
            if head in seen:
                raise CoNLLUError(path, line, f"DEPS {_raw_deps(tok)!r} of word {i} names head {head} twice "
                                              "(expected one relation per head)")
            if not _LABEL_RE.match(lab):
                raise CoNLLUError(path, line, f"DEPS {_raw_deps(tok)!r} of word {i}: relation {lab!r} is not "
                                              "lowercase rel[:subtype[:case]] (expected e.g. obl:in)")
            seen.add(head)
            out.append((i, head, lab))
    return out


def check_input_tree(sent) -> None:
    """Raise :class:`CoNLLUError` (``FILE:LINE``) unless HEAD / DEPREL form one single-rooted tree."""
    path = getattr(sent, "path", "<input>")
    for i, (h, r) in enumerate(zip(sent.heads, sent.deprels)):
        if h is None or r is None:
            col = "HEAD" if h is None else "DEPREL"
            raise CoNLLUError(path, sent.word_line(i), f"{col} of word {i + 1} is '_' (expected a basic tree: an "
                                                       "integer HEAD and a DEPREL on every word)")
    why = check_tree([int(h) for h in sent.heads])
    if why is not None:
        raise CoNLLUError(path, sent.line, f"the basic tree (HEAD column) is not a single-rooted tree: {why} "
                                           "(expected exactly one word with HEAD 0 and no cycles)")


def template_coverage(sentences: Sequence) -> dict[str, float]:
    """How the templates cover the DEPS labels of ``sentences`` (objects of :class:`g2gt.ud.io.Sentence`
    with gold HEAD / DEPREL / DEPS): label tokens, case-marked label tokens (``obl/nmod/advcl/acl/conj``
    with a further part that is not a known subtype), how many of those became templates, and the number
    of distinct label classes before and after templating."""
    subtypes = {"relcl", "poss", "unmarked", "agent", "desc", "tmod", "npmod", "pass", "xsubj", "outer", "prt"}
    total = marked = templated = 0
    before: Counter = Counter()
    after: Counter = Counter()
    for s in sentences:
        markers = sentence_markers(TreeView.of(s))
        for d, h, label in sentence_edges(s):
            if not isinstance(h, int):
                continue
            total += 1
            t = template_label(label, d, markers)
            before[label] += 1
            after[t] += 1
            parts = label.split(":")
            if len(parts) > 1 and parts[0] in MARKED_RELATIONS and parts[-1] not in subtypes:
                marked += 1
                templated += is_template(t)
    return {"labels": total, "case_marked": marked, "templated": templated,
            "templated_pct": 100.0 * templated / max(marked, 1), "classes_before": len(before),
            "classes_after": len(after)}


# --------------------------------------------------------------------------- vocabulary
@dataclass
class EnhancerVocab(FormIds):
    """Words, characters, UPOS, basic relations and enhanced label templates.

    ``words`` / ``chars`` start with ``<pad>``, ``<unk>``, ``<root>``; ``upos`` and ``rels`` with
    ``<pad>``, ``<unk>`` (id 0 / 1), ``labels`` are the templates seen in training (``root`` included).
    """

    words: list[str]
    chars: list[str]
    upos: list[str]
    rels: list[str]
    labels: list[str]
    lowercase: bool = True
    max_word_chars: int = 24

    def __post_init__(self) -> None:
        self.word_index, self.char_index = index_of(self.words), index_of(self.chars)
        self.upos_index, self.rel_index = index_of(self.upos), index_of(self.rels)
        self.label_index = index_of(self.labels)

    @classmethod
    def build(cls, sentences: Sequence, min_freq: int = 2, lowercase: bool = True,
              label_min_freq: int = 2) -> "EnhancerVocab":
        """From training sentences with a basic tree and DEPS (checked: ``file:line`` errors). Words seen
        fewer than ``min_freq`` times and label templates seen fewer than ``label_min_freq`` times are
        left out (an edge with such a label is still an edge target, without a label target)."""
        counts = count_words(sentences, lowercase, missing_rel="_")
        labels: Counter = Counter()
        for s in sentences:
            markers = sentence_markers(TreeView.of(s))
            for d, h, lab in sentence_edges(s):
                if isinstance(h, int):
                    labels[template_label(lab, d, markers)] += 1
        labels.setdefault("root", 1)
        keep = sorted(t for t, c in labels.items() if c >= label_min_freq or t == "root")
        return cls(counts.word_list(min_freq), counts.char_list(), [PAD, UNK] + sorted(counts.upos),
                   [PAD, UNK] + sorted(counts.rels), keep, lowercase)

    def to_dict(self) -> dict:
        return {"words": list(self.words), "chars": list(self.chars), "upos": list(self.upos),
                "rels": list(self.rels), "labels": list(self.labels), "lowercase": self.lowercase,
                "max_word_chars": self.max_word_chars}

    @classmethod
    def from_dict(cls, d: dict) -> "EnhancerVocab":
        return cls(list(d["words"]), list(d["chars"]), list(d["upos"]), list(d["rels"]), list(d["labels"]),
                   bool(d.get("lowercase", True)), int(d.get("max_word_chars", 24)))


# --------------------------------------------------------------------------- examples
@dataclass
class Example:
    """One sentence as ids (index 0 = ROOT). ``heads`` / ``rels``: the basic tree; ``edges``: target
    ``(d, h, template id)`` (empty when the sentence has no DEPS targets)."""

    forms: list[str]
    words: list[int]
    upos: list[int]
    heads: list[int]
    rels: list[int]
    edges: list[tuple[int, int, int]] = field(default_factory=list)


def make_example(sent, vocab: EnhancerVocab, targets: bool = True) -> Example:
    """``sent``: a :class:`g2gt.ud.io.Sentence` with a basic tree (and DEPS when ``targets``). An edge whose
    template is unknown to ``vocab`` gets the label id -100 (an edge target without a label target)."""
    forms = [ROOT] + list(sent.forms)
    edges: list[tuple[int, int, int]] = []
    if targets:
        markers = sentence_markers(TreeView.of(sent))
        for d, h, lab in sentence_edges(sent):
            if isinstance(h, int):
                edges.append((d, h, vocab.label_index.get(template_label(lab, d, markers), -100)))
    return Example(forms, [2] + [vocab.word_id(f) for f in sent.forms],
                   [0] + [vocab.upos_index.get(u, 1) for u in sent.upos],
                   [0] + [int(h or 0) for h in sent.heads],
                   [0] + [vocab.rel_index.get(r or "_", 1) for r in sent.deprels], edges)


def corrupt_tree(heads: Sequence[int], rels: Sequence[int], rate: float, num_rels: int,
                 rng: random.Random) -> tuple[list[int], list[int]]:
    """A noisy copy of a basic tree that is still a single-rooted tree: each word but the root (``heads[1:]``,
    1-based, node 0 = ROOT) is re-attached with probability ``rate`` to a random word outside its own
    subtree, and each word, with probability ``rate``, gets a random relation id in ``2..num_rels-1``."""
    h = list(heads)
    r = list(rels)
    n = len(h) - 1
    for i in range(1, n + 1):
        if h[i] != 0 and rng.random() < rate:
            below = {i}
            changed = True
            while changed:  # the subtree of i (small sentences: a few passes)
                changed = False
                for j in range(1, n + 1):
                    if j not in below and h[j] in below:
                        below.add(j)
                        changed = True
            cands = [j for j in range(1, n + 1) if j not in below and j != h[i]]
            if cands:
                h[i] = rng.choice(cands)
        if num_rels > 2 and rng.random() < rate:
            r[i] = rng.randrange(2, num_rels)
    return h, r


# --------------------------------------------------------------------------- batches
@dataclass
class EnhancerBatch:
    """A padded batch (node 0 = ROOT). Shapes: ``words``, ``upos``, ``heads``, ``rels``, ``word_types``
    ``[B, n]`` long; ``padding_mask [B, n]`` bool (True = pad); ``char_ids [U, m]`` (characters of the
    batch's unique forms); ``gold_edges [B, n, n]`` bool and ``gold_labels [B, n, n]`` long (``-100`` off
    the gold edges)."""

    words: Tensor
    char_ids: Tensor
    word_types: Tensor
    upos: Tensor
    heads: Tensor
    rels: Tensor
    padding_mask: Tensor
    gold_edges: Tensor
    gold_labels: Tensor
    index: list[int]

    def to(self, device, non_blocking: bool = False) -> "EnhancerBatch":
        t = [getattr(self, k).to(device, non_blocking=non_blocking) for k in
             ("words", "char_ids", "word_types", "upos", "heads", "rels", "padding_mask", "gold_edges", "gold_labels")]
        return EnhancerBatch(*t, index=self.index)

    @property
    def words_mask(self) -> Tensor:
        """``[B, n]`` True on real words (not ROOT, not padding)."""
        m = ~self.padding_mask
        m[:, 0] = False
        return m

    @property
    def num_words(self) -> int:
        return int((~self.padding_mask).sum()) - len(self.index)


def make_batch(examples: Sequence[Example], index: Sequence[int], vocab: EnhancerVocab,
               trees: Sequence[tuple[list[int], list[int]] | None] | None = None) -> EnhancerBatch:
    """Pad examples; ``trees[k]`` (``(heads, rels)`` with ROOT at 0) replaces example ``k``'s input tree."""
    B = len(examples)
    n = max(len(ex.words) for ex in examples)
    heads, rels = [], []
    for k, ex in enumerate(examples):
        t = trees[k] if trees is not None else None
        heads.append(t[0] if t is not None else ex.heads)
        rels.append(t[1] if t is not None else ex.rels)
    word_types, char_ids = vocab.char_rows([ex.forms for ex in examples], n)
    gold_edges = torch.zeros(B, n, n, dtype=torch.bool)
    gold_labels = torch.full((B, n, n), -100, dtype=torch.long)
    for b, ex in enumerate(examples):
        if ex.edges:
            e = torch.tensor(ex.edges, dtype=torch.long)
            gold_edges[b, e[:, 0], e[:, 1]] = True
            gold_labels[b, e[:, 0], e[:, 1]] = e[:, 2]
    padding_mask = torch.ones(B, n, dtype=torch.bool)
    for b, ex in enumerate(examples):
        padding_mask[b, : len(ex.words)] = False
    return EnhancerBatch(
        pad_sequences([ex.words for ex in examples], 0, n), char_ids, word_types,
        pad_sequences([ex.upos for ex in examples], 0, n),
        pad_sequences(heads, 0, n), pad_sequences(rels, 0, n), padding_mask, gold_edges, gold_labels, list(index))
