"""The g2gt model en_combined_sm: English, small and fast: a 3-layer student parser without the graph channel (no refinement), distilled from en_combined and en_ewt (the earlier 2-layer student grown by one layer), with a 2-layer tokenizer and sentence splitter trained on EWT (no enhanced UD).

Installed as a package, it is found by name: ``g2gt.load("en_combined_sm")``, ``g2gt parse --model en_combined_sm``."""

from pathlib import Path

__all__ = ["MODEL_DIR", "model_path"]

MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The model folder (the entry point of group g2gt.models)."""
    return MODEL_DIR
