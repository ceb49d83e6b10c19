"""The parser's vocabularies: words, characters, UPOS / XPOS / UFeats tags, relations and lemma rules.

Torch-free. Saved in checkpoints as ``ck["task"]["vocab"]`` (:meth:`ParserVocab.to_dict`); the keys
of that dict are the checkpoint format.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

from ..vocab import PAD, ROOT, UNK, FormIds, count_words, index_of
from .config import ParserConfig
from .lemma_rules import rule_for

__all__ = ["ParserVocab", "sentence_feats", "unambiguous_lemmas", "PAD", "UNK", "ROOT"]


@dataclass
class ParserVocab(FormIds):
    """Words, characters, tags and dependency relations of a parser.

    Ids 0 / 1 / 2 of ``words`` and ``chars`` are ``<pad>`` / ``<unk>`` / ``<root>``.
    ``rels[r]`` has the dependency-channel labels ``1 + 2r`` (``rel↑``) and ``2 + 2r``
    (``rel↓``), exactly the ids of ``g2gt.core.LabelVocab.for_dependencies(rels)``.
    ``xpos`` / ``feats`` / ``lemma_rules`` are empty when the model has no such head;
    ``feats`` holds whole FEATS strings (``"_"`` included), ``lemma_rules`` edit scripts
    (:mod:`g2gt.ud.parse.lemma_rules`) with ``lemma_rules[0] = "<unk>"`` (a rare rule).
    ``lemma_lexicon`` (``{"FORM\\tUPOS": LEMMA}``, :func:`unambiguous_lemmas` of the training data) gives the
    lemma of a (form, predicted UPOS) pair the training data always lemmatised the same way; the lemma head's
    edit scripts lemmatise every other word.
    """

    words: list[str]
    chars: list[str]
    upos: list[str]
    rels: list[str]
    lowercase: bool = True
    max_word_chars: int = 24
    xpos: list[str] = field(default_factory=list)
    feats: list[str] = field(default_factory=list)
    lemma_rules: list[str] = field(default_factory=list)
    lemma_lexicon: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.word_index, self.char_index = index_of(self.words), index_of(self.chars)
        self.upos_index, self.rel_index = index_of(self.upos), index_of(self.rels)
        self.xpos_index, self.feats_index = index_of(self.xpos), index_of(self.feats)
        self.lemma_index = index_of(self.lemma_rules)

    @classmethod
    def build(cls, sentences: Sequence, min_freq: int = 2, lowercase: bool = True,
              max_word_chars: int = 24, tags: bool = True, lemma_min_freq: int = 2) -> "ParserVocab":
        """From training sentences (objects with ``forms``, ``upos``, ``deprels``; with ``tags``
        also ``xpos``, ``words`` (FEATS) and ``lemmas``: XPOS / UFeats / lemma-rule vocabularies,
        each only when the training data has the column)."""
        counts = count_words(sentences, lowercase)
        xpos: Counter = Counter()
        feats: Counter = Counter()
        lemmas: Counter = Counter()
        if tags:
            for s in sentences:
                xpos.update(x or "_" for x in s.xpos)
                feats.update(sentence_feats(s))
                lemmas.update(rule_for(f, lem) for f, lem in zip(s.forms, s.lemmas) if lem not in (None, "_"))
        counts.rels.setdefault("root", 1)

        def has(c: Counter) -> bool:
            return bool(set(c) - {"_"})

        return cls(counts.word_list(min_freq), counts.char_list(), sorted(counts.upos), sorted(counts.rels),
                   lowercase, max_word_chars, sorted(xpos) if has(xpos) else [], sorted(feats) if has(feats) else [],
                   [UNK] + sorted(r for r, c in lemmas.items() if c >= lemma_min_freq) if lemmas else [])

    def extend(self, sentences: Sequence) -> tuple["ParserVocab", dict[str, list[str]]]:
        """This vocabulary with the labels of ``sentences`` it lacks appended (a warm start on new data), and
        ``{"upos": [...], "rels": [...], ...}`` the labels added.

        Appending keeps every old id, so a model's rows for the old classes stay valid (the output tables
        and the dependency-channel labels ``1 + 2r`` / ``2 + 2r`` of relation ``r`` only gain rows at the
        end). UPOS and relations are always extended, XPOS and UFeats where this vocabulary has that head.
        Lemma rules are not: a rule the vocabulary lacks is its class 0, ``<unk>`` (rare rule), as for the
        source's own rare rules. Words and characters are not extended either: new ones stay ``<unk>`` for
        the word table and are read by the character CNN."""
        new = {"upos": Counter(), "rels": Counter(), "xpos": Counter(), "feats": Counter()}
        for s in sentences:
            new["upos"].update(s.upos)
            new["rels"].update(r for r in s.deprels if r is not None)
            if self.xpos:
                new["xpos"].update(x or "_" for x in s.xpos)
            if self.feats:
                new["feats"].update(sentence_feats(s))
        added: dict[str, list[str]] = {}
        lists = {}
        for name, counts in new.items():
            old = getattr(self, name)
            known = set(old)
            extra = sorted(x for x in counts if x not in known)
            lists[name] = list(old) + extra
            if extra:
                added[name] = extra
        vocab = ParserVocab(list(self.words), list(self.chars), lists["upos"], lists["rels"], self.lowercase,
                            self.max_word_chars, lists["xpos"], lists["feats"], list(self.lemma_rules),
                            dict(self.lemma_lexicon))
        return vocab, added

    def config(self, **overrides) -> ParserConfig:
        """The :class:`ParserConfig` of a model for this vocabulary (its sizes), with ``overrides`` of the
        other fields (e.g. ``d_model=128``)."""
        return ParserConfig(len(self.words), len(self.chars), len(self.upos), len(self.rels), len(self.xpos),
                            len(self.feats), len(self.lemma_rules), **overrides)

    def lemma_id(self, form: str, lemma: str | None) -> int:
        """Class of the edit rule ``form -> lemma`` (0 = ``<unk>``: rare rule or no lemma)."""
        if lemma in (None, "_") or not self.lemma_rules:
            return 0
        return self.lemma_index.get(rule_for(form, lemma), 0)

    def to_dict(self) -> dict:
        return {"words": list(self.words), "chars": list(self.chars), "upos": list(self.upos),
                "rels": list(self.rels), "lowercase": self.lowercase, "max_word_chars": self.max_word_chars,
                "xpos": list(self.xpos), "feats": list(self.feats), "lemma_rules": list(self.lemma_rules),
                **({"lemma_lexicon": dict(self.lemma_lexicon)} if self.lemma_lexicon else {})}

    @classmethod
    def from_dict(cls, d: dict) -> "ParserVocab":
        return cls(list(d["words"]), list(d["chars"]), list(d["upos"]), list(d["rels"]),
                   bool(d.get("lowercase", True)), int(d.get("max_word_chars", 24)), list(d.get("xpos", [])),
                   list(d.get("feats", [])), list(d.get("lemma_rules", [])), dict(d.get("lemma_lexicon", {})))

    def lexicon_lemma(self, form: str, upos: str) -> str | None:
        """The lemma the training data always gave ``form`` with ``upos`` (None when it did not, or never saw
        the pair)."""
        return self.lemma_lexicon.get(f"{form}\t{upos}")


def unambiguous_lemmas(sentences: Sequence) -> dict[str, str]:
    """``{"FORM\\tUPOS": LEMMA}`` for each (form, UPOS) pair of ``sentences`` (objects with ``forms``, ``upos``,
    ``lemmas``) that has one lemma every time it occurs (pairs with two lemmas, or without one, are left out:
    there the lemma depends on context, which the lemma head sees). Stanza's lemmatizer looks up seen (word,
    POS) pairs the same way before its character model; kept only where unambiguous, because a majority vote
    copies a treebank's inconsistencies (on EWT + GUM it would lose lemmas the head gets right)."""
    seen: dict[str, str | None] = {}
    for s in sentences:
        for form, upos, lemma in zip(s.forms, s.upos, s.lemmas):
            if lemma in (None, "_") or upos is None:
                continue
            key = f"{form}\t{upos}"
            if seen.setdefault(key, lemma) != lemma:
                seen[key] = None
    return {k: v for k, v in seen.items() if v is not None}


def sentence_feats(sent) -> list[str]:
    """The FEATS column of each word of ``sent`` as a string (``"_"`` where empty)."""
    out = []
    for t in sent.word_rows:
        f = t.get("feats")
        if isinstance(f, dict):
            out.append("|".join(f"{k}={v}" for k, v in f.items()) or "_")
        else:
            out.append(f if f else "_")
    return out
