"""Any UD treebank -> a model folder in one call: what ``g2gt train pipeline`` runs.

:func:`train_pipeline` trains, in this order, each in its own training folder under ``out``:

==============  =========================================================  ======================
stage (folder)  what                                                       share of the budget
==============  =========================================================  ======================
``segmenter``   tokens, sentences, multiword tokens (+ the learned          20 %
                expander when the treebank has enough multiword tokens)
``parser``      UPOS / XPOS / UFeats (the columns the treebank fills),      65 %
                lemmas, the dependency tree
``enhancer``    enhanced UD graphs (DEPS), when the training data has them  15 %
``coref``       coreference (CorefUD ``Entity=`` in MISC: mentions,         20 %
                entities, entity types), when the training and dev data
                have them (:func:`g2gt.ud.coref.train.train_coref`)
==============  =========================================================  ======================

``enhancer=False`` / ``coref=False`` (``--no-enhancer`` / ``--no-coref``) leave the optional stages out.
Shares are renormalised over the stages a treebank has; ``stage_minutes`` gives a stage its own minutes. The
segmenter gets at least a minute where that is at most a third of the budget, and trains the multiword-token
expander only with two minutes or more.
A stage folder whose run used its whole budget is reused as it is (``resume=True``), one with an
interrupted run is continued with the budget stored in its ``last.pt`` (:mod:`g2gt.core.run_folder`): a parser
trained before with ``g2gt train parser --out OUT/parser`` is picked up. Without ``resume`` an existing run
is an error (:class:`g2gt.core.run.RunExists`), never overwritten, unless ``overwrite`` (``--overwrite``)
replaces it. A stage is done when every part the treebank needs is there: a finished
segmenter run without the expander the treebank needs (an older run, one trained with ``--no-expander`` or
with less than :data:`EXPANDER_MIN_MINUTES`) gets only the expander trained
(:func:`g2gt.ud.tokenize.train.add_expander`); an expander whose segmenter never started is reused.
``max_steps`` caps every stage's updates (quick trials and tests).

``sources`` (``--source STAGE=MODEL``, as spaCy's ``source`` for a pipeline component) takes a stage as it is
from a trained model (a shipped or installed name, a model folder or a training folder) instead of training
it: e.g. a model's segmenter kept while its parser is retrained. The budget is split among the stages that
train; the card lists the commands that made the sourced stage (:func:`g2gt.ud.recipe.export.source_commands`)
and its training facts from the source's card.

Each stage folder keeps the commands that trained it (``commands.jsonl``, :func:`g2gt.core.run_folder.record_command`:
this pipeline's command for the stages it trains, ``g2gt train parser ...`` for a stage trained on its own),
so the card's ``commands`` has each stage's own commands and the pipeline's
(:func:`g2gt.ud.recipe.export.stage_commands`).

Then ``out/model`` is written (:func:`g2gt.ud.recipe.export.export_model`: one file per stage, float16
weights, ``model.json``; a stage's ``best.pt``, or its ``averaged.pt`` when its run averaged its last
snapshots, ``--average-last``) and scored on the dev set with the official CoNLL 2018 scorer from raw text and
from the gold tokenisation (:mod:`g2gt.ud.recipe.score`); the card gets the scores, the multiword-token
accuracy, whether ``# text`` was rebuilt exactly, the UD validator's verdict, the commands, the wall time
and the CPU. The coref stage is written into the model folder as
``coref.pt`` (:func:`g2gt.ud.coref.stage.add_to_model_folder`) with its link threshold chosen on dev (recorded
in the card's ``coref_threshold``), and scored on dev from the gold tokenisation (predicted trees) and from raw
text, document by document (``coref_dev_scores``: MUC, B3, CEAF-e, CoNLL F1 with head match, as the CRAC shared
tasks). The training settings of each stage are the defaults of its own command (``g2gt train segmenter /
parser / enhanced / coref``), read from the same place: the config dataclasses, the recipes' :class:`TrainConfig`
makers (:func:`g2gt.ud.tokenize.train.default_train_config`, :func:`g2gt.ud.parse.parser_train_config`,
:func:`g2gt.ud.enhance.enhancer_train_config`, :func:`g2gt.ud.coref.train.coref_train_config`) and the training
functions' signatures (``batch_tokens``).
"""

