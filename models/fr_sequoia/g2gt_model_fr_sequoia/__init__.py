"""The g2gt model fr_sequoia: fr_sequoia: tokenizer, sentence splitter, multiword tokens, tagger, lemmatizer, parser (trained on fr_sequoia-ud-train.conllu.gz).

Installed as a package, it is found by name: ``g2gt.load("fr_sequoia")``, ``g2gt parse --model fr_sequoia``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
