"""The g2gt model vi_vtb: vi_vtb: tokenizer, sentence splitter, multiword tokens, tagger, lemmatizer, parser (trained on vi_vtb-ud-train.conllu.gz).

Installed as a package, it is found by name: ``g2gt.load("vi_vtb")``, ``g2gt parse --model vi_vtb``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
