"""The one place where g2gt touches private torch APIs.

Each probe is a small function with a safe fallback, so a torch upgrade that renames or
changes a private API degrades to a slower public path here (with one warning) instead of
breaking the library somewhere else. ``tests/core/test_compat.py`` has one test per probe.

Probes:

* :func:`amx_tile_supported` -- ``torch.cpu._is_amx_tile_supported`` (Intel AMX tiles, fast
  bfloat16 matrix products; used to pick the inference dtype).
* :func:`cpu_bf16_supported` -- ``torch.cpu._is_avx512_bf16_supported`` and the AMX probe (native
  bfloat16 dot products; ``amp='auto'`` trains under bfloat16 autocast on such CPUs).
* :func:`keep_freed_memory` -- not torch: glibc's ``mallopt`` (through ctypes), so that freed tensors'
  memory is reused instead of being returned to the OS and faulted in again (the ``g2gt`` command and the
  benchmarks call it; a library import never does).
* :func:`int8_linear_quantizer` -- ``torch.ao.quantization.quantize_dynamic`` (deprecated by torch in
  favour of torchao, still shipped): ``nn.Linear`` -> int8 weights with activations quantized on the fly,
  the CPU inference mode ``dtype="int8"`` of :meth:`g2gt.ud.parse.Parser.load`.
* :func:`has_forward_hooks` -- ``nn.Module._forward_hooks`` / ``_forward_pre_hooks`` and torch's global
  forward hooks: whether calling a module's parts directly (the encoders' fused inference loop,
  :mod:`g2gt.nn.residual_norm`) would skip a hook someone registered.
* :func:`extension_baton` -- where ``torch.utils.cpp_extension.load`` keeps the lock file it waits on
  (``torch.utils.file_baton.FileBaton`` at ``<build_directory>/lock``), so that the label-kernel loader
  (``g2gt.nn.cpp_build``) can clear one left by a killed build.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
import warnings
from pathlib import Path
from typing import Callable

import torch
from torch import nn

__all__ = ["amx_tile_supported", "cpu_bf16_supported", "extension_baton", "has_forward_hooks",
           "int8_linear_quantizer", "keep_freed_memory"]

def _cpu_probe(name: str) -> bool:
    """``torch.cpu.<name>()`` as a bool; False where the private probe is missing or fails."""
    probe = getattr(getattr(torch, "cpu", None), name, None)
    if probe is None:
        return False
    try:
        return bool(probe())
    except Exception:  # unusual builds: report "not supported"
        return False


def amx_tile_supported() -> bool:
    """Whether this CPU has Intel AMX tiles (fast bfloat16 matrix products).

    Reads the private ``torch.cpu._is_amx_tile_supported`` (torch >= 2.3); False where it is
    missing or fails. Never raises.
    """
    return _cpu_probe("_is_amx_tile_supported")


def cpu_bf16_supported() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AVX512-BF16 or AMX tiles), so that
    bfloat16 autocast makes training faster rather than slower (emulated bfloat16 is slow).

    Reads the private ``torch.cpu._is_avx512_bf16_supported`` and ``_is_amx_tile_supported``
    (torch >= 2.3); False where they are missing or fail. Never raises.
    """
    return _cpu_probe("_is_avx512_bf16_supported") or amx_tile_supported()


