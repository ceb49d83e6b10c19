"""Dependency-parsing evaluation on top of the official CoNLL 2018 UD scorer.

The scores come from ``udtools.udeval`` (the CoNLL 2018 / IWPT shared-task
scorer that ships with stanza): :func:`udtools.udeval.load_conllu` reads both
files, :func:`udtools.udeval.evaluate` aligns gold and predicted words on the
underlying characters (so different tokenisations are scored correctly) and
returns Tokens, Sentences, Words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS, LAS,
CLAS, MLAS, BLEX (and ELAS / EULAS) as precision / recall / F1 (and accuracy on
aligned words).  As in the shared task, LAS ignores relation subtypes
(``nmod:poss`` counts as ``nmod``).

Added here, only when gold and predicted files hold the same words (gold
tokenisation, so word ``i`` of one is word ``i`` of the other; with another
tokenisation these need an alignment, and only the official scores are given):

* ``no_punct``: UAS / LAS over the words whose **gold** UPOS is not ``PUNCT``;
* ``per_relation``: for each relation (subtype stripped, as in LAS) the gold
  count, predicted count, and precision / recall / F1 of "correct head and
  label".

Errors name both files and the first place where their words differ.

``validate_file`` wraps the official UD validator (``udtools.validator``,
the ``udvalidate`` command).
"""

from __future__ import annotations

import io
import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from ..errors import Error
from .io.conllu import read_conllu, to_conllu_string
from .io import Sentence
from .io.surface import surface_tokens

__all__ = [
    "Score",
    "RelationScore",
    "Evaluation",
    "evaluate",
    "validate_file",
    "EvaluationError",
]

METRICS = ["Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas",
           "UAS", "LAS", "CLAS", "MLAS", "BLEX", "ELAS", "EULAS"]


class EvaluationError(Error):
    """Gold and predicted files cannot be compared (text differs, malformed tree ...)."""


@dataclass
class Score:
    """One metric: counts plus precision / recall / F1 (fractions in ``[0, 1]``).

    ``aligned_accuracy`` = correct / aligned words (None for metrics that do not
    use the word alignment, e.g. Tokens).
    """

    correct: int
    gold_total: int
    system_total: int
    aligned_total: int | None = None
    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0
    aligned_accuracy: float | None = None

    @classmethod
    def from_counts(cls, correct: int, gold: int, system: int, aligned: int | None = None) -> "Score":
        return cls(
            correct, gold, system, aligned,
            correct / system if system else 0.0,
            correct / gold if gold else 0.0,
            2 * correct / (gold + system) if gold + system else 0.0,
            correct / aligned if aligned else None,
        )

    @classmethod
    def from_udeval(cls, s: Any) -> "Score":
        return cls(int(s.correct), int(s.gold_total), int(s.system_total),
                   None if s.aligned_total is None else int(s.aligned_total),
                   float(s.precision), float(s.recall), float(s.f1),
                   None if s.aligned_accuracy is None else float(s.aligned_accuracy))


@dataclass
class RelationScore:
    """Per-relation head+label scores: ``correct`` = aligned words whose gold and
    predicted relation are both ``relation`` and whose heads match."""

    relation: str
    gold: int
    predicted: int
    correct: int
    precision: float
    recall: float
    f1: float


