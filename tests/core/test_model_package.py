"""Model packages: `g2gt package` writes an installable folder whose stdlib build backend makes a wheel; an
installed model (a distribution with a `g2gt.models` entry point on sys.path) is found by name and listed."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import subprocess
import sys
import zipfile

import pytest

from g2gt.cli.main import main
from g2gt.core.registry import find_model, installed_models, is_model_folder, model_card
from g2gt.ud.recipe.export import package_pipeline

CARD = {"name": "xx_fake", "description": "a fake model \"for\" tests", "language": "xx",
        "dev_scores_official_scorer": {"raw text": {"Tokens": 99.0, "LAS": 50.0}}}


@pytest.fixture
def model_dir(tmp_path):
    d = tmp_path / "model"
    d.mkdir()
    (d / "parser.pt").write_bytes(b"\x00" * 1000)  # only files are packed here; nothing loads them
    (d / "segmenter.pt").write_bytes(b"\x01" * 10)
    (d / "model.json").write_text(json.dumps(CARD))
    return d


def _backend(pkg_dir):
    spec = importlib.util.spec_from_file_location(f"backend_{id(pkg_dir)}", pkg_dir / "g2gt_model_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _install(wheel, site):
    """What pip does with a pure wheel, for the test: unpack it into a folder on sys.path."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)


def test_package_folder_and_wheel(model_dir, tmp_path, monkeypatch):
    out = package_pipeline(model_dir, "xx_fake", tmp_path / "models" / "xx_fake", version="1.2.3")
    pkg = out / "g2gt_model_xx_fake"
    assert sorted(p.name for p in (pkg / "model").iterdir()) == ["model.json", "parser.pt", "segmenter.pt"]
    text = (out / "pyproject.toml").read_text()
    assert 'build-backend = "g2gt_model_build"' in text and "requires = []" in text
    assert 'xx_fake = "g2gt_model_xx_fake:model_path"' in text and "fake model" in (out / "README.md").read_text()

    backend = _backend(out)
    project = backend.read_project(out)
    assert project["name"] == "g2gt-model-xx-fake" and project["version"] == "1.2.3"
    assert project["description"] == CARD["description"]
    monkeypatch.setitem(sys.modules, "tomllib", None)  # Python 3.10: the fallback reader gives the same
    assert backend.read_project(out) == project
    monkeypatch.delitem(sys.modules, "tomllib")

    wheel = tmp_path / "dist" / backend.build_wheel(str(tmp_path / "dist"))
    assert wheel.name == "g2gt_model_xx_fake-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        info = "g2gt_model_xx_fake-1.2.3.dist-info"
        assert {"g2gt_model_xx_fake/__init__.py", "g2gt_model_xx_fake/model/parser.pt",
                f"{info}/METADATA", f"{info}/WHEEL", f"{info}/entry_points.txt", f"{info}/RECORD"} <= names
        assert "[g2gt.models]\nxx_fake = g2gt_model_xx_fake:model_path" in zf.read(f"{info}/entry_points.txt").decode()
        for line in zf.read(f"{info}/RECORD").decode().splitlines():
            name, digest, size = line.rsplit(",", 2)
            if digest:
                data = zf.read(name)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert digest == f"sha256={want}" and int(size) == len(data)
    assert backend.build_sdist(str(tmp_path / "dist")) == "g2gt_model_xx_fake-1.2.3.tar.gz"

    site = tmp_path / "site"
    _install(wheel, site)
    monkeypatch.syspath_prepend(str(site))
    found = installed_models()
    assert is_model_folder(found["xx_fake"]) and found["xx_fake"] == site / "g2gt_model_xx_fake" / "model"
    assert find_model("xx_fake") == found["xx_fake"] and model_card("xx_fake")["language"] == "xx"


def test_entry_point_discovery_with_a_fake_distribution(model_dir, tmp_path, monkeypatch, capsys):
    site = tmp_path / "site"
    (site / "fakemodel").mkdir(parents=True)
    (site / "fakemodel" / "__init__.py").write_text(f"MODEL = {str(model_dir)!r}\n"
                                                   "def path():\n    return MODEL\n")
    info = site / "fakemodel-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakemodel\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[g2gt.models]\nxx_fake = fakemodel:path\nxx_broken = fakemodel:nothing\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.warns(UserWarning, match="xx_broken"):
        found = installed_models()
    assert found.get("xx_fake") == model_dir
    assert "xx_broken" not in found
    with pytest.warns(UserWarning):
        assert main(["models"]) == 0
    listing = capsys.readouterr().out
    assert "xx_fake" in listing and "installed package" in listing and "LAS 50.00" in listing
    with pytest.raises(FileNotFoundError, match="xx_fake"):  # the error names what is available
        find_model("no_such_model")


def test_package_refusals(model_dir, tmp_path, capsys):
    with pytest.raises(ValueError, match="over the 0.0001 MB limit"):
        package_pipeline(model_dir, "xx_fake", tmp_path / "p", max_mb=0.0001)
    assert not (tmp_path / "p").exists()
    with pytest.raises(ValueError, match="lowercase letters"):
        package_pipeline(model_dir, "Bad-Name", tmp_path / "p")
    assert main(["package", str(tmp_path), "--name", "xx_fake", "-o", str(tmp_path / "p")]) == 2
    assert "not a model folder" in capsys.readouterr().err
    assert main(["package", str(model_dir), "--name", "xx_fake", "-o", str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "pyproject.toml").is_file()


@pytest.mark.slow
def test_pip_installs_a_package_offline(model_dir, tmp_path):
    """The real thing: pip builds the wheel with the package's own backend, without an index."""
    out = package_pipeline(model_dir, "xx_fake", tmp_path / "xx_fake")
    target = tmp_path / "target"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--target", str(target),
                        str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (target / "g2gt_model_xx_fake" / "model" / "parser.pt").is_file()
    assert any(p.name.endswith(".dist-info") for p in target.iterdir())


def test_readme_lists_the_command_of_every_part(model_dir, tmp_path):
    commands = {"segmenter": "g2gt train segmenter --out r/segmenter",
                "parser": "g2gt train parser --out r/parser\ng2gt train parser --out r/parser --resume",
                "enhancer": "g2gt train pipeline --out r --resume", "pipeline": "g2gt train pipeline --out r --resume"}
    (model_dir / "model.json").write_text(json.dumps({**CARD, "commands": commands}))
    readme = (package_pipeline(model_dir, "xx_fake", tmp_path / "p") / "README.md").read_text()
    block = readme[readme.index("```bash", readme.index("Trained with")):]
    block = block[:block.index("```\n", 7)].splitlines()[1:]
    assert block == ["# segmenter", commands["segmenter"], "# parser", *commands["parser"].splitlines(),
                     "# enhancer, pipeline", commands["pipeline"]]
