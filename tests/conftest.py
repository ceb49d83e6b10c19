"""Shared pytest setup: single-threaded torch (the test machine is shared), deterministic seeds."""

from __future__ import annotations

import os
import sys

import pytest
import torch

os.environ.setdefault("OMP_NUM_THREADS", "1")
torch.set_num_threads(1)
sys.path.insert(0, os.path.dirname(__file__))  # tests/helpers_ddp.py


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield
