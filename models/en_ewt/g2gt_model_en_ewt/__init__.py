"""The g2gt model en_ewt: English (UD English EWT only): tokenizer, sentence splitter, multiword tokens, UPOS, XPOS, UFeats, lemmas, dependency trees, enhanced UD; CC BY-SA 4.0, usable commercially.

Installed as a package, it is found by name: ``g2gt.load("en_ewt")``, ``g2gt parse --model en_ewt``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