from __future__ import annotations

import logging
import dataclasses
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_log = logging.getLogger("g2gt")

__all__ = ["DEFAULT_MINUTES", "STAGE_SHARES", "SEGMENTER_FLOOR", "EXPANDER_MIN_MINUTES", "TreebankFiles",
           "find_treebank", "split_budget", "train_pipeline"]

DEFAULT_MINUTES = 30.0
#: share of the budget of each stage (renormalised over the stages a treebank has)
STAGE_SHARES = {"segmenter": 0.20, "parser": 0.65, "enhancer": 0.15, "coref": 0.20}
#: minutes the segmenter gets at least (when that is at most a third of the budget)
SEGMENTER_FLOOR = 1.0
#: the expander trains only when the segmenter stage has at least this many minutes (else the character model
#: needs all of them)
EXPANDER_MIN_MINUTES = 2.0
_UD_FILE = re.compile(r"^(?P<name>(?P<lang>[a-z]{2,3})_[a-z0-9]+)-ud-(?P<split>train|dev|test)\.conllu(\.gz)?$")


@dataclass
class TreebankFiles:
    """The training and dev files of a treebank, its ``name`` (``fr_sequoia``) and language code (``fr``);
    ``folder``: the treebank folder when there is one (its ``LICENSE.txt`` goes into the card)."""

    train: Path
    dev: Path
    name: str
    lang: str
    folder: Path | None = None


def find_treebank(folder: str | os.PathLike | None, train: str | os.PathLike | None = None,
                  dev: str | os.PathLike | None = None) -> TreebankFiles:
    """The files of a UD treebank folder (``*-ud-train.conllu[.gz]``, ``*-ud-dev.conllu[.gz]``), or the
    ``train`` / ``dev`` files given; name and language come from UD file names (``xx_name-ud-train``),
    else ``xx`` / the file's stem."""
    if folder is not None:
        root = Path(folder)
        found = {}
        for split in ("train", "dev"):
            hits = sorted(p for p in root.iterdir() if p.is_file() and re.search(rf"-ud-{split}\.conllu(\.gz)?$", p.name))
            if len(hits) != 1:
                what = "no" if not hits else f"{len(hits)}"
                raise FileNotFoundError(f"{root}: {what} *-ud-{split}.conllu[.gz] file(s); a UD treebank folder has "
                                        f"exactly one (or give --train FILE --dev FILE)")
            found[split] = hits[0]
        train, dev = found["train"], found["dev"]
    if train is None or dev is None:
        raise ValueError("find_treebank needs a treebank folder or both train and dev files")
    m = _UD_FILE.match(Path(train).name)
    name = m.group("name") if m else re.sub(r"\.conllu(\.gz)?$", "", Path(train).name).replace("-", "_")
    return TreebankFiles(Path(train), Path(dev), name, m.group("lang") if m else "xx",
                         Path(folder) if folder is not None else None)


