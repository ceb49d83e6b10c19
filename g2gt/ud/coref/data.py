r"""Documents as graphs: the words of a window of consecutive sentences, with their trees and mentions.

A document of ``N`` words (its sentences concatenated, :func:`g2gt.ud.coref.io.documents`) is cut into
windows of whole sentences of at most ``max_words`` words (a longer sentence is a window of its own). A
window of ``n`` words is a :class:`g2gt.core.graph.Graph` (no ROOT node) with

* channel ``position``: :class:`ChainChannel` ``clip(j - i, -k, k) + k + 1``;
* channel ``tree``: each sentence's dependency tree, ``rel↑`` on (dependent, head) and ``rel↓`` on (head,
  dependent) (:func:`g2gt.core.graph.edges_from_heads` with document offsets; the root word has no edge);
* node feature ``sentence`` (the sentence's index in the window), from which the model derives a third
  channel, the signed sentence distance ``clip(s_j - s_i, -K, K) + K + 1`` (``K + 1`` = same sentence;
  :func:`sentence_distance_labels`), so that no ``[n, n]`` edge list is stored;
* node features ``upos``, ``rel`` (the word's DEPREL), ``morph`` (its pronominal features), ``lemma`` (the
  window-local id of its lowercased lemma: equal lemmas, equal ids, known or not) and the subtree bounds
  ``left`` / ``right`` (window positions of the first and last word of the word's subtree);
* targets (features too): ``tag`` (0 = no mention has this word as its head, else ``1 +`` the mention's
  entity type), ``start`` / ``end`` (window positions of the extent of the mention headed here),
  ``cluster`` (``1 +`` the entity's index in the document, 0 = none).

The *head* of a mention is its word whose syntactic head lies outside the mention (the highest in the tree
when several do, then the first); of two mentions with one head the longer is the target (about 1 % of GUM's
mentions are left out so). The scorer's "head" in GUM's layout is the mention's first word, which the model
gets right through ``start``.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import Tensor

from ...core.batch import GraphBatch, collate
from ...core.graph import ChainChannel, EdgeChannel, Graph, LabelVocab
from ..vocab import PAD, ROOT, UNK, FormIds, index_of
from .io import Mention, read_mentions

__all__ = ["CorefVocab", "DocExample", "make_doc", "windows", "window_graph", "make_batch", "CorefBatch",
           "MORPH_FEATS", "mention_head", "sentence_distance_labels"]

MORPH_FEATS = ("PronType", "Person", "Number", "Gender", "Poss", "Reflex", "Definite")


def _morph(feats: dict | None) -> str:
    if not feats:
        return "_"
    return "|".join(f"{k}={feats[k]}" for k in MORPH_FEATS if feats.get(k)) or "_"


@dataclass
class CorefVocab(FormIds):
    """Word / character / UPOS / relation / morphology / entity-type lists (id 0 = padding)."""

    words: list[str]
    chars: list[str]
    upos: list[str]
    rels: list[str]
    morph: list[str]
    etypes: list[str]
    lowercase: bool = True
    max_word_chars: int = 20
    word_index: dict = field(init=False, repr=False)
    char_index: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.word_index = index_of(self.words)
        self.char_index = index_of(self.chars)
        self.upos_index = index_of(self.upos)
        self.morph_index = index_of(self.morph)
        self.etype_index = index_of(self.etypes)
        self.tree_labels = LabelVocab.for_dependencies(self.rels[1:])
        self.rel_index = index_of(self.rels)

    @classmethod
    def build(cls, docs: Sequence[Sequence], min_freq: int = 2, lowercase: bool = True) -> "CorefVocab":
        words, chars, upos, rels, morph, etypes = Counter(), Counter(), Counter(), Counter(), Counter(), Counter()
        for doc in docs:
            for s in doc:
                for t in s.word_rows:
                    f = t["form"]
                    words[f.lower() if lowercase else f] += 1
                    chars.update(f)
                    upos[t["upos"] or "_"] += 1
                    rels[(t["deprel"] or "dep").split(":")[0]] += 1
                    morph[_morph(t["feats"])] += 1
            etypes.update(m.etype for m in read_mentions(doc))
        return cls([PAD, UNK, ROOT] + sorted(w for w, c in words.items() if c >= min_freq),
                   [PAD, UNK, ROOT] + sorted(chars), [PAD, UNK] + sorted(upos), [PAD, UNK] + sorted(rels),
                   [PAD, UNK] + sorted(m for m, c in morph.items() if c >= min_freq),
                   [""] + sorted(e for e in etypes if e), lowercase)

    def to_dict(self) -> dict:
        return {"words": self.words, "chars": self.chars, "upos": self.upos, "rels": self.rels,
                "morph": self.morph, "etypes": self.etypes, "lowercase": self.lowercase,
                "max_word_chars": self.max_word_chars}

    @classmethod
    def from_dict(cls, d: dict) -> "CorefVocab":
        return cls(**d)


def mention_head(words: Sequence[int], heads: Sequence[int], depth: Sequence[int]) -> int:
    """The head of a mention (document positions ``words``): the word whose head is outside the mention,
    the highest in the tree when several are (``depth``), then the first. ``heads``: document position of
    each word's head (-1 = root)."""
    inside = set(words)
    roots = [w for w in words if heads[w] not in inside]
    return min(roots or list(words), key=lambda w: (depth[w], w))


