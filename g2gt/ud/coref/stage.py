"""The ``coref`` pipeline stage: registered after ``parse`` for model folders that hold ``coref.pt``.

Importing this module registers the stage (:func:`g2gt.ud.stage.register_stage`); :class:`g2gt.ud.pipeline.Pipeline`
imports it, so ``g2gt.load(folder)`` of a folder with ``coref.pt`` has the stage, loaded on first use. It runs
on request only, like ``enhance``: ``nlp(text, coref=True)``. :func:`add_to_model_folder` writes a trained
coreference model into a model folder (``coref.pt`` and its entry in ``model.json``);
:func:`coref_checkpoint` finds the coreference checkpoint of a model's name, a model or training folder or a file.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..stage import LazyStage, StageContext, register_stage

__all__ = ["FILE_NAME", "make_coref_stage", "add_to_model_folder", "coref_checkpoint"]

FILE_NAME = "coref.pt"


@register_stage("coref", after="parse", cls_name="Coreferencer", file=FILE_NAME)
def make_coref_stage(context: StageContext, max_words: int | None = None):
    """The stage of a model folder with ``coref.pt`` (loaded on first use), else None (no such stage)."""
    if context.folder is None or not (Path(context.folder) / FILE_NAME).is_file():
        return None
    file = Path(context.folder) / FILE_NAME

    def load():
        from .resolver import Coreferencer

        stage = Coreferencer.load(file, context.device, "float32")
        if max_words is not None:
            stage.max_words = int(max_words)
        return stage

    return LazyStage(load, "Coreferencer", file)


def add_to_model_folder(source: str | os.PathLike, folder: str | os.PathLike, storage_dtype: str = "float16",
                        card: dict | None = None, tune_on: list | None = None) -> Path:
    """Write the coreference model ``source`` (a training folder, a checkpoint or a ``coref.pt``) into the model
    folder ``folder`` as ``coref.pt`` and record it in ``model.json`` (``parts.coref``, plus ``card`` entries,
    e.g. the dev scores and the training data's licence). ``tune_on``: annotated dev sentences on which the
    link threshold is chosen first (:meth:`Coreferencer.tune_threshold`; recorded in the card)."""
    from ...core.registry import write_card
    from .resolver import Coreferencer

    out = Path(folder)
    if not (out / "model.json").is_file():
        raise FileNotFoundError(f"{out}: not a model folder (no model.json); export the pipeline first")
    from ...core.registry import model_card

    stage = Coreferencer.load(source)
    extra = {}
    if tune_on is not None:
        tuned = stage.tune_threshold(tune_on)
        extra["coref_threshold"] = {"chosen": stage.threshold, "dev_conll": tuned}
    dst = stage.save(out / FILE_NAME, storage_dtype)
    parts = dict(model_card(out).get("parts", {}))
    parts["coref"] = {"file": FILE_NAME, "bytes": dst.stat().st_size}
    write_card(out, {"parts": parts, **extra, **(card or {})})
    return dst


def coref_checkpoint(name_or_path: str | os.PathLike) -> Path:
    """:func:`g2gt.ud.coref.resolver.coref_checkpoint`: the coreference checkpoint of a model's name, a model or
    training folder or a file."""
    from .resolver import coref_checkpoint as find

    return find(name_or_path)
