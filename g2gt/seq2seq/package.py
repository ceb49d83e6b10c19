"""Translation models: the checkpoint a name or path stands for, the card of a training folder, and a translator
as an installable package.

A translation **model folder** holds ``translator.pt`` (one checkpoint: float16 weights, tokenizers,
settings, the decoding defaults of :class:`~g2gt.seq2seq.config.TranslateConfig`; it loads with
``weights_only=True``) and ``model.json`` (its card: data, licence, the command that trained it, its
scores). Names are found by the one model registry (:mod:`g2gt.core.registry`, kind ``"translator"``);
:func:`build_translation_package` writes the folder inside an installable Python package
(:func:`g2gt.core.package.build_package`, the layout every g2gt model package has). This module imports no torch.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["TRANSLATOR_FILE", "CARD_FILE", "find_translator", "build_translation_package", "training_card"]

TRANSLATOR_FILE = "translator.pt"
CARD_FILE = "model.json"


def find_translator(name_or_path: str | os.PathLike) -> Path:
    """The checkpoint file a :class:`~g2gt.seq2seq.Translator` loads for ``name_or_path``:

    * a file: itself;
    * a model folder: its ``translator.pt``; a training folder (``g2gt train seq2seq --out``): ``best.pt``,
      else ``last.pt``;
    * a translator's name (shipped or installed, :func:`g2gt.core.registry.find_model`): its ``translator.pt``.

    Args:
        name_or_path: a file, a model or training folder, or a translator's name.

    Returns:
        The checkpoint file.

    Raises:
        FileNotFoundError: nothing found, saying what was looked for and naming the available translators.
    """
    from ..core.checkpoint import resolve_checkpoint
    from ..core.registry import find_model, is_model_folder

    where = find_model(name_or_path, kind="translator")
    return where / TRANSLATOR_FILE if is_model_folder(where, "translator") else resolve_checkpoint(where)


# ---------------------------------------------------------------------------- writing a package
def training_card(folder: str | os.PathLike, data_name: str = "dev") -> dict:
    """Card facts read from a training folder of ``g2gt train seq2seq``.

    The model's size and recipe (``config.json``) and the final beam-search scores on the dev set (``final.json``),
    under ``scores[data_name]``. Missing files give fewer facts, never an error.

    Args:
        folder: the training folder.
        data_name: the key of the dev scores under ``scores``.

    Returns:
        The card facts, as a dict.
    """
    folder = Path(folder)

    def read(name: str) -> dict:
        f = folder / name
        return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}

    info, final = read("config.json"), read("final.json")
    card: dict = {}
    # the recipe sits under "task" since training runs through g2gt.core.run; at the top level before
    recipe = (info.get("task") or {}).get("recipe") or info.get("recipe") or {}
    mc, data = info.get("model_config") or {}, info.get("data") or {}
    best = info.get("best_dev")
    if isinstance(best, (int, float)):
        best = {(info.get("train_config") or {}).get("metric", "dev_loss"): best}
    if mc:
        card["model"] = (f"G2GTransformer encoder-decoder, {info.get('parameters', 0) / 1e6:.1f}M parameters: "
                         f"d_model {mc.get('d_model')}, {mc.get('num_encoder_layers')}+{mc.get('num_decoder_layers')} "
                         f"layers, {mc.get('num_heads')} heads, FFN {mc.get('ffn_dim')}, relative-position chain labels "
                         f"clipped at {mc.get('decoder_max_distance')}, joint byte-level BPE of "
                         f"{mc.get('src_vocab_size')} subwords")
        card["recipe"] = recipe
    if data:
        card["training"] = {"train_pairs": data.get("train_pairs"), "dev_pairs": data.get("dev_pairs"),
                            "steps": info.get("steps"),
                            "train_seconds": info.get("train_seconds", info.get("train_seconds_this_call")),
                            "best_dev": best}
    if final:
        keep = ("bleu", "chrf", "bleu_lowercase", "chrf_lowercase", "beam", "length_penalty", "sentences",
                "bleu_signature", "chrf_signature", "bleu_detail")
        card["scores"] = {data_name: {k: final[k] for k in keep if k in final}}
    return card


def _readme(name: str, card: dict) -> str:
    lines = [f"# g2gt translation model `{name}`", "", card.get("description", ""), "",
             "```bash", f"pip install models/{name}        # from the g2gt repository; no download needed",
             f"echo 'A man sleeps .' | g2gt translate --model {name}", "```", "",
             "In Python:", "", "```python", "from g2gt.seq2seq import Translator", "",
             f'translator = Translator.load("{name}")', 'translator(["A man sleeps ."])', "```", ""]
    if card.get("license"):
        lines += ["## Licence and terms of use", "", card["license"], ""]
    if card.get("training_data"):
        lines += ["## Training data", "", card["training_data"], ""]
    scores = card.get("scores") or {}
    if scores:
        lines += ["## Scores", "", "| data | beam | BLEU | chrF |", "|---|---:|---:|---:|"]
        lines += [f"| {k} | {v.get('beam', '')} | {v.get('bleu', 0):.2f} | {v.get('chrf', 0):.2f} |"
                  for k, v in scores.items()]
        sig = next((v.get("bleu_signature") for v in scores.values() if v.get("bleu_signature")), None)
        lines += ["", f"sacreBLEU signature: `{sig}`" if sig else "", ""]
    if card.get("model"):
        lines += ["## Model", "", card["model"], ""]
    tr = card.get("training") or {}
    if tr.get("steps"):
        minutes = f" in {tr['train_seconds'] / 60:.0f} minutes" if tr.get("train_seconds") else ""
        best = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in (tr.get("best_dev") or {}).items()
                         if isinstance(v, (int, float)))
        lines += [f"Trained for {tr['steps']:,} updates{minutes}" + (f"; best.pt had the best {best}" if best else "")
                  + ".", ""]
    if card.get("commands"):
        lines += ["## How it was made", "", "```bash", *card["commands"], "```", ""]
    lines += [f"The model card is `g2gt_model_{name}/model/{CARD_FILE}`.", ""]
    return "\n".join(lines)


def build_translation_package(translator, name: str, out: str | os.PathLike, card: dict | None = None,
                              version: str | None = None, max_mb: float | None = None) -> Path:
    """Write the package folder ``out`` for ``translator`` (a :class:`~g2gt.seq2seq.Translator`).

    Its weights are stored as float16 in ``translator.pt``, ``card`` (merged over the translator's own card) as
    ``model.json`` and ``README.md``, through :func:`g2gt.core.package.build_package`. Returns ``out``.

    Raises ``ValueError`` for a bad name or a model over ``max_mb`` (default: the package limit); then nothing
    is left in ``out``.

    Args:
        translator: the :class:`~g2gt.seq2seq.Translator`.
        name: the package's model name.
        out: the folder to write.
        card: card facts over the translator's own (``None``: none).
        version: the package version (``None``: this library's).
        max_mb: size limit in MB (``None``: the package limit).

    Returns:
        ``out``.

    Raises:
        ValueError: a bad name or a model over ``max_mb``; nothing is left in ``out``.
    """
    from ..core.package import MAX_PACKAGE_MB, build_package

    card = {**translator.card, **(card or {}), "name": name, "kind": "translator"}
    card.setdefault("description", f"g2gt translation model {name}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        translator.save(folder / TRANSLATOR_FILE, storage_dtype="float16")
        card["size_mb"] = round((folder / TRANSLATOR_FILE).stat().st_size / 2**20, 2)
        (folder / CARD_FILE).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return build_package(folder, name, out, readme=_readme(name, card), version=version,
                             max_mb=MAX_PACKAGE_MB if max_mb is None else max_mb)