@dataclass
class DocExample:
    """One document, flattened: per word ``forms``, ``lemmas``, ``upos``, ``rels``, ``morph`` (ids),
    ``heads`` (document positions, -1 = root), ``sent`` (sentence index), ``left`` / ``right`` (subtree
    bounds) and the gold ``mentions`` (empty without annotation); ``bounds[s]`` = the first word of
    sentence ``s`` and the total at the end."""

    forms: list[str]
    lemmas: list[str]
    upos: list[int]
    rels: list[int]
    rel_names: list[str]
    morph: list[int]
    heads: list[int]
    sent: list[int]
    left: list[int]
    right: list[int]
    depth: list[int]
    bounds: list[int]
    mentions: list[Mention]
    genders: list = field(default_factory=list)  # per word: a personal pronoun's Gender value, else None

    def __len__(self) -> int:
        return len(self.forms)


def make_doc(doc: Sequence, vocab: CorefVocab, gold: bool = True) -> DocExample:
    """A document's :class:`DocExample`; ``gold``: read its mentions (else none)."""
    forms, lemmas, upos, rels, names, morph, heads, sent, bounds = [], [], [], [], [], [], [], [], []
    genders: list[str | None] = []
    for si, s in enumerate(doc):
        off = len(forms)
        bounds.append(off)
        for t in s.word_rows:
            forms.append(t["form"])
            lemmas.append((t["lemma"] if t["lemma"] not in (None, "_") else t["form"]).lower())
            upos.append(vocab.upos_index.get(t["upos"] or "_", 1))
            r = (t["deprel"] or "dep").split(":")[0]
            names.append(r)
            rels.append(vocab.rel_index.get(r, 1))
            morph.append(vocab.morph_index.get(_morph(t["feats"]), 1))
            feats = t["feats"] or {}
            genders.append(feats.get("Gender") if feats.get("PronType") == "Prs" else None)
            h = t["head"]
            heads.append(off + int(h) - 1 if h else -1)
            sent.append(si)
    bounds.append(len(forms))
    n = len(forms)
    depth = [0] * n
    for i in range(n):
        d, j = 0, i
        while heads[j] >= 0 and d < n:
            j, d = heads[j], d + 1
        depth[i] = d
    left, right = list(range(n)), list(range(n))
    for i in sorted(range(n), key=lambda k: -depth[k]):  # children before parents
        h = heads[i]
        if h >= 0:
            left[h] = min(left[h], left[i])
            right[h] = max(right[h], right[i])
    mentions = read_mentions(doc) if gold else []
    return DocExample(forms, lemmas, upos, rels, names, morph, heads, sent, left, right, depth, bounds, mentions,
                      genders)


def windows(ex: DocExample, max_words: int, offset: int = 0) -> list[tuple[int, int]]:
    """Word ranges ``[a, b)`` of whole sentences, at most ``max_words`` words each (one longer sentence is a
    window alone); ``offset``: the first window ends after that many sentences (a shifted cut)."""
    out, a = [], 0
    bounds = ex.bounds
    for s in range(len(bounds) - 1):
        end = bounds[s + 1]
        if a < bounds[s] and (end - a > max_words or s == offset):
            out.append((a, bounds[s]))
            a = bounds[s]
    if a < bounds[-1]:
        out.append((a, bounds[-1]))
    return out


