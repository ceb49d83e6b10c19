"""Shared pytest setup: single-threaded torch (the test machine is shared), deterministic seeds, and the
``cpp_kernel`` fixture (the compiled C++ label kernel, required wherever it can be built), and ``g2gt_log`` (the
library logger's records)."""

from __future__ import annotations

import logging
import os
import shutil
import sys

import pytest
import torch

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("G2GT_LABEL_BUILD", "wait")  # a test that uses the kernel compiles it first, never in the background
os.environ.setdefault("G2GT_CPU_AUTO_BF16", "0")  # amp="auto" trains in float32 on every CPU: results do not depend on the host
torch.set_num_threads(1)
sys.path.insert(0, os.path.dirname(__file__))  # tests/helpers_ddp.py


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


def cpp_kernel_unbuildable() -> str | None:
    """Why the C++ label kernel cannot be built on this machine (no C++ compiler or no ninja, as
    ``torch.utils.cpp_extension`` looks for them), or None where it can."""
    from torch.utils.cpp_extension import is_ninja_available

    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        return f"no C++ compiler ({cxx!r}, $CXX) on PATH"
    if not is_ninja_available():
        return "ninja is not installed (pip install ninja)"
    return None


@pytest.fixture
def cpp_kernel(monkeypatch):
    """``torch.ops.g2gt_label_attention`` with ``G2GT_LABEL_KERNEL=cpp`` set for the test. Skips only where the
    kernel cannot be built (naming why); where a compiler and ninja are present a failed build fails the test."""
    why = cpp_kernel_unbuildable()
    if why is not None:
        pytest.skip(f"the C++ label kernel cannot be built here: {why}")
    monkeypatch.setenv("G2GT_LABEL_KERNEL", "cpp")
    monkeypatch.setenv("G2GT_LABEL_BUILD", "wait")
    from g2gt.nn import label_cpp

    ops = label_cpp.cpp_kernels()
    if ops is None:
        pytest.fail("the C++ label kernel did not build although a compiler and ninja are present: "
                    f"{label_cpp.build_error()}")
    return ops


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self, level: int | None = None) -> list[str]:
        return [r.getMessage() for r in self.records if level is None or r.levelno == level]


@pytest.fixture
def g2gt_log(monkeypatch):
    """The records of the library's logger (``logging.getLogger("g2gt")``) during the test, at every level and
    whatever an earlier test's CLI run did to its handlers and propagation: ``g2gt_log.messages(logging.INFO)``."""
    logger, seen = logging.getLogger("g2gt"), _Records()
    monkeypatch.setattr(logger, "level", logging.DEBUG)
    logger.addHandler(seen)
    yield seen
    logger.removeHandler(seen)
