"""``train_distill``: a student parser trained on the soft distributions of one or more teacher parsers (what
``g2gt train distill`` runs). The way to make a model smaller and faster, or to fold an ensemble into one model.

* The student is a normal parser (its own size: width, layers, refinement on or off) with the FIRST teacher's
  vocabularies (words, characters, relations, UPOS / XPOS / UFeats, lemma scripts and lemma lexicon); its
  checkpoints are parser checkpoints (``g2gt parse --model OUT``, ``g2gt export-model --parser OUT``).
* It learns the teachers' averaged distributions over arcs, relations, UPOS, XPOS, UFeats and lemma scripts
  (:mod:`g2gt.ud.parse.distill_task`: the maths, the label mapping between teachers, why the targets are computed
  on the fly) on the treebank sentences and on unlabeled text of the same language (:func:`read_text`), with the
  gold loss of the treebank sentences mixed in by ``gold_weight``.
* Training is the :class:`g2gt.core.train.Trainer`'s (``best.pt`` by dev LAS, ``last.pt``, ``log.jsonl``,
  ``config.json``, exact ``resume``), through :func:`g2gt.core.run.run_training` like :func:`train_parser`.

Importable without torch (the CLI builds its options from :func:`train_distill`'s signature).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

from ...core.config import TrainConfig, model_fields
from ...core.run import training_run
from .config import DATA_FIELDS, ParserConfig, parser_train_config

_log = logging.getLogger("g2gt")

__all__ = ["train_distill", "read_text", "TEXT_FORMATS"]

#: how a ``--text`` file is read (see :func:`read_text`)
TEXT_FORMATS = ("auto", "raw", "lines", "tokens", "conllu")


def read_text(path: str | Path, text_format: str = "auto", segment=None, max_words: int = 100) -> list:
    """Unlabeled sentences (:class:`g2gt.ud.io.Sentence`) of a text file (``.gz`` read transparently).

    ``text_format``: ``"raw"`` running text, paragraphs separated by blank lines, split into sentences and
    tokens by ``segment`` (a callable ``str -> [Sentence]``: the teacher's segmenter, e.g.
    :meth:`g2gt.ud.pipeline.Pipeline.text_sentences`); ``"lines"`` one sentence per line, tokenized by ``segment``
    (each line read as a paragraph of its own); ``"tokens"`` one sentence per line, tokens separated by spaces;
    ``"conllu"`` the words of a CoNLL-U file (its annotation is not used); ``"auto"``: ``raw``. Files named
    ``*.conllu[.gz]`` are always read as CoNLL-U, so one format can serve a mix of CoNLL-U and text files.
    Sentences longer than ``max_words`` words are left out (0 = keep all)."""
    from ..io import sentence_from_words
    from ..io.conllu import read_conllu
    from ...core.files import read_text as read_file

    name = str(path)
    if text_format not in TEXT_FORMATS:
        raise ValueError(f"text format must be one of {', '.join(TEXT_FORMATS)}, got {text_format!r}")
    fmt = "conllu" if _is_conllu(name) else "raw" if text_format == "auto" else text_format
    if fmt == "conllu":
        sents = read_conllu(path)
    else:
        text = read_file(path)
        if fmt == "tokens":
            sents = [sentence_from_words(line.split(), sent_id=str(k))
                     for k, line in enumerate(text.splitlines(), 1) if line.split()]
        else:
            if segment is None:
                raise ValueError(f"{name}: text format {fmt!r} needs a segmenter (or use 'tokens' / 'conllu')")
            if fmt == "lines":
                text = "\n\n".join(line.strip() for line in text.splitlines() if line.strip())
            sents = list(segment(text))
    return [s for s in sents if len(s) > 0 and (not max_words or len(s) <= max_words)]


def _is_conllu(name: str) -> bool:
    return name.endswith((".conllu", ".conllu.gz"))


def _segmenter(teacher: str):
    """``str -> [Sentence]``: the learned tokenizer of the model ``teacher`` (its ``segmenter.pt``, float32), the
    rule tokenizer when it has none."""
    from ...core.registry import find_model, is_model_folder
    from ..stage import PART_FILES
    from ..tokenize.text import text_to_sentences

    where = find_model(teacher)
    file = where / PART_FILES["segmenter"]
    if not (is_model_folder(where) and file.is_file()):
        return lambda text: text_to_sentences(text, tokenizer="auto") if text.strip() else []
    from ..tokenize import Segmenter

    return Segmenter.load(file, dtype="float32").segment_document


def _resumed_text(ck: dict, out_dir, text: Sequence, text_format: str, text_max_words: int) -> tuple:
    """The text files and their reading of a resumed run: the stored ones when ``text`` is empty, else
    ``text`` (which must name the stored files: other data would not continue the run)."""
    stored = (ck.get("task", {}).get("distill") or {})
    if "text" not in stored:  # a run from before the text files were recorded: the ones given
        return text, text_format, text_max_words
    files = [str(p) for p in stored["text"]]
    if not text:
        return files, stored.get("text_format", text_format), int(stored.get("text_max_words", text_max_words))
    if [str(p) for p in text] != files:
        raise ValueError(f"{Path(out_dir) / 'last.pt'}: the run was trained with the text files "
                         f"{', '.join(files) or '(none)'}, not {', '.join(map(str, text))}; resume with the same "
                         "--text files (or none)")
    return text, text_format, text_max_words


def _resumed_settings(ck: dict, given: dict) -> dict:
    """The distillation settings a resumed run continues with: the stored ones (``last.pt``), so that it goes on
    as it was started; a note on stderr for each given value they replace."""
    task = ck.get("task", {})
    stored = {**{k: task[k] for k in ("refine_train", "refine_steps") if k in task}, **(task.get("distill") or {})}
    out = {k: stored.get(k, v) for k, v in given.items()}
    changed = [f"{k} {out[k]} (not {v})" for k, v in given.items() if out[k] != v]
    if changed:
        _log.info("resuming with the run's own settings: " + ", ".join(changed))
    return out


@training_run
def train_distill(teachers: Sequence[str], train: Sequence, dev: Sequence, out_dir: str | Path,
                  text: Sequence[str | Path] = (), config: ParserConfig | None = None,
                  train_config: TrainConfig | None = None, temperature: float = 1.0, gold_weight: float = 0.0,
                  refine_train: str = "self", refine_steps: int = 2, teacher_refine_steps: int = -1,
                  text_format: str = "auto", text_max_words: int = 100, batch_tokens: int = 1500,
                  word_dropout: float = 0.2, resume: bool = False, overwrite: bool = False) -> tuple[Any, list[dict]]:
    """Distil ``teachers`` (parser names or paths; the first gives the vocabularies and segments raw text) into
    a new student; return ``(best student Parser, dev history)``.

    ``train`` / ``dev``: treebank sentences (the dev set selects ``best.pt`` by LAS). ``text``: files of
    unlabeled text (:func:`read_text` with ``text_format`` and ``text_max_words``). ``config``: the student's
    :class:`ParserConfig` (``d_model``, ``num_layers``, ``graph_channel`` ...; its sizes,
    :data:`~g2gt.ud.parse.config.DATA_FIELDS`, must be left at 0: they come from the first teacher's
    vocabulary). ``temperature``: ``T`` of every softmax. ``gold_weight``: ``g`` in
    ``(1 - g) * distillation + g * gold`` on treebank sentences. ``refine_train``: ``"self"`` (the parser's
    RNGTr refinement training) or ``"none"`` (forced without the graph channel or with ``refine_steps = 0``).
    ``teacher_refine_steps``: refinement passes of each teacher for its targets (-1 = each teacher's default).
    The others are :func:`train_parser`'s. ``train_config.init_from`` (a parser: a shipped name, a folder, a
    checkpoint) starts the student from that parser's architecture, vocabulary and weights instead of the first
    teacher's vocabulary and fresh weights (the fields of ``config`` that differ from their defaults override
    its architecture), so a distilled model can be trained further. A folder that holds a run is refused
    unless ``resume`` or ``overwrite`` (:mod:`g2gt.core.run`).

    With ``resume``, the student's vocabulary and configuration, the teachers (with their refinement passes), the
    text files and the distillation settings (``temperature``, ``gold_weight``, ``refine_train``, ``refine_steps``,
    ``word_dropout``, ``batch_tokens``) are read back from ``last.pt``: the run goes on as it was started (naming
    other teachers or text files is an error; ``teachers`` / ``text`` may be empty). The budget is
    ``train_config``'s.
    """
    import torch

    from ...core.run import resume_checkpoint, run_training
    from .distill_task import DistillTask, Teacher
    from .model import ParserModel
    from .parser import Parser
    from .task import ParsingTask
    from .vocab import ParserVocab

    tc = train_config or parser_train_config()
    config = config or ParserConfig()
    ck = resume_checkpoint(out_dir, resume)
    names = [str(t) for t in teachers]
    if ck is not None:
        stored = list((ck.get("task", {}).get("distill") or {}).get("teachers") or [])
        if not stored:
            raise ValueError(f"{Path(out_dir) / 'last.pt'}: not a distillation run (no teachers recorded)")
        if names and names != stored:
            raise ValueError(f"{Path(out_dir) / 'last.pt'}: the run distils {', '.join(stored)}, not "
                             f"{', '.join(names)}; resume with the same --teacher options (or none)")
        names = stored
        text, text_format, text_max_words = _resumed_text(ck, out_dir, text, text_format, text_max_words)
        kept = _resumed_settings(ck, dict(temperature=temperature, gold_weight=gold_weight, refine_train=refine_train,
                                          refine_steps=refine_steps, word_dropout=word_dropout,
                                          batch_tokens=batch_tokens))
        temperature, gold_weight, refine_train = kept["temperature"], kept["gold_weight"], kept["refine_train"]
        refine_steps, word_dropout, batch_tokens = kept["refine_steps"], kept["word_dropout"], kept["batch_tokens"]
        vocab = ParserVocab.from_dict(ck["task"]["vocab"])
        cfg = ParserConfig.from_dict(ck["model_config"])
    elif not names:
        raise ValueError("no teacher given: name at least one trained parser (e.g. --teacher en_combined)")
    fixed = sorted(set(model_fields(config, changed=True)) & set(DATA_FIELDS))
    if fixed:
        raise ValueError(f"ParserConfig {', '.join(fixed)} cannot be set (leave them at 0): the student takes its "
                         "sizes from the first teacher")
    steps = [None if teacher_refine_steps < 0 else teacher_refine_steps] * len(names)
    if ck is not None:  # each teacher's passes as stored
        steps = list(ck["task"]["distill"].get("teacher_refine_steps") or steps)
    loaded = [Teacher.load(name, refine_steps=k) for name, k in zip(names, steps)]
    source = None
    if ck is None and tc.init_from:  # continue a student: its architecture, vocabulary and weights
        from .warm import load_source, warm_config

        source = load_source(tc.init_from)
        vocab = source.vocab
        cfg = warm_config(source, vocab, model_fields(config, DATA_FIELDS, changed=True),
                          list(source.config.treebanks or []))
    elif ck is None:
        vocab = loaded[0].vocab
        cfg = vocab.config(**model_fields(config, DATA_FIELDS))
    lost: dict[str, dict[str, list[str]]] = {}
    for t in loaded:
        dropped = t.map_into(vocab)
        if dropped:
            lost[t.name] = dropped
            _log.info(f"teacher {t.name}: classes the student does not have (their probability is dropped and the "
                  "rest renormalised): " + "; ".join(f"{h} {', '.join(c[:8])}{' ...' if len(c) > 8 else ''}"
                                                     for h, c in dropped.items()))
    refine = refine_train if cfg.graph_channel and refine_steps > 0 else "none"
    text_sents: list = []
    per_file = {}
    if text:
        needs_segmenter = text_format != "tokens" and not all(_is_conllu(str(p)) for p in text)
        segment = _segmenter(names[0]) if needs_segmenter else None
        for p in text:
            sents = read_text(p, text_format, segment, text_max_words)
            per_file[str(p)] = {"sentences": len(sents), "words": sum(len(s) for s in sents)}
            _log.info(f"text: {p} ({len(sents)} sentences)")
            text_sents += sents
    sentences = list(train) + text_sents
    gold = [True] * len(train) + [False] * len(text_sents)
    torch.manual_seed(tc.seed)
    model = ParserModel(cfg)
    if source is not None:
        from .warm import copy_weights

        _log.info(copy_weights(model, source).summary(source))
    eval_task = ParsingTask([], dev, vocab, cfg.max_distance, batch_tokens, refine, refine_steps, 0.0, word_dropout,
                            tc.seed, graph_channel=cfg.graph_channel)
    settings = {"teachers": names, "teacher_refine_steps": [t.refine_steps for t in loaded],
                "temperature": temperature, "gold_weight": gold_weight}
    task = DistillTask(sentences, gold, loaded, eval_task, temperature, gold_weight, refine, batch_tokens,
                       word_dropout, tc.seed, info={"teacher_refine_steps": settings["teacher_refine_steps"],
                                                    "text": [str(p) for p in text], "text_format": text_format,
                                                    "text_max_words": text_max_words,
                                                    "word_dropout": word_dropout, "batch_tokens": batch_tokens})
    task_info = {"distill": settings, "refine_train": refine, "refine_steps": eval_task.refine_steps,
                 "batch_tokens": batch_tokens, "word_dropout": word_dropout, "text_format": text_format,
                 "text_max_words": text_max_words, "dropped_classes": lost}
    data_info = {"train_sentences": len(train), "text_sentences": len(text_sents), "text_files": per_file,
                 "dev_sentences": len(dev), "train_words": sum(len(s) for s in sentences),
                 "vocab_words": len(vocab.words), "rels": len(vocab.rels), "upos": len(vocab.upos)}
    trainer, history = run_training(model, task, tc, out_dir, cfg.to_dict(), task_info=task_info,
                                    data_info=data_info, resume=resume, overwrite=overwrite)
    return Parser.load(out_dir, trainer.device, dtype="float32"), history