def window_graph(ex: DocExample, vocab: CorefVocab, a: int, b: int, max_distance: int) -> Graph:
    """The :class:`Graph` of words ``[a, b)`` of a document (module docstring)."""
    n = b - a
    src, dst, lab = [], [], []
    tl = vocab.tree_labels
    for i in range(a, b):
        h = ex.heads[i]
        if a <= h < b:
            src += [i - a, h - a]
            dst += [h - a, i - a]
            lab += [tl.get(ex.rel_names[i] + "\u2191", 1), tl.get(ex.rel_names[i] + "\u2193", 2)]
    tree = EdgeChannel(torch.tensor([src, dst], dtype=torch.long).reshape(2, -1), torch.tensor(lab, dtype=torch.long),
                       len(tl))
    lemma_ids: dict[str, int] = {}
    tag, start, end, cluster = [0] * n, [0] * n, [0] * n, [0] * n
    eids: dict[str, int] = {}
    for m in sorted(ex.mentions, key=lambda m: len(m.words)):  # longer ones win a shared head
        if m.start < a or m.end >= b:
            continue
        h = mention_head(m.words, ex.heads, ex.depth) - a
        tag[h] = 1 + vocab.etype_index.get(m.etype, 0)  # 1 = a mention of an unknown type
        start[h], end[h] = m.start - a + 1, m.end - a + 1
        cluster[h] = 1 + eids.setdefault(m.eid, len(eids))
    first_sent = ex.sent[a]
    feats = {
        "upos": ex.upos[a:b], "rel": ex.rels[a:b], "morph": ex.morph[a:b],
        "sentence": [s - first_sent for s in ex.sent[a:b]],
        "lemma": [lemma_ids.setdefault(x, len(lemma_ids) + 1) for x in ex.lemmas[a:b]],
        "left": [max(x, a) - a for x in ex.left[a:b]], "right": [min(x, b - 1) - a for x in ex.right[a:b]],
        "tag": tag, "start": start, "end": end, "cluster": cluster,
    }
    return Graph([vocab.word_id(f) for f in ex.forms[a:b]], {"position": ChainChannel(max_distance), "tree": tree},
                 feats, {"forms": ex.forms[a:b], "offset": a})


@dataclass
class CorefBatch:
    """Padded windows: the :class:`GraphBatch` (``tokens [B, n]``, ``labels [B, 2, n, n]``, node features
    ``[B, n]``) and the character input (``char_ids [U, m]``, ``word_types [B, n]``)."""

    graphs: GraphBatch
    char_ids: Tensor
    word_types: Tensor

    @property
    def num_words(self) -> int:
        return int((~self.graphs.padding_mask).sum())

    def to(self, device, non_blocking: bool = False) -> "CorefBatch":
        return CorefBatch(self.graphs.to(device, non_blocking), self.char_ids.to(device, non_blocking=non_blocking),
                          self.word_types.to(device, non_blocking=non_blocking))


def make_batch(graphs: Sequence[Graph], vocab: CorefVocab) -> CorefBatch:
    """Collate window graphs (:func:`g2gt.core.batch.collate`) and add their character rows."""
    gb = collate(graphs, ["position", "tree"])
    types, chars = vocab.char_rows([g.meta["forms"] for g in graphs], gb.tokens.shape[1])
    return CorefBatch(gb, chars, types)


def sentence_distance_labels(sentence: Tensor, max_sentences: int) -> Tensor:
    """``[B, n] -> [B, n, n]`` long: ``clip(s_j - s_i, -K, K) + K + 1`` (``K = max_sentences``)."""
    d = sentence[:, None, :] - sentence[:, :, None]
    return d.clamp(-max_sentences, max_sentences) + max_sentences + 1


def shuffled_windows(docs: Sequence[DocExample], max_words: int, seed: int) -> list[tuple[int, int, int]]:
    """``(doc, a, b)`` windows of every document, each document cut at a shifted place (``seed``)."""
    rng = random.Random(seed)
    out = []
    for d, ex in enumerate(docs):
        off = rng.randrange(max(1, min(len(ex.bounds) - 1, 20)))
        out += [(d, a, b) for a, b in windows(ex, max_words, off)]
    rng.shuffle(out)
    return out
