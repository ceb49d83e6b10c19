"""Model names resolve one way everywhere (CLI, Python API, server); every card says its language and licence."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import g2gt.ud.models as registry
from g2gt.cli.main import main
from g2gt.serve.udpipe import resolve_model
from g2gt.ud.models import (
    DEFAULT_MODEL, MODEL_ALIASES, PACKAGED_DIR, UNKNOWN_LICENSE, available_models, find_model, license_name,
    model_card, resolve_name,
)

REPO = Path(__file__).resolve().parents[3]
has_default = pytest.mark.skipif(DEFAULT_MODEL not in available_models(), reason="no shipped default model here")


@dataclass
class FakeLoaded:  # what the server keeps per model: only its card is read when resolving a name
    name: str
    card: dict = field(default_factory=dict)


def test_en_ewt_is_not_a_name_of_the_non_commercial_model():
    assert "en_ewt" not in MODEL_ALIASES
    assert resolve_name("en_ewt", ["en_combined"]) == "en_ewt"


def test_an_alias_resolves_to_its_model_but_never_hides_a_model_of_that_name(monkeypatch):
    monkeypatch.setitem(MODEL_ALIASES, "xx_old", "xx_new")
    assert resolve_name("xx_old", ["xx_new"]) == "xx_new"
    assert resolve_name("xx_old", ["xx_old", "xx_new"]) == "xx_old"  # a model of that name wins
    assert resolve_name("xx_other", ["xx_new"]) == "xx_other"  # unknown names stay as they are


@has_default
def test_cli_api_and_server_resolve_an_old_name_alike(monkeypatch, capsys):
    monkeypatch.setitem(MODEL_ALIASES, "xx_old", DEFAULT_MODEL)
    assert find_model("xx_old") == PACKAGED_DIR / DEFAULT_MODEL  # g2gt.load, g2gt parse --model
    served = {DEFAULT_MODEL: FakeLoaded(DEFAULT_MODEL)}
    assert resolve_model(served, "xx_old") is served[DEFAULT_MODEL]  # model= in a server request
    from g2gt.serve.adapter import model_name

    assert model_name("xx_old") == (DEFAULT_MODEL, "xx_old")  # g2gt serve --model xx_old
    assert main(["models", "xx_old"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == DEFAULT_MODEL


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

    code = "import sys, g2gt.ud.models; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    assert registry.__name__ == "g2gt.ud.models"
