"""The g2gt translation model en_de_multi30k: English -> German translation of short image captions (Multi30k), a 7.1M-parameter G2GTransformer.

Installed as a package, it is found by name: ``Translator.load("en_de_multi30k")``, ``g2gt translate --model en_de_multi30k``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