def split_budget(max_minutes: float, stages: Sequence[str], stage_minutes: dict[str, float] | None = None
                 ) -> dict[str, float]:
    """Minutes per stage: ``stage_minutes`` where given, the rest of ``max_minutes`` shared by
    :data:`STAGE_SHARES` among the other ``stages``; the segmenter gets at least
    ``min(SEGMENTER_FLOOR, a third of the rest)`` (it needs about a minute to learn sentence ends)."""
    fixed = {s: float(m) for s, m in (stage_minutes or {}).items() if s in stages}
    left = max(max_minutes - sum(fixed.values()), 0.0)
    if "segmenter" in stages and "segmenter" not in fixed and len(stages) - len(fixed) > 1:
        share = STAGE_SHARES["segmenter"] / sum(STAGE_SHARES[s] for s in stages if s not in fixed)
        if share * left < min(SEGMENTER_FLOOR, left / 3):
            fixed["segmenter"] = min(SEGMENTER_FLOOR, left / 3)
            left -= fixed["segmenter"]
    rest = [s for s in stages if s not in fixed]
    total = sum(STAGE_SHARES[s] for s in rest) or 1.0
    out = {s: fixed[s] if s in fixed else left * STAGE_SHARES[s] / total for s in stages}
    for s, m in out.items():
        if m <= 0:
            raise ValueError(f"the {s} stage gets {m:g} minutes; raise --max-minutes or give --{s}-minutes")
    return out


def _say(msg: str) -> None:
    _log.info(msg)


def _has_deps(sentences) -> bool:
    return any(w["deps"] not in (None, "_", []) for s in sentences for w in s.word_rows)


def _has_entities(sentences) -> bool:
    """Whether some word carries a CorefUD ``Entity`` item in MISC."""
    return any("Entity" in (w["misc"] or {}) for s in sentences for w in s.word_rows)


def _mwt_types(sentences) -> int:
    """Number of different (lowercased) multiword-token surfaces."""
    from ..tokenize.data import surface_tokens

    return len({t.form.lower() for s in sentences for t in surface_tokens(s) if t.is_mwt})


def _wants_expander(train, minutes: float) -> bool:
    """Whether the segmenter stage of a treebank with training sentences ``train`` and ``minutes`` includes the
    learned expander (module docstring)."""
    from ..tokenize.train import EXPANDER_MIN_TYPES

    return minutes >= EXPANDER_MIN_MINUTES and _mwt_types(train) >= EXPANDER_MIN_TYPES


def _stage_config(folder: Path, resume: bool, fresh: Callable[[], object], started: bool = False,
                  overwrite: bool = False, **runtime):
    """``(train_config, resume_flag, reused)`` for a stage folder (module docstring); ``started``: the folder
    holds part of the stage's run even without its ``last.pt`` (the segmenter's expander)."""
    from ...core.run import RunExists, check_run_folder
    from ...core.run_folder import run_state, stored_train_config

    state = run_state(folder)
    if overwrite and not resume:
        return fresh(), False, False
    if (state.exists or started) and not resume:
        what = f"a training run ({state.step} updates)" if state.exists else "part of a training run"
        raise RunExists(f"{folder} already holds {what}; pass --resume to continue or reuse it or --overwrite to "
                        "replace it, or choose another --out")
    check_run_folder(folder, resume)  # the other files of a run, before its commands.jsonl is touched
    if not state.exists:
        if started:
            _say(f"{folder.name}: continuing the stage started in {folder}")
        return fresh(), started or resume, False
    if state.finished:
        _say(f"{folder.name}: reusing the finished run in {folder} ({state.step} updates, {state.minutes:.1f} min, "
             f"budget {state.budget})")
        return None, True, True
    _say(f"{folder.name}: resuming {folder} at update {state.step} ({state.minutes:.1f} of {state.budget})")
    return stored_train_config(folder, **runtime), True, False


