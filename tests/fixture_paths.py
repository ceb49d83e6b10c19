"""Paths the tests share (importable from every test folder: ``pythonpath = ["tests"]`` in pyproject.toml)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  # the repository
FIXTURES = TESTS / "fixtures"  # small UD files
FIXTURES_MT = TESTS / "fixtures_mt"  # a small parallel corpus
