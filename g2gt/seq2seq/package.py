"""Translation models by name: model folders, installed model packages, and writing such a package.

A translation **model folder** holds ``translator.pt`` (one checkpoint: float16 weights, tokenizers,
settings, the decoding defaults of :class:`~g2gt.seq2seq.config.TranslateConfig`; it loads with
``weights_only=True``) and ``model.json`` (its card: data, licence, the command that trained it, its
scores). :func:`build_translation_package` writes the folder inside an installable Python package, laid out
as the UD language packages are (``models/NAME/``)::

    models/NAME/
      pyproject.toml            [project] g2gt-model-NAME, entry point NAME in group "g2gt.models"
      g2gt_model_build.py       the build backend: standard library only, so pip installs offline
      README.md                 the card for people: what it translates, its licence, BLEU, how it was made
      g2gt_model_NAME/
        __init__.py             model_path() -> the folder below
        model/                  translator.pt, model.json

After ``pip install models/NAME``, :func:`find_translator` finds it by name through the entry point, so
``Translator.load("NAME")`` and ``g2gt translate --model NAME`` use it. This module imports no torch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "TRANSLATOR_FILE", "CARD_FILE", "MAX_PACKAGE_MB", "find_translator",
           "installed_translators", "is_translator_folder", "build_translation_package", "training_card"]

#: the entry-point group of every g2gt model package (UD pipelines and translators alike)
from ..core.packages import ENTRY_POINT_GROUP  # noqa: E402  (the one group of every model package)
TRANSLATOR_FILE = "translator.pt"
CARD_FILE = "model.json"
MAX_PACKAGE_MB = 25.0
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: the PEP 517 backend every g2gt model package carries (a file of the library, copied, never imported here)
_BACKEND = Path(__file__).resolve().parents[1] / "ud" / "models" / "wheel_backend.py"
_BACKEND_MODULE = "g2gt_model_build"


def is_translator_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a translation model folder (a folder with ``translator.pt``)."""
    p = Path(path)
    return p.is_dir() and (p / TRANSLATOR_FILE).is_file()


def installed_translators() -> dict[str, Path]:
    """Name -> model folder of the installed model packages that hold a translator (entry points of group
    :data:`ENTRY_POINT_GROUP`; UD pipeline packages are not listed). A package whose entry point fails to
    load is skipped with a warning."""
    from ..core.packages import entry_point_folders

    out: dict[str, Path] = {}
    for name, _, folder in entry_point_folders(ENTRY_POINT_GROUP):
        if is_translator_folder(folder):
            out.setdefault(name, folder)
    return out


def find_translator(name_or_path: str | os.PathLike) -> Path:
    """The checkpoint file a :class:`~g2gt.seq2seq.Translator` loads for ``name_or_path``:

    * a file: itself;
    * a model folder: its ``translator.pt``; a training folder (``g2gt train seq2seq --out``): ``best.pt``,
      else ``last.pt``;
    * a name: the ``translator.pt`` of the installed model package of that name.

    Raises ``FileNotFoundError`` saying what was looked for and naming the installed translators."""
    from ..core.checkpoint import resolve_checkpoint

    p = Path(name_or_path)
    if p.exists():
        return p / TRANSLATOR_FILE if is_translator_folder(p) else resolve_checkpoint(p)
    name = str(name_or_path)
    installed = installed_translators() if _NAME.match(name) else {}
    if name in installed:
        return installed[name] / TRANSLATOR_FILE
    known = ", ".join(sorted(installed_translators())) or "none in this environment"
    raise FileNotFoundError(f"{name}: no such file or folder, and not an installed translation model (installed: "
                            f"{known}); give a training folder of 'g2gt train seq2seq', a checkpoint file, a model "
                            "folder, or install a model package (pip install models/NAME)")


# ---------------------------------------------------------------------------- writing a package
def training_card(folder: str | os.PathLike, data_name: str = "dev") -> dict:
    """Card facts read from a training folder of ``g2gt train seq2seq``: the model's size and recipe
    (``config.json``) and the final beam-search scores on the dev set (``final.json``), under
    ``scores[data_name]``. Missing files give fewer facts, never an error."""
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


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _pyproject(name: str, version: str, description: str, library_version: str) -> str:
    major_minor = ".".join(library_version.split(".")[:2])
    return ("# an installable g2gt translation model (pip install this folder; works offline)\n"
            "[build-system]\n"
            "requires = []\n"
            f'build-backend = "{_BACKEND_MODULE}"\n'
            'backend-path = ["."]\n\n'
            "[project]\n"
            f"name = {_toml_str('g2gt-model-' + name.replace('_', '-'))}\n"
            f"version = {_toml_str(version)}\n"
            f"description = {_toml_str(description)}\n"
            'requires-python = ">=3.10"\n'
            f'dependencies = ["g2gt>={major_minor}"]\n\n'
            f'[project.entry-points."{ENTRY_POINT_GROUP}"]\n'
            f'{name} = "g2gt_model_{name}:model_path"\n')


def _init_py(name: str, description: str) -> str:
    return (f'"""The g2gt translation model {name}: {description}.\n\n'
            f'Installed as a package, it is found by name: ``Translator.load("{name}")``, '
            f'``g2gt translate --model {name}``."""\n\n'
            "from pathlib import Path\n\n"
            '__all__ = ["MODEL_DIR", "model_path"]\n\n'
            'MODEL_DIR = Path(__file__).resolve().parent / "model"\n\n\n'
            "def model_path() -> Path:\n"
            '    """The model folder (the entry point of group g2gt.models)."""\n'
            "    return MODEL_DIR\n")


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
                              version: str | None = None, max_mb: float = MAX_PACKAGE_MB) -> Path:
    """Write the package folder ``out`` for ``translator`` (a :class:`~g2gt.seq2seq.Translator`): its weights
    stored as float16 in ``translator.pt``, ``card`` (merged over the translator's own card) as ``model.json``
    and ``README.md``, the ``pyproject.toml`` and build backend (module docstring). Returns ``out``.

    Raises ``ValueError`` for a bad name or a model over ``max_mb`` (then nothing is left in ``out``)."""
    from .._version import __version__

    if not _NAME.match(name or ""):
        raise ValueError(f"name {name!r}: a model name is lowercase letters, digits and _, starting with a letter "
                         "(e.g. en_de_multi30k)")
    out = Path(out)
    card = {**translator.card, **(card or {}), "name": name, "kind": "translator"}
    description = card.setdefault("description", f"g2gt translation model {name}")
    pkg = out / f"g2gt_model_{name}"
    folder = pkg / "model"
    if pkg.exists():
        shutil.rmtree(pkg)  # a package folder is written whole: no stale files
    folder.mkdir(parents=True)
    translator.save(folder / TRANSLATOR_FILE, storage_dtype="float16")
    size_mb = (folder / TRANSLATOR_FILE).stat().st_size / 2**20
    if size_mb > max_mb:
        shutil.rmtree(pkg)
        raise ValueError(f"{name}: the model takes {size_mb:.1f} MB, over the {max_mb:g} MB limit of a model package "
                         "(train a smaller model: a smaller --bpe-vocab, --d-model or fewer --layers)")
    card["size_mb"] = round(size_mb, 2)
    (folder / CARD_FILE).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (pkg / "__init__.py").write_text(_init_py(name, description), encoding="utf-8")
    (out / "pyproject.toml").write_text(_pyproject(name, version or __version__, description, __version__),
                                        encoding="utf-8")
    shutil.copyfile(_BACKEND, out / f"{_BACKEND_MODULE}.py")
    (out / "README.md").write_text(_readme(name, card), encoding="utf-8")
    return out
