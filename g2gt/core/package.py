"""Model folders as installable Python packages (as spaCy ships its models), for every model kind.

:func:`build_package` (``g2gt package MODEL_DIR --name NAME -o models/NAME`` for a UD pipeline; a
translator's :func:`g2gt.seq2seq.package.build_translation_package`) writes::

    models/NAME/
      pyproject.toml              [project] g2gt-model-NAME, entry point NAME in group "g2gt.models"
      g2gt_model_build.py         the build backend (:mod:`g2gt.core.wheel_backend`): standard library only, so
                                  pip installs offline
      README.md                   what the model is, its scores, how to install it (written by the model's task)
      g2gt_model_NAME/
        __init__.py               model_path() -> the folder below
        model/                    the model folder: its checkpoints (*.pt) and model.json

``pip install models/NAME`` then installs it; :func:`g2gt.core.registry.installed_models` finds it through the
entry point, so ``g2gt.load("NAME")`` (a pipeline) or ``g2gt.Translator.load("NAME")`` (a translator) use it
and ``g2gt models`` lists it. A package holds at most :data:`MAX_PACKAGE_MB` of model files (refused
otherwise: train a smaller model). This module imports no torch.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from .registry import ENTRY_POINT_GROUP, KIND_FILES, folder_kind

__all__ = ["MAX_PACKAGE_MB", "BACKEND_MODULE", "build_package", "package_name"]

MAX_PACKAGE_MB = 25.0
BACKEND_MODULE = "g2gt_model_build"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: kind -> how a user loads it, for the package's docstring
_LOADS = {"pipeline": 'g2gt.load("{name}")``, ``g2gt parse --model {name}',
          "translator": 'g2gt.Translator.load("{name}")``, ``g2gt translate --model {name}'}


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


def _init_py(name: str, description: str, kind: str) -> str:
    return (
        f'"""The g2gt model {name}: {description}.\n\n'
        f'Installed as a package, it is found by name: ``{_LOADS[kind].format(name=name)}``."""\n\n'
        "from pathlib import Path\n\n"
        '__all__ = ["MODEL_DIR", "model_path"]\n\n'
        'MODEL_DIR = Path(__file__).resolve().parent / "model"\n\n\n'
        "def model_path() -> Path:\n"
        '    """The model folder (the entry point of group g2gt.models)."""\n'
        "    return MODEL_DIR\n")


def build_package(model_dir: str | Path, name: str, out: str | Path, *, readme: str | None = None,
                  version: str | None = None, max_mb: float = MAX_PACKAGE_MB) -> Path:
    """Write the package folder ``out`` for model folder ``model_dir`` of any kind (module docstring).

    Args:
        model_dir: a model folder (``parser.pt`` or ``translator.pt`` and ``model.json``).
        name: the model's name: lowercase letters, digits and ``_``, starting with a letter (``fr_sequoia``).
        out: the package folder to write (``models/NAME``); its ``g2gt_model_NAME`` folder is written whole.
        readme: the text of ``README.md`` (the model's task writes it from the card); default: a short one.
        version: the package version (default: this library's).
        max_mb: refuse models whose files take more.

    Returns:
        ``out``.

    Raises:
        ValueError: a bad name or a model over ``max_mb`` (nothing written).
        FileNotFoundError: ``model_dir`` is not a model folder.
    """
    from .._version import __version__

    if not _NAME.match(name or ""):
        raise ValueError(f"--name {name!r}: a model name is lowercase letters, digits and _, starting with a letter "
                         "(e.g. fr_sequoia)")
    src = Path(model_dir)
    kind = folder_kind(src)
    if kind is None:
        raise FileNotFoundError(f"{src}: not a model folder (none of {', '.join(KIND_FILES.values())}; 'g2gt train "
                                "pipeline' writes one in OUT/model)")
    files = [p for p in sorted(src.iterdir()) if p.is_file() and (p.suffix == ".pt" or p.name == "model.json")]
    total_mb = sum(p.stat().st_size for p in files) / 2**20
    if total_mb > max_mb:
        raise ValueError(f"{src}: the model takes {total_mb:.1f} MB, over the {max_mb:g} MB limit of a model package "
                         "(train a smaller model, e.g. fewer layers or a smaller vocabulary)")
    card = json.loads((src / "model.json").read_text(encoding="utf-8")) if (src / "model.json").is_file() else {}
    description = card.get("description") or f"g2gt model {name}"
    out = Path(out)
    pkg = out / package_name(name)
    if pkg.exists():
        shutil.rmtree(pkg)  # a package folder is written whole: no stale files
    (pkg / "model").mkdir(parents=True)
    for p in files:
        shutil.copy2(p, pkg / "model" / p.name)
    (pkg / "__init__.py").write_text(_init_py(name, description, kind), encoding="utf-8")
    (out / "pyproject.toml").write_text(_pyproject(name, version or __version__, description, __version__),
                                        encoding="utf-8")
    shutil.copyfile(Path(__file__).with_name("wheel_backend.py"), out / f"{BACKEND_MODULE}.py")
    if readme is None:
        readme = (f"# g2gt model `{name}`\n\n{description}\n\n```bash\npip install models/{name}\n```\n\n"
                  f"Load it with ``{_LOADS[kind].format(name=name)}``.\n")
    (out / "README.md").write_text(readme, encoding="utf-8")
    return out