def train_pipeline(files: TreebankFiles, out: str | os.PathLike, *, name: str | None = None, lang: str | None = None,
                   max_minutes: float = DEFAULT_MINUTES, stage_minutes: dict[str, float] | None = None,
                   resume: bool = False, overwrite: bool = False, device: str = "cpu", progress: bool = False,
                   batch_tokens: int | None = None,
                   enhancer: bool = True, coref: bool = True, evaluate: bool = True, command: str | None = None,
                   threads: int = 0, max_steps: int | None = None, sources: dict[str, str] | None = None) -> dict:
    """Train every stage ``files`` supports into ``out/<stage>``, write ``out/model`` and score it on dev
    (module docstring). ``enhancer`` / ``coref``: train the optional stages when the data has what they learn
    (DEPS; ``Entity=`` in MISC, in both the training and the dev file). ``command``: what the card and the stage
    folders record as the pipeline's command; ``sources``: ``{stage: model}``, stages taken as they are from
    trained models; ``overwrite``: stages whose folders hold a run train afresh, replacing it. Returns the model
    card as written to ``out/model/model.json``."""
    from ..io.conllu import read_conllu
    from ..recipe.export import export_model, source_commands, stage_commands
    from ...core.run_folder import record_command

    t_start = time.time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name, lang = name or files.name, lang or files.lang
    train = read_conllu(files.train, require_heads=True)
    dev = read_conllu(files.dev, require_heads=True)
    stages = ["segmenter", "parser"] + (["enhancer"] if enhancer and _has_deps(train) and _has_deps(dev) else []) \
        + (["coref"] if coref and _has_entities(train) and _has_entities(dev) else [])
    sources = {s: str(m) for s, m in (sources or {}).items()}
    for s in sources:
        if s not in stages:
            raise ValueError(f"--source {s}={sources[s]}: {s} is not a stage of this run (stages: {', '.join(stages)})")
    trained = [s for s in stages if s not in sources]
    minutes = split_budget(max_minutes, trained, stage_minutes) if trained else {}
    plan = ", ".join(f"{s} from {sources[s]}" if s in sources else f"{s} {minutes[s]:.1f} min" for s in stages)
    _say(f"{name}: {len(train)} training and {len(dev)} dev sentences; stages: {plan}")
    runtime = dict(device=device, progress=progress)
    limit = {"max_steps": max_steps} if max_steps else {}
    command = command or f"train_pipeline({files.train.name!r}, {str(out)!r})"
    info: dict[str, dict] = {s: _source_info(s, m) for s, m in sources.items()}
    for s, m in sources.items():
        _say(f"{s}: taken as it is from {m} ({info[s]['step']} updates)")

    # ---- 1. tokenizer, sentence splitter, multiword tokens
    if "segmenter" not in sources:
        _say(f"[1/{len(stages)}] segmenter -> {out / 'segmenter'}")
        info["segmenter"] = _segmenter_stage(train, dev, out / "segmenter", minutes["segmenter"], resume,
                                             lang == "en", command, limit, runtime, overwrite)

    # ---- 2. tagger, lemmatizer, parser; 3. enhanced UD (when the treebank has DEPS); 4. coreference (Entity=)
    from ..coref.train import coref_train_config, train_coref
    from ..enhance import enhancer_train_config, train_enhancer
    from ..parse import parser_train_config, train_parser

    recipes = {"parser": (parser_train_config, train_parser, "batch_tokens"),
               "enhancer": (enhancer_train_config, train_enhancer, "batch_tokens"),
               "coref": (coref_train_config, train_coref, "batch_tokens")}
    for stage in (s for s in stages if s in trained and s in recipes):
        recipe, fit, batch_name = recipes[stage]
        folder = out / stage
        fresh = recipe(max_minutes=minutes[stage], **limit, **runtime)
        _say(f"[{stages.index(stage) + 1}/{len(stages)}] {stage} -> {folder}")
        tc, resumed, reused = _stage_config(folder, resume, lambda fresh=fresh: fresh, overwrite=overwrite, **runtime)
        if not reused:
            record_command(folder, command, resumed)
            fit(train, dev, folder, None, tc, **({batch_name: batch_tokens} if batch_tokens else {}), resume=resumed,
                overwrite=overwrite)
        info[stage] = _stage_info(folder, reused)

    # ---- the model folder and its card
    from .score import machine_facts, score_model, treebank_facts

    info = {s: info[s] for s in stages}

    commands = stage_commands({s: out / s for s in trained})
    for s in sources:
        commands[s] = "\n".join([f"# taken from {sources[s]} (--source {s}=...); it was made by:",
                                  *source_commands(sources[s], s)])
    for s in trained:
        if s not in commands:
            _say(f"{s}: {out / s} records no command (a run from before g2gt kept them), so the card cannot list "
                 f"it; add it with g2gt.core.run_folder.record_command({str(out / s)!r}, COMMAND, resume=False)")
    card = {
        "name": name, "language": lang,
        "description": f"{name}: tokenizer, sentence splitter, multiword tokens, tagger, lemmatizer, parser"
                       + (", enhanced UD" if "enhancer" in stages else "")
                       + (", coreference" if "coref" in stages else "") + f" (trained on {files.train.name})",
        **treebank_facts(files, train, dev),
        "commands": {**commands, "pipeline": command},
        "training_minutes": {s: round(i["minutes"], 2) for s, i in info.items()},
        "steps": {s: i["step"] for s, i in info.items()},
        "budget_minutes": {s: round(i["max_minutes"] + i.get("expander_max_minutes", 0.0), 2) for s, i in info.items()},
        "stages": info,
    }
    model_dir = out / "model"
    part = {s: _source_part(sources[s], s) if s in sources else _trained_part(out / s) for s in stages}
    export_model(model_dir, part["parser"], part["segmenter"], part.get("enhancer"), card)
    from ..coref.stage import FILE_NAME as COREF_FILE, add_to_model_folder

    if "coref" in stages:
        from ...core.registry import model_card

        _say(f"coref: {model_dir / COREF_FILE}, its link threshold chosen on {files.dev.name}")
        add_to_model_folder(part["coref"], model_dir, tune_on=dev)
        card["coref_threshold"] = model_card(model_dir)["coref_threshold"]
    else:
        (model_dir / COREF_FILE).unlink(missing_ok=True)  # a stage of an earlier run must not be shipped
    t_trained = time.time()
    if evaluate:
        _say(f"scoring {model_dir} on {files.dev.name} (raw text and gold tokenisation)")
        card.update(score_model(model_dir, dev, lang, out / "eval", enhanced="enhancer" in stages,
                                coref="coref" in stages))
    card["training"] = {"wall_minutes": round((t_trained - t_start) / 60, 2),
                        "wall_minutes_with_evaluation": round((time.time() - t_start) / 60, 2),
                        "max_minutes": max_minutes, "threads": threads or None, "device": device, **machine_facts()}
    from ...core.registry import write_card

    write_card(model_dir, card)
    _say(f"done in {(time.time() - t_start) / 60:.1f} min; {model_dir}/model.json")
    return card


