"""The g2gt model ug_udt: ug_udt: tokenizer, sentence splitter, multiword tokens, tagger, lemmatizer, parser (trained on ug_udt-ud-train.conllu.gz).

Installed as a package, it is found by name: ``g2gt.load("ug_udt")``, ``g2gt parse --model ug_udt``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
