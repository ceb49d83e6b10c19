"""Scoring a trained model folder on a treebank's dev set, and the facts a model card records.

:func:`score_model` loads the folder as :class:`g2gt.ud.pipeline.Pipeline` (``dtype="auto"``, what users
get) and runs it twice on the dev set:

* **raw text**: every document rendered back to its raw text (``# text`` / FORM and ``SpaceAfter``;
  sentences of a paragraph joined by a space, paragraphs and documents by a blank line), as ``g2gt parse
  --raw`` reads a file;
* **gold tokenisation**: the gold words, so only tags, lemmas and trees are predicted.

Both are scored with the official CoNLL 2018 scorer (:func:`g2gt.ud.evaluate.evaluate`: Tokens, Sentences,
Words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS, LAS, CLAS, MLAS, BLEX, and ELAS / EULAS with an enhancer).
It also checks that the raw-text output gives the text back exactly (:func:`g2gt.ud.tokenize.text_from_sentences`),
runs the UD validator (level 2) on it, and measures the multiword-token expansion on the dev set's gold
multiword tokens (lexicon + learned expander; ``unseen``: the surfaces not in the lexicon).

With a coref stage (``coref=True``) the gold-tokenisation run also resolves coreference, and each dev document's
raw text goes through the whole pipeline on its own (the raw text of the dev set as one text would be one
document); both are scored against the dev set's ``Entity=`` annotations (:func:`coref_summary`: MUC, B3,
CEAF-e, CoNLL F1 with head match and without singletons, the CRAC primary measure, mention detection and entity
types; raw-text mentions moved onto the gold words by characters, :func:`g2gt.ud.coref.metrics.coref_report`).
"""

from __future__ import annotations

import datetime
import os
import platform
import random
from pathlib import Path

from ...core.files import data_path_name

__all__ = ["raw_text", "score_model", "coref_summary", "mwt_accuracy", "treebank_facts", "machine_facts"]


def raw_text(sentences) -> str:
    """The documents of ``sentences`` as one raw text: paragraphs and documents separated by a blank line."""
    from ..tokenize.data import documents_from_sentences, render_document

    docs = documents_from_sentences(sentences)
    return "\n\n".join(render_document(d, "para", random.Random(i)).text for i, d in enumerate(docs)) + "\n"


def mwt_accuracy(lexicon, sentences) -> dict:
    """Exact-match accuracy (percent, lowercased words) of ``lexicon.words(form, True)`` on the gold multiword
    tokens of ``sentences``: all of them and those whose surface is not in the lexicon's table."""
    from ..tokenize.data import surface_tokens

    gold = [(t.form, [w.lower() for w in t.words]) for s in sentences for t in surface_tokens(s) if t.is_mwt]
    lexicon.prepare(f for f, _ in gold)
    unseen = [f.lower() not in lexicon.table for f, _ in gold]
    right = [[w.lower() for w in lexicon.words(f, True)] == g for f, g in gold]

    def pct(flags):
        flags = list(flags)
        return round(100.0 * sum(flags) / len(flags), 2) if flags else None

    return {"tokens": len(gold), "accuracy": pct(right), "unseen_tokens": sum(unseen),
            "unseen_accuracy": pct(r for r, u in zip(right, unseen) if u),
            "expander": lexicon.expander is not None, "rules": lexicon.rules}