def _segmenter_stage(train, dev, folder: Path, minutes: float, resume: bool, english: bool, command: str,
                     limit: dict, runtime: dict, overwrite: bool = False) -> dict:
    """Train, continue or reuse the segmenter stage in ``folder``; it is done when its run finished and, where
    :func:`_wants_expander`, its checkpoints hold the expander, else only the missing part trains (module
    docstring). ``limit`` / ``runtime``: :class:`TrainConfig` fields. Returns the card's facts of the stage."""
    from ...core.run_folder import record_command
    from ..tokenize import train_segmenter
    from ..tokenize.train import add_expander, default_train_config, expander_budget, expander_minutes, lacks_expander

    seg_tc = default_train_config(max_minutes=minutes, **limit, **runtime)
    expander = _wants_expander(train, minutes)
    started = (folder / "expander" / "last.pt").is_file()  # stopped after the expander, before the character model
    tc, resumed, reused = _stage_config(folder, resume, lambda: seg_tc, started, overwrite, **runtime)
    added = expander and not (overwrite and not resume) and lacks_expander(folder)
    if added:  # the run predates its expander (or was trained without one): train that part alone
        _say(f"{folder.name}: the run has no multiword-token expander, which this treebank needs; training it alone "
             f"in {folder / 'expander'}")
        record_command(folder, command, True)
        add_expander(folder, train, dev, expander_budget(seg_tc))
    if resumed and not reused and tc.max_minutes:  # last.pt stores the character model's part of the stage
        tc = dataclasses.replace(tc, max_minutes=tc.max_minutes + expander_minutes(folder))
    if not reused:
        record_command(folder, command, resumed)
        train_segmenter(train, dev, folder, train_config=tc, resume=resumed, english_rules=english,
                        expander=expander, expander_train_config=expander_budget(tc), overwrite=overwrite)
    return {**_stage_info(folder, reused), "expander_added": added}


