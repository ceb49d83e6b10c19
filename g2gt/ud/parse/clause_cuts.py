"""Short clauses cut from training trees, as extra training sentences (``g2gt train parser --short-clauses``).

Treebanks hold few short statements: their short sentences are mostly headlines, titles and list items
(noun phrases), so a parser learns "a short sentence is a noun phrase" and reads ``Le chat dort.`` as a noun
with an adjective. This module makes short utterances out of the training trees themselves, with no lexicon
and nothing specific to a language:

1. pick a *predicate*: a word with a subject dependent (relation ``nsubj`` or ``csubj``, any subtype);
2. keep it and, recursively, its dependents: the ones a clause or a phrase cannot lose (``nsubj``, ``csubj``,
   ``aux``, ``cop``, ``expl``, ``det``, ``case``, ``fixed``, ``flat``, ``compound``, ``goeswith``, ``clf``)
   always, the optional ones (objects, obliques, modifiers, ...) each with probability ``p``, drawn once per
   cut in ``[0, keep_max]``; the ones that tie a clause to its context (``cc``, ``conj``, ``parataxis``,
   ``punct``, ...) never; a ``mark`` only below the predicate (``que`` stays in a kept complement clause, the
   predicate's own ``que`` goes: the cut is a main clause);
3. write the kept words in their original order (the kept words are a connected part of the tree holding the
   predicate, so they form a tree rooted at it: heads renumbered, every other column unchanged), capitalise
   the first word as a sentence start does (the source's first word, when kept, stays first), and end with the training data's most frequent final
   punctuation word (its form, lemma, UPOS, XPOS and features as the treebank writes them, attached to the
   predicate as ``punct``) when the source sentence ended with punctuation.

A cut is kept when it has ``2 .. max_words`` words before the final punctuation. For a predicate ``v`` with
subject subtree ``S`` and kept optional subtrees ``O``, the cut is ``sorted(S ∪ {v} ∪ aux/cop ∪ O) + [.]``:
``Le chat de ma voisine dort sur le canapé .`` gives ``Le chat dort .``, ``Le chat dort sur le canapé .``,
``Le chat de ma voisine dort .`` ...

:func:`clause_cuts` draws ``round(ratio * len(sentences))`` cuts with a seeded generator, so a training epoch
(:class:`~g2gt.ud.parse.task.ParsingTask`, which draws new cuts every epoch from ``(seed, epoch)``) is
reproducible and resumable. Torch-free.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Sequence

from conllu.models import Metadata, Token, TokenList

from ..io.sentence import FIELDS, Sentence

__all__ = ["clause_cuts", "cut_clause", "final_punctuation", "subject_predicates", "KEEP_ALWAYS", "KEEP_NEVER"]

#: relations (universal part) whose dependents are always kept: a clause or phrase is not whole without them
KEEP_ALWAYS = frozenset({"nsubj", "csubj", "aux", "cop", "expl", "det", "case", "fixed", "flat", "compound",
                         "goeswith", "clf", "mark"})
#: relations whose dependents are never kept: they tie the clause to its context (or are punctuation)
KEEP_NEVER = frozenset({"cc", "conj", "parataxis", "punct", "dislocated", "reparandum", "orphan",
                        "list", "vocative", "discourse", "dep", "root"})
MAX_WORDS = 8
KEEP_MAX = 0.6


def _base(rel: str | None) -> str:
    return (rel or "_").split(":")[0]


def subject_predicates(sent) -> list[int]:
    """0-based indices of the words of ``sent`` that have a subject dependent (``nsubj`` / ``csubj``)."""
    return sorted({int(h) - 1 for h, r in zip(sent.heads, sent.deprels)
                   if h and _base(r) in ("nsubj", "csubj")})


def final_punctuation(sentences: Sequence) -> Token | None:
    """The most frequent sentence-final ``PUNCT`` word of ``sentences`` (the token of its first occurrence:
    form, lemma, UPOS, XPOS, features), or None when no sentence ends with punctuation."""
    counts: Counter = Counter()
    first: dict[str, Token] = {}
    for s in sentences:
        words = s.word_rows
        if words and words[-1]["upos"] == "PUNCT":
            form = words[-1]["form"]
            counts[form] += 1
            first.setdefault(form, words[-1])
    if not counts:
        return None
    return first[counts.most_common(1)[0][0]]


def cut_clause(sent: Sentence, predicate: int, keep_p: float, rng: random.Random,
               final: Token | None = None, max_words: int = MAX_WORDS) -> Sentence | None:
    """The clause of ``sent`` headed by word ``predicate`` (0-based), pruned as the module docstring says,
    as a new :class:`Sentence` (``# sent_id`` ``SOURCE-cut-PREDICATE``); None when it has fewer than 2 or
    more than ``max_words`` words. ``final``: the punctuation word to end it with (:func:`final_punctuation`;
    added only when ``sent`` itself ends with a ``PUNCT`` word)."""
    heads, rels = sent.heads, sent.deprels
    children: dict[int, list[int]] = {}
    for i, h in enumerate(heads):
        if h is not None and h > 0:
            children.setdefault(int(h) - 1, []).append(i)
    keep, stack = {predicate}, [predicate]
    while stack:
        node = stack.pop()
        for c in children.get(node, []):
            base = _base(rels[c])
            if base in KEEP_NEVER or (node == predicate and base == "mark") or (
                    base not in KEEP_ALWAYS and rng.random() >= keep_p):
                continue
            keep.add(c)
            stack.append(c)
    if not 2 <= len(keep) <= max_words:
        return None
    order = sorted(keep)
    new_id = {old: k + 1 for k, old in enumerate(order)}
    words = sent.word_rows
    toks = []
    for old in order:
        t = Token((k, v) for k, v in words[old].items())
        t["id"] = new_id[old]
        t["head"] = 0 if old == predicate else new_id[int(heads[old]) - 1]
        t["deprel"] = "root" if old == predicate else rels[old]
        t["deps"], t["misc"] = None, None
        toks.append(t)
    first = toks[0]["form"]
    if order[0] != 0 and first[:1].islower():
        toks[0]["form"] = first[:1].upper() + first[1:]
    if final is not None and words and words[-1]["upos"] == "PUNCT":
        p = Token((k, v) for k, v in final.items())
        p.update(id=len(toks) + 1, head=new_id[predicate], deprel="punct", deps=None, misc=None)
        toks[-1]["misc"] = {"SpaceAfter": "No"}
        toks.append(p)
    sid = f"{sent.sent_id or sent.line}-cut-{predicate + 1}"
    return Sentence(TokenList(toks, Metadata(sent_id=sid), default_fields=FIELDS), sent.path, sent.line)


def clause_cuts(sentences: Sequence[Sentence], ratio: float, seed: int, keep_max: float = KEEP_MAX,
                max_words: int = MAX_WORDS, final: Token | None = None) -> list[tuple[int, Sentence]]:
    """``round(ratio * len(sentences))`` short clauses cut from ``sentences`` (fewer when the sentences have
    too few predicates): ``[(index of the source sentence, cut)]``, the same for the same arguments.

    Each draw takes a random sentence with a subject predicate, a random such predicate and a keep probability
    uniform in ``[0, keep_max]`` (:func:`cut_clause`); a draw that gives no cut is retried, at most ``10 x``
    the number asked in all. ``final``: the closing punctuation (default: :func:`final_punctuation` of
    ``sentences``)."""
    if ratio < 0:
        raise ValueError(f"the short-clause ratio must be >= 0 (extra sentences per training sentence), got {ratio}")
    want = round(ratio * len(sentences))
    if want == 0:
        return []
    final = final if final is not None else final_punctuation(sentences)
    candidates = [(i, preds) for i, s in enumerate(sentences) if (preds := subject_predicates(s))]
    if not candidates:
        return []
    rng = random.Random(seed)
    out: list[tuple[int, Sentence]] = []
    for _ in range(10 * want):
        i, preds = candidates[rng.randrange(len(candidates))]
        cut = cut_clause(sentences[i], preds[rng.randrange(len(preds))], rng.uniform(0.0, keep_max), rng,
                         final, max_words)
        if cut is not None:
            out.append((i, cut))
            if len(out) == want:
                break
    return out