def score_model(model_dir: str | os.PathLike, dev, lang: str, eval_dir: str | os.PathLike,
                enhanced: bool = False, dtype: str = "auto", coref: bool = False) -> dict:
    """Card entries for ``model_dir`` scored on the ``dev`` sentences (module docstring); the predictions go
    to ``eval_dir/dev_raw.conllu`` and ``eval_dir/dev_gold_tok.conllu`` (and, with ``coref``,
    ``eval_dir/dev_raw_coref.conllu``)."""
    import torch

    from ..evaluate import METRICS, evaluate, validate_file
    from ..io.conllu import write_conllu
    from ..pipeline import Pipeline
    from ..tokenize import text_from_sentences

    nlp = Pipeline.load(model_dir, dtype=dtype)
    text = raw_text(dev)
    with torch.inference_mode():
        raw = nlp(text, enhanced=enhanced)
        gold = nlp(dev, enhanced=enhanced, coref=coref)
        raw_coref = _raw_coref(nlp, dev) if coref else None
    out = Path(eval_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_conllu(raw, out / "dev_raw.conllu")
    write_conllu(gold, out / "dev_gold_tok.conllu")
    rows = {}
    for name, pred in (("raw text", raw), ("gold tokenisation", gold)):
        ev = evaluate(dev, pred, gold_name="dev", pred_name=name)
        rows[name] = {k: round(ev.scores[k].f1 * 100, 2) for k in METRICS if k in ev.scores}
    errors = validate_file(out / "dev_raw.conllu", lang=lang if lang and lang != "xx" else "ud", level=2)
    card = {"dev_scores_official_scorer": rows,
            "evaluation": {"dtype": dtype, "dev_sentences": len(dev), "raw_text_sentences": len(raw),
                           "text_round_trip": text_from_sentences(raw) == text,
                           "validator_level2_errors": len(errors), "validator_first_errors": errors[:3]}}
    if coref:
        from ..coref.metrics import coref_report

        write_conllu(raw_coref, out / "dev_raw_coref.conllu")
        card["coref_dev_scores"] = {name: coref_summary(coref_report(dev, list(pred)))
                                    for name, pred in (("raw text", raw_coref), ("gold tokenisation", gold))}
    lexicon = getattr(nlp.tokenize, "lexicon", None)
    if lexicon is not None:
        card["mwt_dev"] = mwt_accuracy(lexicon, dev)
    return card


def _raw_coref(nlp, dev) -> list:
    """Each dev document's raw text (as :func:`raw_text` renders it) through ``nlp`` with coreference, one
    document at a time; the first sentence of each carries the gold ``# newdoc id``."""
    from ..tokenize.data import documents_from_sentences, render_document

    out = []
    for i, d in enumerate(documents_from_sentences(dev)):
        sents = list(nlp(render_document(d, "para", random.Random(i)).text, coref=True))
        if sents:
            sents[0].metadata["newdoc id"] = d.doc_id or f"doc{i + 1}"
        out += sents
    return out


def coref_summary(report: dict) -> dict:
    """The card's coreference row of a :func:`g2gt.ud.coref.metrics.coref_report`: F1 of MUC, B3, CEAF-e and
    the CoNLL F1 (head match, no singletons), the CoNLL F1 with singletons, mention detection F1 (head match)
    and the entity-type accuracy on matched mentions, in percent."""
    head, m = report["head"], report["mentions"]
    return {"MUC": round(head["muc_f1"], 2), "B3": round(head["bcub_f1"], 2), "CEAF-e": round(head["ceafe_f1"], 2),
            "CoNLL": round(head["conll"], 2), "CoNLL with singletons": round(report["head+singletons"]["conll"], 2),
            "mention F1 (head)": round(m["mention_f1"], 2), "entity type accuracy": round(m["type_acc"], 2)}


def treebank_facts(files, train, dev) -> dict:
    """What the model was trained on: files, sizes, the columns the treebank fills, its licence line."""
    def share(sents, col):
        words = [w for s in sents for w in s.word_rows]
        filled = sum(1 for w in words if w[col] not in (None, "_", []) and w[col] != {})
        return round(filled / max(len(words), 1), 3)

    columns = {c: share(train, c) for c in ("lemma", "upos", "xpos", "feats", "deps")}
    license_line = None
    if files.folder is not None and (files.folder / "LICENSE.txt").is_file():
        from ...core.registry import license_name  # the licence's short name (CC BY-SA 4.0), else the first line

        text = (files.folder / "LICENSE.txt").read_text(encoding="utf-8", errors="replace").strip()
        license_line = license_name(text) if text else None
    n_words = sum(len(s) for s in train)
    return {"license": license_line or "see the treebank's LICENSE.txt",
            "training_data": f"{files.train.name} ({len(train):,} sentences, {n_words:,} words); "
                             f"{files.dev.name} ({len(dev):,} sentences) for model selection only",
            "treebank": {"train": data_path_name(files.train), "dev": data_path_name(files.dev), "train_sentences": len(train),
                         "dev_sentences": len(dev), "train_words": n_words, "columns_filled": columns}}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_facts() -> dict:
    """CPU model, core count, torch / g2gt / Python versions and the date (for the card)."""
    import torch

    from ..._version import __version__

    return {"cpu": _cpu_model(), "cpu_cores": os.cpu_count(), "torch": torch.__version__, "g2gt": __version__,
            "python": platform.python_version(), "date": datetime.date.today().isoformat()}
