"""Pack trained stages into one small model folder (the layout of :mod:`g2gt.ud.models`).

Training folders hold optimizer state and float32 weights; a shipped model needs neither.
:func:`export_model` loads each stage from its training folder (or checkpoint), puts them in a
:class:`g2gt.ud.pipeline.Pipeline` and :meth:`~g2gt.ud.pipeline.Pipeline.save` writes it: each stage keeps what its
``load`` reads -- the weights, ``model_config``, ``task`` (vocabularies, lexicons) and ``train_config`` (the
record of how it was trained) -- with floating-point weights stored as float16 (half the bytes; ``load``
casts them back, so only the rounding of each weight to float16 changes). The card's ``commands`` gets, for
each stage given as a training folder, the commands that trained it (:func:`stage_commands`), unless the
card already names them. A run warm-started from a model (``g2gt train parser --init-from MODEL``) is listed
after the commands that made its source (its card's, :func:`source_commands`), so the card shows the whole
chain.

>>> export_model("g2gt/models/en_combined", parser="runs/en_combined", segmenter="runs/segmenter",
...              enhancer="runs/enhanced", card={"name": "en_combined"})             # doctest: +SKIP
"""

from __future__ import annotations

import os

__all__ = ["export_model", "stage_commands", "source_commands", "MAX_MODEL_MB"]

MAX_MODEL_MB = 25.0  # the package-data budget of one shipped model (all parts together)


def export_model(out: str | os.PathLike, parser: str | os.PathLike, segmenter: str | os.PathLike | None = None,
                 enhancer: str | os.PathLike | None = None, card: dict | None = None,
                 storage_dtype: str = "float16", max_mb: float | None = MAX_MODEL_MB) -> dict:
    """Export a parser (and optionally a segmenter and an enhancer) into model folder ``out``.

    ``card``: JSON-serialisable facts written to ``out/model.json`` together with the parts' sizes.
    ``max_mb``: refuse (``ValueError``, nothing left in ``out``) when the parts together are larger.
    Returns the card as written."""
    from ..enhance import Enhancer
    from ..parse import Parser
    from ..pipeline import Pipeline
    from ..tokenize import Segmenter

    nlp = Pipeline(Segmenter.load(segmenter, dtype=None) if segmenter is not None else None,
                   Parser.load(parser, dtype=None),
                   Enhancer.load(enhancer, dtype=None) if enhancer is not None else None)
    found = stage_commands({"segmenter": segmenter, "parser": parser, "enhancer": enhancer})
    card = dict(card or {})
    if found:
        card["commands"] = {**found, **(card.get("commands") or {})}
    nlp.save(out, storage_dtype, card, max_mb)
    return nlp.card


def stage_commands(folders: dict[str, str | os.PathLike | None]) -> dict[str, str]:
    """``{stage: its commands}`` for the stages of ``folders`` (``{stage: training folder}``) whose folder
    records the commands that trained it (:func:`g2gt.ud.recipe.runs.run_commands`; several, e.g. a run and its
    resumption, are one line each), each warm start preceded by the commands that made its source
    (:func:`_warm_lineage`); stages without a record (a checkpoint file, an older run) are left out."""
    from ..recipe.runs import run_commands

    out = {}
    for stage, folder in folders.items():
        if folder is not None and os.path.isdir(folder):
            commands = run_commands(folder)
            if commands:
                earlier = _warm_lineage(folder, stage)
                out[stage] = "\n".join([*earlier, "# then this run:", *commands] if earlier else commands)
    return out


def source_commands(source: str | os.PathLike, stage: str) -> list[str]:
    """The commands that made ``stage`` of ``source``: a training folder's recorded ones, or a model folder's
    card entries for the stage (keys ``stage`` or ``"stage (...)"``), else the card's pipeline command(s) that
    trained every stage; ``[]`` when nothing is known."""
    from ..recipe.runs import run_commands
    from . import find_model, is_model_folder, model_card

    try:
        where = find_model(source)
    except FileNotFoundError:
        return []
    if not is_model_folder(where):
        return run_commands(where) if where.is_dir() else []
    commands = model_card(where).get("commands") or {}
    picked = [v for k, v in commands.items() if k == stage or k.startswith(f"{stage} ")]
    picked = picked or [v for k, v in commands.items() if k == "pipeline" or k.startswith("pipeline ")]
    lines: list[str] = []
    for text in picked:
        lines += [line for line in str(text).splitlines() if line.strip() and line not in lines]
    return lines


def _warm_lineage(folder: str | os.PathLike, stage: str) -> list[str]:
    """For a run warm-started from a model (``init_from`` in its ``last.pt``): the commands that made the
    source's ``stage`` (:func:`source_commands`) under a comment naming the source; else ``[]``."""
    from ..recipe.runs import stored_train_config

    tc = stored_train_config(folder)
    source = getattr(tc, "init_from", None)
    if not source:
        return []
    earlier = source_commands(source, stage)
    note = f"# warm start from {source}" + ("; it was made by:" if earlier else " (its commands are not known)")
    return [note, *earlier]