def _stage_info(folder: Path, reused: bool) -> dict:
    """Facts of a finished stage folder for the card: updates, minutes, best dev value, parameters."""
    from ...core.checkpoint import load_checkpoint, resolve_checkpoint
    from ...core.run_folder import run_state

    state = run_state(folder)
    file = _trained_part(folder)
    ck = load_checkpoint(resolve_checkpoint(file))
    out = {"folder": str(folder), "step": state.step if state.exists else ck.get("step", 0),
           "minutes": state.minutes, "budget": state.budget,
           "max_minutes": state.max_minutes, "reused": reused, **_checkpoint_facts(ck)}
    if "averaged" in ck:
        out.update(file=file.name, averaged_steps=list(ck["averaged"].get("steps", [])))
    if out.get("expander_parameters"):
        out["expander_max_minutes"] = run_state(folder / "expander").max_minutes
    return out


def _trained_part(folder: Path) -> Path:
    """What a stage's training folder contributes to the model: ``averaged.pt`` when the run averaged its last
    snapshots (``--average-last``: the user asked for the average), else the folder (its ``best.pt``)."""
    averaged = folder / "averaged.pt"
    return averaged if averaged.is_file() else folder


def _source_part(model: str, stage: str) -> Path:
    """The checkpoint of ``stage`` in the model ``model`` (``--source STAGE=MODEL``)."""
    from ..stage import stage_checkpoint

    if stage == "coref":
        from ..coref.stage import coref_checkpoint

        return coref_checkpoint(model)
    return stage_checkpoint(model, stage)


def _source_info(stage: str, model: str) -> dict:
    """Facts of a stage taken from a trained model (``sources``): those of its training folder, else its
    checkpoint's and its card's (updates, minutes and budget as the source's card gives them)."""
    from ...core.checkpoint import load_checkpoint
    from ...core.registry import find_model, is_model_folder, model_card

    where = find_model(model)
    if where.is_dir() and not is_model_folder(where):
        return {**_stage_info(where, True), "source": model}
    ck = load_checkpoint(_source_part(model, stage))
    card = model_card(where) if where.is_dir() else {}
    return {"folder": None, "source": model, "step": (card.get("steps") or {}).get(stage, ck.get("step", 0)),
            "minutes": (card.get("training_minutes") or {}).get(stage, 0.0), "budget": f"from {model}",
            "max_minutes": (card.get("budget_minutes") or {}).get(stage, 0.0), "reused": True,
            **_checkpoint_facts(ck)}


def _checkpoint_facts(best: dict) -> dict:
    """Best dev value, its step, parameters, and for a segmenter its tokenisation facts."""
    params = sum(v.numel() for v in best["model"].values())
    task = best.get("task") or {}
    out = {"best_dev_internal": best.get("best"), "best_step": best.get("step"), "parameters": params}
    if task.get("kind") == "segmenter":
        from ..tokenize.config import SegmenterConfig

        exp = task.get("mwt_expander")
        out.update(spaces_in_tokens=SegmenterConfig.from_dict(best["model_config"]).spaces_in_tokens,
                   mwt_rules=task.get("mwt_rules", "en"), mwt_lexicon=len(task.get("mwt", {})),
                   expander_parameters=sum(v.numel() for v in exp["state"].values()) if exp else 0)
    return out