@functools.lru_cache(maxsize=None)
def int8_linear_quantizer() -> Callable[[nn.Module], nn.Module] | None:
    """``quantize(module) -> module``: a copy of ``module`` whose ``nn.Linear`` layers compute with int8
    weights (per-tensor scale) and int8 activations quantized per call (torch's dynamic quantization,
    fbgemm / x86 kernels; speed in the README's precision table). CPU only; for inference.

    Returns None where this torch lacks ``torch.ao.quantization.quantize_dynamic`` (torch deprecated it in
    favour of torchao and may drop it), has no quantized engine, or where a tiny ``nn.Linear`` quantized
    with it stops agreeing with float32 (tolerance: 5 % of the output scale). torch's deprecation warnings
    are silenced inside the call: the probe, not the user, is responsible for the API.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.ao.quantization import quantize_dynamic
    except Exception:
        return None
    engines = [e for e in getattr(torch.backends.quantized, "supported_engines", []) if e != "none"]
    if not engines:
        return None

    def quantize(module: nn.Module) -> nn.Module:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return quantize_dynamic(module, {nn.Linear}, dtype=torch.qint8)

    try:
        g = torch.Generator().manual_seed(0)
        lin = nn.Linear(32, 16)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(16, 32, generator=g) / 32**0.5)
        x = torch.randn(4, 7, 32, generator=g)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref, out = lin(x), quantize(lin)(x)
        ok = out.shape == ref.shape and bool(((out - ref).abs().max() <= 0.05 * ref.abs().max()).item())
    except Exception:  # any failure means "not usable here"
        return None
    return quantize if ok else None


_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4  # glibc <malloc.h>


@functools.lru_cache(maxsize=None)
def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory for reuse: no ``mmap`` for large blocks (``M_MMAP_MAX = 0``) and
    no trimming of the heap below 1 GiB of free space (``M_TRIM_THRESHOLD``), for this process.

    Tensors of a few MB and more are otherwise ``mmap``-ed at each allocation and unmapped when freed, so
    every batch pays page faults again: on the 2-core VM we measure on, one thread, 1.08-1.12x more parser
    words/s (interleaved in one process) and a fresh ``[2046, 8000]`` float add 40 -> 13 ms. Peak memory is
    unchanged; the process keeps its peak until it exits. Returns True when applied; False off glibc Linux,
    when ``mallopt`` is missing or refuses, or when the environment sets ``G2GT_KEEP_FREED_MEMORY=0``. Called
    once per process by the ``g2gt`` command and the benchmarks, never on import. The command also runs with
    glibc's per-thread cache of freed blocks off (:mod:`g2gt.core.malloc_tunables`), without which the heap
    fragments and grows over a corpus while the memory in use does not.
    """
    if os.environ.get("G2GT_KEEP_FREED_MEMORY", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 30))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt): keep the default allocator
        return False


def has_forward_hooks(*modules: nn.Module) -> bool:
    """Whether a forward hook or forward pre-hook is registered on any of ``modules`` or globally
    (``torch.nn.modules.module.register_module_forward_hook`` / ``..._pre_hook``). True when torch no longer
    keeps them where this looks (``Module._forward_hooks``, ``_forward_pre_hooks``, the module-level
    ``_global_forward_hooks`` / ``_global_forward_pre_hooks`` dicts): callers then take their path that calls
    every module, which runs any hook."""
    from torch.nn.modules import module as torch_module

    try:
        if torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks:
            return True
        return any(m._forward_hooks or m._forward_pre_hooks for m in modules)
    except AttributeError:
        return True


_BATON_NAME = "lock"  # torch.utils.cpp_extension._jit_compile: FileBaton(os.path.join(build_directory, 'lock'))


def extension_baton(build_directory: str | os.PathLike) -> Path | None:
    """The lock file that ``torch.utils.cpp_extension.load(..., build_directory=d)`` creates in ``d`` while
    it builds, and that every other ``load`` of ``d`` waits on, with no time limit, while it exists:
    ``d / "lock"`` (a ``torch.utils.file_baton.FileBaton``; torch 1.x to 2.13 at least).

    A build killed before it removes the file (SIGKILL, a timeout) leaves it behind, and later loads wait
    forever. Only a caller that knows no build of ``d`` is running (it holds its own lock on ``d``) may delete
    it. Returns None where ``torch.utils.file_baton.FileBaton`` is gone (a torch that changed its locking:
    callers then rely on their own lock and time limit). ``tests/core/test_compat.py`` checks that ``load``
    still waits on this very file.
    """
    try:
        from torch.utils.file_baton import FileBaton
    except ImportError:
        return None
    if not callable(getattr(FileBaton, "wait", None)):
        return None
    return Path(build_directory) / _BATON_NAME
