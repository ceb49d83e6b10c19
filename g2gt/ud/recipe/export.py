"""Pack trained stages into one small model folder (the layout of :mod:`g2gt.core.registry`), and the README of its
package.

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

__all__ = ["export_model", "stage_commands", "source_commands", "package_pipeline", "package_readme", "MAX_MODEL_MB"]

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
    records the commands that trained it (:func:`g2gt.core.run_folder.run_commands`; several, e.g. a run and its
    resumption, are one line each), each warm start preceded by the commands that made its source
    (:func:`_warm_lineage`); stages without a record (a checkpoint file, an older run) are left out."""
    from ...core.run_folder import run_commands

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
    from ...core.run_folder import run_commands
    from ...core.registry import find_model, is_model_folder, model_card

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
    from ...core.run_folder import stored_train_config

    tc = stored_train_config(folder)
    source = getattr(tc, "init_from", None)
    if not source:
        return []
    earlier = source_commands(source, stage)
    note = f"# warm start from {source}" + ("; it was made by:" if earlier else " (its commands are not known)")
    return [note, *earlier]


def _commands(commands: dict) -> list[str]:
    """README lines for the card's ``commands`` (``{what: command lines}``): one bash block, each command once,
    under a comment naming what it made (stages trained by the same command share it)."""
    made: dict[str, list[str]] = {}
    for what, text in commands.items():
        if isinstance(text, str) and text.strip():
            made.setdefault(text.strip(), []).append(what)
    if not made:
        return []
    lines = ["Trained with (the commands that made each part; model.json lists them too):", "",
             "```bash"]
    for text, whats in made.items():
        lines += [f"# {', '.join(whats)}", *text.splitlines()]
    return lines + ["```", ""]


def package_readme(name: str, card: dict) -> str:
    """The ``README.md`` of the installable package of pipeline ``name`` (:func:`g2gt.core.package.build_package`):
    how to install and use it, its licence, its dev and everyday scores and the commands that made it, from its
    ``card``."""
    lines = [f"# g2gt model `{name}`", "", card.get("description", ""), "",
             "```bash", f"pip install models/{name}        # from the g2gt repository; no download needed",
             f"g2gt parse --model {name} --text \"...\"", "```", "",
             f"In Python: `import g2gt; nlp = g2gt.load(\"{name}\")`. `g2gt models` lists installed models.", ""]
    if card.get("training_data"):
        lines += [f"Trained on {card['training_data']}.", ""]
    if card.get("license"):
        lines += [f"Licence of the training data: {card['license']}", ""]
    scores = card.get("dev_scores_official_scorer") or {}
    if scores:
        metrics = list(next(iter(scores.values())))
        lines += ["Dev scores (official CoNLL 2018 scorer):", "",
                  "| input | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
        lines += [f"| {k} | " + " | ".join(f"{v.get(m, 0):.2f}" for m in metrics) + " |" for k, v in scores.items()]
        lines.append("")
    everyday = card.get("everyday_scores_official_scorer") or {}
    rows = {k: v for k, v in everyday.items() if isinstance(v, dict)}
    if rows:
        metrics = [m for m in ("Tokens", "Sentences", "UPOS", "UAS", "LAS") if m in next(iter(rows.values()))]
        lines += [f"Everyday input ({everyday.get('set', 'short texts, each parsed alone')}; "
                  "`python benchmarks/everyday.py`):", "",
                  "| input | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
        lines += [f"| {k} | " + " | ".join(f"{v[m]:.2f}" for m in metrics) + " |" for k, v in rows.items()]
        lines.append("")
    lines += _commands(card.get("commands") or {})
    lines += [f"The model card is `g2gt_model_{name}/model/model.json`.", ""]
    return "\n".join(lines)


def package_pipeline(model_dir: str | os.PathLike, name: str, out: str | os.PathLike, version: str | None = None,
                     max_mb: float | None = None):
    """Write the installable package of the pipeline in ``model_dir`` (``g2gt package``): the folder layout of
    :func:`g2gt.core.package.build_package`, with the README of :func:`package_readme`.

    Args:
        model_dir: a pipeline's model folder (``parser.pt``, ``model.json`` ...).
        name: the model's name (``fr_sequoia``).
        out: the package folder to write (``models/NAME``).
        version: the package version (default: this library's).
        max_mb: refuse larger models (default: the package limit).

    Returns:
        ``out`` as a ``Path``.
    """
    from ...core.package import MAX_PACKAGE_MB, build_package
    from ...core.registry import model_card

    return build_package(model_dir, name, out, readme=package_readme(name, model_card(model_dir)), version=version,
                         max_mb=MAX_PACKAGE_MB if max_mb is None else max_mb)