@dataclass
class Evaluation:
    """Result of :func:`evaluate`. ``scores`` holds the official metrics by name
    (``"UAS"``, ``"LAS"``, ``"UPOS"``, ``"MLAS"`` ...)."""

    gold_path: str
    pred_path: str
    scores: dict[str, Score]
    same_words: bool = True
    #: False when GOLD or PRED has no enhanced graph (DEPS all ``_``): ELAS / EULAS are then left out
    enhanced: bool = True
    no_punct: dict[str, Score] = field(default_factory=dict)
    per_relation: list[RelationScore] = field(default_factory=list)

    @property
    def uas(self) -> float:
        """UAS F1 in percent (= accuracy when the tokenisation is gold)."""
        return 100.0 * self.scores["UAS"].f1

    @property
    def las(self) -> float:
        """LAS F1 in percent."""
        return 100.0 * self.scores["LAS"].f1

    @property
    def upos(self) -> float:
        """UPOS F1 in percent."""
        return 100.0 * self.scores["UPOS"].f1

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready dict; every score keeps counts and fractions."""
        return {
            "gold": self.gold_path,
            "pred": self.pred_path,
            "metrics": {k: asdict(v) for k, v in self.scores.items()},
            "same_words": self.same_words,
            "enhanced": self.enhanced,
            "no_punct": {k: asdict(v) for k, v in self.no_punct.items()},
            "per_relation": [asdict(r) for r in self.per_relation],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.as_dict(), indent=indent)

    def table(self, no_punct: bool = False, per_relation: bool = False) -> str:
        """Readable text: the official scorer's table, then the optional extras."""
        from udtools import udeval

        lines = [f"gold: {self.gold_path}", f"pred: {self.pred_path}", ""]
        lines.append(udeval.build_evaluation_table(self.scores, verbose=True, enhanced="ELAS" in self.scores))
        if not self.enhanced:
            lines.append("ELAS / EULAS: no enhanced graphs (DEPS is _ in GOLD or PRED; 'g2gt parse --enhanced' "
                         "or 'g2gt enhance' writes them)")
        if (no_punct or per_relation) and not self.same_words:
            lines += ["", "(no-punctuation and per-relation scores need both files to hold the same words)"]
        if no_punct and self.no_punct:
            lines += ["", "Without punctuation (gold UPOS != PUNCT)",
                      "Metric     | Precision |    Recall |  F1 Score | AligndAcc",
                      "-----------+-----------+-----------+-----------+-----------"]
            for name, s in self.no_punct.items():
                acc = "" if s.aligned_accuracy is None else f"{100 * s.aligned_accuracy:10.2f}"
                lines.append(f"{name:11}|{100 * s.precision:10.2f} |{100 * s.recall:10.2f} |{100 * s.f1:10.2f} |{acc}")
        if per_relation and self.per_relation:
            lines += ["", "Per relation (head + label; subtypes ignored as in LAS)",
                      "Relation     |   Gold |   Pred | Correct | Precision |    Recall |        F1",
                      "-------------+--------+--------+---------+-----------+-----------+----------"]
            for r in self.per_relation:
                lines.append(f"{r.relation:13}|{r.gold:7d} |{r.predicted:7d} |{r.correct:8d} |"
                             f"{100 * r.precision:10.2f} |{100 * r.recall:10.2f} |{100 * r.f1:10.2f}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- loading
_LINE_RE = re.compile(r"(?:line(?: no\.)?|ends at(?: line)?)\s+(\d+)")


def _load(source: str | os.PathLike | Sequence[Sentence], label: str | None):
    """``(udeval representation, name, sentences-or-None)``."""
    from udtools import udeval

    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such CoNLL-U file: {path}")
        name = label or path
        try:
            with open(path, encoding="utf-8") as f:
                return udeval.load_conllu(f, name, {}), name, None
        except (udeval.UDError, UnicodeDecodeError) as e:
            # our reader gives file:line messages for format errors; otherwise reuse the scorer's
            read_conllu(path, name=name)
            raise _scorer_error(name, e) from None
    sents = list(source)
    name = label or (sents[0].path if sents else "<sentences>")
    text = to_conllu_string(sents)
    try:
        return udeval.load_conllu(io.StringIO(text), name, {}), name, sents
    except udeval.UDError as e:
        raise _scorer_error(name, e) from None


def _scorer_error(name: str, e: Exception) -> EvaluationError:
    msg = str(e)
    m = _LINE_RE.search(msg)
    line = m.group(1) if m else "?"
    return EvaluationError(f"{name}:{line}: {msg} (from the official UD scorer)")


def _token_chars(sents: Sequence[Sentence]) -> tuple[list[str], list[tuple[int, int, int]]]:
    """Characters of all surface tokens (whitespace removed, as the scorer does) and,
    per character, ``(sentence index, file line, word index)``."""
    chars: list[str] = []
    where: list[tuple[int, int, int]] = []
    for si, s in enumerate(sents):
        for t in surface_tokens(s):
            form = "".join(str(s.rows[t.row]["form"]).split())
            for ch in form:
                chars.append(ch)
                where.append((si, s.token_line(t.row), t.words[0] + 1 if t.words else 0))
    return chars, where


def _mismatch_error(gold_name: str, pred_name: str, gold: Sequence[Sentence], pred: Sequence[Sentence],
                    scorer_msg: str) -> EvaluationError:
    gc, gw = _token_chars(gold)
    pc, pw = _token_chars(pred)
    i = 0
    while i < len(gc) and i < len(pc) and gc[i] == pc[i]:
        i += 1
    parts = [f"the words of {gold_name} and {pred_name} do not line up (the predicted file must contain the "
             "same text as the gold file)"]
    for nm, chars, where, sents in ((gold_name, gc, gw, gold), (pred_name, pc, pw, pred)):
        if i < len(chars):
            si, line, _ = where[i]
            s = sents[si]
            parts.append(f"  {nm}:{line}: sentence {si + 1}"
                         f"{' (' + s.sent_id + ')' if s.sent_id else ''}: "
                         f"{' '.join(s.forms)[:120]!r}, text continues {''.join(chars[i:i + 20])!r}")
        else:
            parts.append(f"  {nm}: ends after {len(chars)} characters")
    parts.append("official scorer: " + scorer_msg.splitlines()[0])
    return EvaluationError("\n".join(parts))


# --------------------------------------------------------------------------- evaluation
def _same_words(gold_ud: Any, pred_ud: Any) -> bool:
    """True when both files hold the same sequence of syntactic words (gold tokenisation): same count
    and the same FORM at every index."""
    from udtools.udeval import FORM

    gw, pw = gold_ud.words, pred_ud.words
    return len(gw) == len(pw) and all(g.columns[FORM] == p.columns[FORM] for g, p in zip(gw, pw))


def _extras(gold_words: Sequence[Any], pred_words: Sequence[Any]) -> tuple[dict[str, Score], list[RelationScore]]:
    """No-punctuation UAS / LAS and the per-relation table, for word lists that line up by index.

    Word ``i`` of the prediction is word ``i`` of the gold file; a predicted head is correct when it is
    the word at the gold head's index (or both are the root). Relations are compared without subtypes
    (the scorer's words already hold the universal part), as in LAS.
    """
    from udtools.udeval import DEPREL, UPOS

    index = {id(w): i for i, w in enumerate(gold_words)}
    index.update({id(w): i for i, w in enumerate(pred_words)})

    def head(w: Any) -> int:
        return -1 if w.parent is None else index[id(w.parent)]

    gold_rel: dict[str, int] = {}
    pred_rel: dict[str, int] = {}
    corr_rel: dict[str, int] = {}
    uas = las = non_punct = 0
    for g, p in zip(gold_words, pred_words):
        grel, prel = g.columns[DEPREL], p.columns[DEPREL]
        gold_rel[grel] = gold_rel.get(grel, 0) + 1
        pred_rel[prel] = pred_rel.get(prel, 0) + 1
        head_ok = head(g) == head(p)
        label_ok = head_ok and grel == prel
        if label_ok:
            corr_rel[grel] = corr_rel.get(grel, 0) + 1
        if g.columns[UPOS] != "PUNCT":  # punctuation is decided by the gold UPOS
            non_punct += 1
            uas += head_ok
            las += label_ok
    no_punct = {"UAS": Score.from_counts(uas, non_punct, non_punct, non_punct),
                "LAS": Score.from_counts(las, non_punct, non_punct, non_punct)}
    rels = []
    for rel in sorted(set(gold_rel) | set(pred_rel), key=lambda r: (-gold_rel.get(r, 0), r)):
        s = Score.from_counts(corr_rel.get(rel, 0), gold_rel.get(rel, 0), pred_rel.get(rel, 0))
        rels.append(RelationScore(rel, s.gold_total, s.system_total, s.correct, s.precision, s.recall, s.f1))
    return no_punct, rels


def _has_deps(ud) -> bool:
    """Whether any word of a loaded udeval file has an enhanced graph (DEPS other than ``_``)."""
    return any(w.columns[8] not in ("_", "", []) for w in ud.words)  # udeval parses DEPS into a list


def evaluate(gold: str | os.PathLike | Sequence[Sentence], pred: str | os.PathLike | Sequence[Sentence], *,
             gold_name: str | None = None, pred_name: str | None = None) -> Evaluation:
    """Score predicted CoNLL-U against gold with the official CoNLL 2018 scorer.

    Args:
        gold: the gold file's path, or a list of :class:`~g2gt.ud.io.Sentence`.
        pred: the predicted file's path, or a list of :class:`~g2gt.ud.io.Sentence`.
        gold_name: the gold side's name in messages (``None``: its path).
        pred_name: the predicted side's name in messages (``None``: its path).

    Returns:
        :class:`Evaluation` with the official metrics (ELAS / EULAS included). When both hold the same
            words (gold tokenisation, ``same_words``), also the no-punctuation UAS / LAS and the per-relation
            table; otherwise those stay empty (they need words that line up one to one).

    Raises:
        CoNLLUError: malformed input (``file:line: ...``).
        EvaluationError: the two files' words do not line up (names both files and
            the first differing sentence/line), or the scorer rejects a tree.
    """
    from udtools import udeval

    gold_ud, gname, gsents = _load(gold, gold_name)
    pred_ud, pname, psents = _load(pred, pred_name)
    try:
        result = udeval.evaluate(gold_ud, pred_ud)
    except udeval.UDError as e:
        if gsents is None:
            gsents = read_conllu(gname)
        if psents is None:
            psents = read_conllu(pname)
        raise _mismatch_error(gname, pname, gsents, psents, str(e)) from None
    enhanced = _has_deps(gold_ud) and _has_deps(pred_ud)
    scores = {k: Score.from_udeval(result[k]) for k in METRICS
              if k in result and (enhanced or k not in ("ELAS", "EULAS"))}
    out = Evaluation(gname, pname, scores, same_words=_same_words(gold_ud, pred_ud), enhanced=enhanced)
    if out.same_words:
        out.no_punct, out.per_relation = _extras(gold_ud.words, pred_ud.words)
    return out


# --------------------------------------------------------------------------- validation
def validate_file(path: str | os.PathLike, lang: str = "en", level: int = 2, warnings: bool = False) -> list[str]:
    """Run the official UD validator (``udvalidate``) on a file.

    Args:
        path: CoNLL-U file.
        lang: language code for language-specific tests (``"ud"`` = none).
        level: validation level 1..5 (1-2 = format and universal tree checks).
        warnings: also return warnings.

    Returns:
        One ``"FILE:LINE: [...] message"`` string per error (empty = valid).
    """
    from udtools.validator import Validator

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such CoNLL-U file: {path}")
    validator = Validator(lang=lang, level=level, output=None, max_store=0)
    state = validator.validate_files([path])
    out = []
    for inc in sorted(state.error_tracker, key=lambda x: (x.lineno or 0)):
        if inc.is_error() or (warnings and inc.is_warning()):
            msg = f"[L{inc.level} {inc.testclass_to_report()} {inc.testid}] {inc.message}"
            if inc.sentid:
                msg += f" (sentence {inc.sentid})"
            out.append(f"{path}:{inc.lineno}: {msg}")
    return out
