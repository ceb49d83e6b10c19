"""Model names resolve one way everywhere (CLI, Python API, server); every card says its language and licence."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import g2gt.core.registry as registry
from g2gt.cli.main import main
from g2gt.serve.udpipe import resolve_model
from g2gt.core.registry import (
    DEFAULT_MODEL, UNKNOWN_LICENSE, available_models, find_model, license_name, model_card,
    resolve_name,
)

REPO = Path(__file__).resolve().parents[2]
has_default = pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="no shipped default model here")


@dataclass
class FakeLoaded:  # what the server keeps per model: only its card is read when resolving a name
    name: str
    card: dict = field(default_factory=dict)


def _model(folder: Path, kind_file: str = "parser.pt", **card) -> Path:
    folder.mkdir(parents=True)
    (folder / kind_file).write_bytes(b"x")
    (folder / "model.json").write_text(json.dumps({"name": folder.name, **card}))
    return folder


@pytest.fixture
def fake_models(tmp_path, monkeypatch):
    """A registry of its own: shipped xx_one (language xx) and en_big; installed fr_small, fr_alpha (language fr)
    and the translator en_de_tiny."""
    shipped, installed = tmp_path / "shipped", tmp_path / "installed"
    _model(shipped / "xx_one", language="xx")
    _model(shipped / "en_big", language="en")
    packages = [_model(installed / "fr_small", language="fr"), _model(installed / "fr_alpha"),
                _model(installed / "en_de_tiny", "translator.pt", language="en -> de")]
    monkeypatch.setattr(registry, "PACKAGED_DIR", shipped)
    monkeypatch.setattr(registry, "entry_point_folders",
                        lambda group=registry.ENTRY_POINT_GROUP: [(p.name, f"{p.name}:model_path", p) for p in packages])
    return shipped, installed


def test_names_resolve_by_kind_and_language(fake_models):
    shipped, installed = fake_models
    assert available_models() == ["en_big", "en_de_tiny", "fr_alpha", "fr_small", "xx_one"]
    assert available_models("translator") == ["en_de_tiny"]
    assert find_model("xx_one") == shipped / "xx_one" and find_model("fr_small") == installed / "fr_small"
    assert resolve_name("fr") == "fr_alpha"  # a language code: its first model by name (fr_alpha by its name)
    assert find_model("xx") == shipped / "xx_one" and find_model("en") == shipped / "en_big"
    assert resolve_name("de") == "de"  # no model of that language: unchanged, reported as unknown
    with pytest.raises(FileNotFoundError, match="not a shipped or installed UD pipeline, a language with one"):
        find_model("de")
    assert find_model("en_de_tiny", kind="translator") == installed / "en_de_tiny"
    with pytest.raises(FileNotFoundError, match="en_de_tiny is a translator .*, not a UD pipeline"):
        find_model("en_de_tiny")


def test_a_folder_never_shadows_a_model_name(fake_models, tmp_path, monkeypatch, caplog):
    shipped, _ = fake_models
    work = tmp_path / "work"
    _model(work / "xx_one")  # e.g. another model saved under that name in the working directory
    monkeypatch.chdir(work)
    with caplog.at_level("WARNING", logger="g2gt"):
        assert find_model("xx_one") == shipped / "xx_one"
    assert "give ./xx_one to load that" in caplog.text
    assert find_model("./xx_one") == Path("./xx_one") and find_model(work / "xx_one") == work / "xx_one"
    _model(work / "mine")
    caplog.clear()
    with caplog.at_level("INFO", logger="g2gt"):
        assert find_model("mine") == Path("mine")  # an existing folder under a name that is no model's
        assert find_model("fr") == fake_models[1] / "fr_alpha"
    assert "mine: the folder mine in this folder (no model has that name)" in caplog.text
    assert "fr: the language's model fr_alpha" in caplog.text  # what was loaded and from where
    with pytest.raises(FileNotFoundError, match="nothere/: no such file or folder"):
        find_model("nothere/")


def test_the_server_and_cli_resolve_a_language_code_alike(fake_models, capsys):
    from g2gt.serve.adapter import model_name

    served = {"fr_small": FakeLoaded("fr_small", {"language": "fr"}), "xx_one": FakeLoaded("xx_one", {"language": "xx"})}
    assert resolve_model(served, "fr") is served["fr_small"]  # model=fr in a request: the served French model
    assert model_name("xx") == ("xx_one", "xx")  # g2gt serve --model xx
    assert main(["models", "xx"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "xx_one"


def test_g2gt_models_lists_every_kind(fake_models, capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    kinds = {ln.split("\t")[0]: ln.split("\t")[1] for ln in out.splitlines() if not ln.startswith("\t")}
    assert kinds == {"en_big": "pipeline", "en_de_tiny": "translator", "fr_alpha": "pipeline",
                     "fr_small": "pipeline", "xx_one": "pipeline"}


def test_the_server_refuses_a_model_it_does_not_serve():
    from g2gt.serve.formats import RequestError

    served = {"en_combined": FakeLoaded("en_combined", {"language": "en"})}
    with pytest.raises(RequestError, match="unknown model 'en_ewt'; this server has: en_combined"):
        resolve_model(served, "en_ewt")


def test_unknown_name_points_at_the_repository_package():
    if not (REPO / "models" / "fr_sequoia" / "pyproject.toml").is_file() or "fr_sequoia" in available_models():
        pytest.skip("needs the repository's models/fr_sequoia, not installed")
    with pytest.raises(FileNotFoundError, match="pip install models/fr_sequoia"):
        find_model("fr_sequoia")
    with pytest.raises(FileNotFoundError, match="pip install models/fr_sequoia"):
        find_model("fr")  # the language's package


def test_model_card_always_has_language_and_license(tmp_path):
    folder = tmp_path / "fr_test"
    folder.mkdir()
    (folder / "parser.pt").write_bytes(b"x")
    card = model_card(folder)
    assert card["language"] == "fr" and card["license"] == UNKNOWN_LICENSE
    (folder / "model.json").write_text(json.dumps({"language": "de", "license": "CC BY-SA 4.0 (UD German)"}))
    assert model_card(folder)["language"] == "de"
    other = tmp_path / "model"
    other.mkdir()
    (other / "parser.pt").write_bytes(b"x")
    assert model_card(other)["language"] is None  # a name that holds no language code


@pytest.mark.parametrize("text, short", [
    ("CC BY-SA 4.0 (trained on UD English EWT)", "CC BY-SA 4.0"),
    ("CC BY-NC-SA 4.0 (non-commercial): the parser is trained on UD English GUM", "CC BY-NC-SA 4.0"),
    ("The treebank is licensed under the Creative Commons License Attribution-ShareAlike 4.0 International.",
     "CC BY-SA 4.0"),
    ("Attribution-ShareAlike 4.0 International\n\n=====", "CC BY-SA 4.0"),
    ("User agreement\n---\nThe Greek UD Treebank is distributed under a CreativeCommons "
     "Attribution-NonCommercial-ShareAlike 3.0 license:", "CC BY-NC-SA 3.0"),
    ("The Turkish UD Treebank is distributed under the license CreativeCommons BY-NC-SA 3.0", "CC BY-NC-SA 3.0"),
    ("Lesser General Public License For Linguistic Resources\n\nPreamble", "LGPL-LR"),
    ("MIT", "MIT"),
    ("", "unknown"),
    (UNKNOWN_LICENSE, "unknown"),
])
def test_license_name(text, short):
    assert license_name(text) == short


def test_g2gt_models_shows_each_models_language_and_licence(capsys):
    names = available_models()
    if not names:
        pytest.skip("no models here")
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in names:
        line = next(ln for ln in out.splitlines() if ln.startswith(name))
        card = model_card(name)
        assert f"language: {card['language']}" in line and f"licence: {license_name(card['license'])}" in line
        assert " MB" in line


@has_default
def test_default_english_card_says_non_commercial_and_names_the_commercial_model():
    card = model_card(DEFAULT_MODEL)
    assert license_name(card["license"]) == "CC BY-NC-SA 4.0" and "en_ewt" in card["license"]
    assert "aliases" not in card


def test_en_ewt_package_is_ewt_only_and_share_alike():
    folder = REPO / "models" / "en_ewt" / "g2gt_model_en_ewt" / "model"
    if not folder.is_dir():
        pytest.skip("no models/en_ewt in this checkout")
    card = model_card(folder)
    assert card["name"] == "en_ewt" and card["language"] == "en" and card["treebanks"] == ["en_ewt"]
    assert license_name(card["license"]) == "CC BY-SA 4.0"
    assert "GUM" not in card["training_data"]
    assert sum(p.stat().st_size for p in folder.glob("*.pt")) <= 25 * 2**20
    assert 'en_ewt = "g2gt_model_en_ewt:model_path"' in (folder.parents[1] / "pyproject.toml").read_text()


def test_registry_imports_no_torch():
    import subprocess
    import sys

    code = "import sys, g2gt.core.registry, g2gt.core.package; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
