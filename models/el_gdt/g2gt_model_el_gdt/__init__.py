"""The g2gt model el_gdt: el_gdt: tokenizer, sentence splitter, multiword tokens, tagger, lemmatizer, parser (trained on el_gdt-ud-train.conllu.gz).

Installed as a package, it is found by name: ``g2gt.load("el_gdt")``, ``g2gt parse --model el_gdt``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
