"""A PEP 517 build backend for g2gt model packages, standard library only.

``g2gt package`` copies this file into every package folder (as ``g2gt_model_build.py``, named by
``build-backend`` with ``backend-path = ["."]`` and ``requires = []`` in its ``pyproject.toml``), so that
``pip install models/NAME`` builds the wheel without downloading a build tool: it works offline.

It reads ``[project]`` (name, version, description, requires-python, dependencies) and
``[project.entry-points."g2gt.models"]`` from ``pyproject.toml`` (with :mod:`tomllib`, or on Python 3.10 a
reader for the plain ``key = "value"`` / ``key = ["a", "b"]`` lines ``g2gt package`` writes) and packs every
file of the package folder named ``g2gt_model_*`` into a pure-Python wheel (``py3-none-any``) with its
``.dist-info`` (``METADATA``, ``WHEEL``, ``entry_points.txt``, ``RECORD``). ``build_sdist`` writes the whole
folder as a ``.tar.gz``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from pathlib import Path

__all__ = ["build_wheel", "build_sdist", "get_requires_for_build_wheel", "get_requires_for_build_sdist",
           "read_project"]

ROOT = Path(__file__).resolve().parent
_FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # reproducible archives


def _parse_value(text: str):
    text = text.strip()
    if text.startswith("["):
        return re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


def _read_toml(path: Path) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10: the subset g2gt package writes
        data: dict = {}
        table = data
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                table = data
                for part in re.findall(r'"[^"]*"|[^.\[\]]+', line.strip("[]")):
                    table = table.setdefault(part.strip('"'), {})
                continue
            key, _, value = line.partition("=")
            table[key.strip().strip('"')] = _parse_value(value)
        return data
    with open(path, "rb") as f:
        return tomllib.load(f)


def read_project(root: Path = ROOT) -> dict:
    """``[project]`` of ``root/pyproject.toml``."""
    return _read_toml(root / "pyproject.toml")["project"]


def _dist_name(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata(project: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _entry_points(project: dict) -> str:
    out = []
    for group, entries in (project.get("entry-points") or {}).items():
        out.append(f"[{group}]")
        out += [f"{k} = {v}" for k, v in entries.items()]
        out.append("")
    return "\n".join(out)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _package_files(root: Path) -> list[Path]:
    files = []
    for pkg in sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("g2gt_model_")):
        files += sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    if not files:
        raise FileNotFoundError(f"{root}: no g2gt_model_* package folder to pack (written by g2gt package)")
    return files


def _zip_write(zf: zipfile.ZipFile, name: str, data: bytes, record: list[str]) -> None:
    info = zipfile.ZipInfo(name, _FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)
    record.append(_record_line(name, data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    """PEP 517: write the wheel into ``wheel_directory``; returns its file name."""
    project = read_project()
    dist = _dist_name(project["name"])
    version = str(project["version"])
    info_dir = f"{dist}-{version}.dist-info"
    wheel_name = f"{dist}-{version}-py3-none-any.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    record: list[str] = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w") as zf:
        for path in _package_files(ROOT):
            _zip_write(zf, path.relative_to(ROOT).as_posix(), path.read_bytes(), record)
        _zip_write(zf, f"{info_dir}/METADATA", _metadata(project).encode(), record)
        wheel = "Wheel-Version: 1.0\nGenerator: g2gt_model_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        _zip_write(zf, f"{info_dir}/WHEEL", wheel.encode(), record)
        _zip_write(zf, f"{info_dir}/entry_points.txt", _entry_points(project).encode(), record)
        record.append(f"{info_dir}/RECORD,,")
        info = zipfile.ZipInfo(f"{info_dir}/RECORD", _FIXED_TIME)
        zf.writestr(info, "\n".join(record) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None) -> str:
    """PEP 517: the package folder as ``{name}-{version}.tar.gz`` in ``sdist_directory``."""
    project = read_project()
    base = f"{_dist_name(project['name'])}-{project['version']}"
    os.makedirs(sdist_directory, exist_ok=True)
    files = [ROOT / "pyproject.toml", ROOT / Path(__file__).name, *_package_files(ROOT)]
    files += [p for p in (ROOT / "README.md",) if p.is_file()]
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz") as tf:
        pkg_info = _metadata(project).encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        tf.addfile(info, io.BytesIO(pkg_info))
        for path in files:
            tf.add(path, arcname=f"{base}/{path.relative_to(ROOT).as_posix()}")
    return base + ".tar.gz"


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> list[str]:
    return []
