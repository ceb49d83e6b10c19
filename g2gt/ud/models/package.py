"""Model folders as installable Python packages, one per language model (as spaCy ships its models).

:func:`build_package` (``g2gt package MODEL_DIR --name NAME -o models/NAME``) writes::

    models/NAME/
      pyproject.toml              [project] g2gt-model-NAME, entry point NAME in group "g2gt.models"
      g2gt_model_build.py         the build backend: standard library only, so pip installs offline
      README.md                   what the model is, its dev scores, how to install it
      g2gt_model_NAME/
        __init__.py               model_path() -> the folder below
        model/                    the model folder: parser.pt, segmenter.pt [, enhancer.pt], model.json

``pip install models/NAME`` then installs it; :func:`g2gt.ud.models.installed_models` finds it through the
entry point, so ``g2gt.load("NAME")`` and ``g2gt parse --model NAME`` use it and ``g2gt models`` lists it.
A package holds at most :data:`MAX_PACKAGE_MB` of model files (refused otherwise: train a smaller model).
This module imports no torch.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from . import ENTRY_POINT_GROUP, PART_FILES

__all__ = ["MAX_PACKAGE_MB", "BACKEND_MODULE", "build_package", "package_name"]

MAX_PACKAGE_MB = 12.0
BACKEND_MODULE = "g2gt_model_build"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def package_name(name: str) -> str:
    """The import name of model ``name``'s package: ``g2gt_model_NAME``."""
    return f"g2gt_model_{name}"


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _pyproject(name: str, version: str, description: str, library_version: str) -> str:
    dist = f"g2gt-model-{name.replace('_', '-')}"
    major_minor = ".".join(library_version.split(".")[:2])
    return (
        "# written by g2gt package: an installable g2gt model (pip install this folder; works offline)\n"
        "[build-system]\n"
        "requires = []\n"
        f'build-backend = "{BACKEND_MODULE}"\n'
        'backend-path = ["."]\n\n'
        "[project]\n"
        f"name = {_toml_str(dist)}\n"
        f"version = {_toml_str(version)}\n"
        f"description = {_toml_str(description)}\n"
        'requires-python = ">=3.10"\n'
        f'dependencies = ["g2gt>={major_minor}"]\n\n'
        f'[project.entry-points."{ENTRY_POINT_GROUP}"]\n'
        f'{name} = "{package_name(name)}:model_path"\n')


def _init_py(name: str, description: str) -> str:
    return (
        f'"""The g2gt model {name}: {description}.\n\n'
        f'Installed as a package, it is found by name: ``g2gt.load("{name}")``, ``g2gt parse --model {name}``."""\n\n'
        "from pathlib import Path\n\n"
        '__all__ = ["MODEL_DIR", "model_path"]\n\n'
        'MODEL_DIR = Path(__file__).resolve().parent / "model"\n\n\n'
        "def model_path() -> Path:\n"
        '    """The model folder (the entry point of group g2gt.models)."""\n'
        "    return MODEL_DIR\n")


def _commands(commands: dict) -> list[str]:
    """README lines for the card's ``commands`` (``{what: command lines}``): one bash block, each command once,
    under a comment naming what it made (stages trained by the same command share it)."""
    made: dict[str, list[str]] = {}
    for what, text in commands.items():
        if isinstance(text, str) and text.strip():
            made.setdefault(text.strip(), []).append(what)
    if not made:
        return []
    lines = ["Trained with (the commands that made each part; model.json lists them too):", "",
             "```bash"]
    for text, whats in made.items():
        lines += [f"# {', '.join(whats)}", *text.splitlines()]
    return lines + ["```", ""]


def _readme(name: str, card: dict) -> str:
    lines = [f"# g2gt model `{name}`", "", card.get("description", ""), "",
             "```bash", f"pip install models/{name}        # from the g2gt repository; no download needed",
             f"g2gt parse --model {name} --text \"...\"", "```", "",
             f"In Python: `import g2gt; nlp = g2gt.load(\"{name}\")`. `g2gt models` lists installed models.", ""]
    if card.get("training_data"):
        lines += [f"Trained on {card['training_data']}.", ""]
    if card.get("license"):
        lines += [f"Licence of the training data: {card['license']}", ""]
    scores = card.get("dev_scores_official_scorer") or {}
    if scores:
        metrics = list(next(iter(scores.values())))
        lines += ["Dev scores (official CoNLL 2018 scorer):", "",
                  "| input | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
        lines += [f"| {k} | " + " | ".join(f"{v.get(m, 0):.2f}" for m in metrics) + " |" for k, v in scores.items()]
        lines.append("")
    everyday = card.get("everyday_scores_official_scorer") or {}
    rows = {k: v for k, v in everyday.items() if isinstance(v, dict)}
    if rows:
        metrics = [m for m in ("Tokens", "Sentences", "UPOS", "UAS", "LAS") if m in next(iter(rows.values()))]
        lines += [f"Everyday input ({everyday.get('set', 'short texts, each parsed alone')}; "
                  "`python benchmarks/everyday.py`):", "",
                  "| input | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
        lines += [f"| {k} | " + " | ".join(f"{v[m]:.2f}" for m in metrics) + " |" for k, v in rows.items()]
        lines.append("")
    lines += _commands(card.get("commands") or {})
    lines += [f"The model card is `g2gt_model_{name}/model/model.json`.", ""]
    return "\n".join(lines)


def build_package(model_dir: str | Path, name: str, out: str | Path, version: str | None = None,
                  max_mb: float = MAX_PACKAGE_MB) -> Path:
    """Write the package folder ``out`` for model folder ``model_dir`` (module docstring); returns ``out``.

    Raises ``ValueError`` for a bad name or a model over ``max_mb`` (nothing written), and
    ``FileNotFoundError`` when ``model_dir`` has no ``parser.pt``."""
    from ..._version import __version__

    if not _NAME.match(name or ""):
        raise ValueError(f"--name {name!r}: a model name is lowercase letters, digits and _, starting with a letter "
                         "(e.g. fr_sequoia)")
    src = Path(model_dir)
    if not (src / PART_FILES["parser"]).is_file():
        raise FileNotFoundError(f"{src}: not a model folder (no {PART_FILES['parser']}; 'g2gt train pipeline' writes "
                                "one in OUT/model)")
    files = [p for p in sorted(src.iterdir()) if p.is_file() and (p.suffix == ".pt" or p.name == "model.json")]
    total_mb = sum(p.stat().st_size for p in files) / 2**20
    if total_mb > max_mb:
        raise ValueError(f"{src}: the model takes {total_mb:.1f} MB, over the {max_mb:g} MB limit of a model package "
                         "(train a smaller model, e.g. fewer layers or a higher --min-freq)")
    card = json.loads((src / "model.json").read_text(encoding="utf-8")) if (src / "model.json").is_file() else {}
    description = card.get("description") or f"g2gt model {name}"
    out = Path(out)
    pkg = out / package_name(name)
    if pkg.exists():
        shutil.rmtree(pkg)  # a package folder is written whole: no stale stage files
    (pkg / "model").mkdir(parents=True)
    for p in files:
        shutil.copy2(p, pkg / "model" / p.name)
    (pkg / "__init__.py").write_text(_init_py(name, description), encoding="utf-8")
    (out / "pyproject.toml").write_text(_pyproject(name, version or __version__, description, __version__),
                                        encoding="utf-8")
    shutil.copyfile(Path(__file__).with_name("wheel_backend.py"), out / f"{BACKEND_MODULE}.py")
    (out / "README.md").write_text(_readme(name, card), encoding="utf-8")
    return out
