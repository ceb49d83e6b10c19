"""The g2gt model tr_imst: tr_imst: tokenizer, sentence splitter, multiword tokens, tagger, lemmatizer (edit scripts + character model), parser (trained on tr_imst-ud-train.conllu.gz).

Installed as a package, it is found by name: ``g2gt.load("tr_imst")``, ``g2gt parse --model tr_imst``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
