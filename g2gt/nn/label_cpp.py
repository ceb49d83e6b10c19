"""The compiled CPU label-attention kernels (``csrc/label_attention.cpp``), built on first use.

:func:`cpp_kernels` compiles the C++ source once per machine (:func:`g2gt.nn.cpp_build.load_op_library`:
``torch.utils.cpp_extension.load`` into ``$TORCH_EXTENSIONS_DIR/g2gt/<name>`` or
``~/.cache/torch_extensions/g2gt/<name>``) and registers the ops ``torch.ops.g2gt_label_attention.forward /
backward``; later processes load the cached library (a second or so). torch is not needed to install g2gt,
only to build this at run time. The build is named after a hash of the sources, the torch and Python versions
and this CPU's instruction-set flags (it is compiled with ``-march=native``), so a cache shared by different
machines never loads a library built for another CPU.

When it cannot be had, :func:`cpp_kernels` returns None after a one-line ``RuntimeWarning`` (once per
process) and :class:`~g2gt.nn.label_kernels.LabelAttentionFunction` runs its blocked torch path (same maths,
slower): no compiler or ``ninja``, a failed compile, or a build that does not finish within
``$G2GT_LABEL_BUILD_TIMEOUT`` seconds (default 300; another process's build counts too). A lock left by a
killed build is never waited on (see :mod:`g2gt.nn.cpp_build`). ``G2GT_LABEL_KERNEL=torch`` selects the torch
path without trying to compile; ``G2GT_LABEL_BLOCK_ROWS=r`` sets the query rows per block (default 256, fewer
for very long key rows; the tests use small blocks to cross block boundaries).

See the C++ file for the maths; :func:`forward` / :func:`backward` here only normalise the inputs
(contiguity, dtypes, broadcast strides) the kernels expect.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import sys
import warnings
from pathlib import Path
from typing import Sequence

import torch
from torch import Tensor

from .cpp_build import BuildTimeout, build_root, load_op_library

__all__ = ["cpp_kernels", "forward", "backward", "kernel_choice", "build", "build_directory"]

SOURCE = Path(__file__).with_name("csrc") / "label_attention.cpp"
CFLAGS = ["-O3", "-march=native", "-fopenmp", "-fno-math-errno"]


def kernel_choice() -> str:
    """``"cpp"`` (default) or ``"torch"``: ``$G2GT_LABEL_KERNEL``, read at each call."""
    choice = os.environ.get("G2GT_LABEL_KERNEL", "cpp").strip().lower() or "cpp"
    if choice not in ("cpp", "torch"):
        raise ValueError(f"G2GT_LABEL_KERNEL must be 'cpp' or 'torch', got {choice!r}")
    return choice


def _cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return line
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _build_name(source: Path) -> str:
    """The extension's name: a hash of the sources (``source`` and the headers beside it), torch, Python
    (the library links ``libtorch_python``), flags, CPU."""
    h = hashlib.sha256()
    sources = [f.read_bytes() for f in sorted(source.parent.iterdir()) if f == source or f.suffix == ".h"]
    python = f"{sys.implementation.name}{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
    for part in (*sources, torch.__version__.encode(), python.encode(), " ".join(CFLAGS).encode(),
                 _cpu_flags().encode()):
        h.update(part)
    return f"g2gt_label_attention_{h.hexdigest()[:12]}"


def build_directory(source: Path = SOURCE) -> Path:
    """Where :func:`build` compiles ``source`` (see :func:`g2gt.nn.cpp_build.build_root`)."""
    return build_root() / _build_name(source)


def build(source: Path = SOURCE) -> object | None:
    """Compile ``source`` (once per machine, see :mod:`g2gt.nn.cpp_build`) and return
    ``torch.ops.g2gt_label_attention``, or None with a one-line ``RuntimeWarning`` when it is missing, does
    not build, or does not finish within ``$G2GT_LABEL_BUILD_TIMEOUT`` seconds."""
    fallback = "GraphAttention uses its slower torch label path (set G2GT_LABEL_KERNEL=torch to skip the build)"
    if not source.exists():
        warnings.warn(f"g2gt: {source} is missing; {fallback}", RuntimeWarning, stacklevel=3)
        return None
    try:
        load_op_library(_build_name(source), [str(source)], extra_cflags=CFLAGS, extra_ldflags=["-fopenmp"])
        return torch.ops.g2gt_label_attention
    except BuildTimeout as err:
        warnings.warn(f"g2gt: the C++ label-attention kernel is not ready ({err}); GraphAttention uses its slower "
                      "torch label path in this process (G2GT_LABEL_BUILD_TIMEOUT=<seconds> waits longer, "
                      "G2GT_LABEL_KERNEL=torch skips the build)", RuntimeWarning, stacklevel=3)
    except Exception as err:  # no compiler / ninja, or a toolchain problem: the torch path still works
        why = " ".join(str(err).split())[:160]
        warnings.warn(f"g2gt: could not build the C++ label-attention kernel ({type(err).__name__}: {why}); "
                      f"{fallback}", RuntimeWarning, stacklevel=3)
    return None


_load = functools.lru_cache(maxsize=None)(build)


def cpp_kernels() -> object | None:
    """``torch.ops.g2gt_label_attention`` (compiled on first use), or None where it cannot be built or
    ``G2GT_LABEL_KERNEL=torch``."""
    if kernel_choice() == "torch":
        return None
    return _load()


def _mask(t: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """A ``[B|1, H|1, nq|1, nk]`` mask in ``dtype`` with unit stride along ``nk`` (no copy when it has one)."""
    if t is None:
        return None
    t = t.detach().to(dtype)
    return t if t.stride(-1) == 1 else t.contiguous()


def _rows(t: Tensor) -> Tensor:
    """Detached (the kernels write into ``out=`` buffers, which autograd refuses), unit stride along the last
    dim; other strides are kept (q, k, v may be views of one packed projection)."""
    t = t.detach()
    return t if t.stride(-1) == 1 else t.contiguous()


def forward(ops, q: Tensor, k: Tensor, v: Tensor, a_k: Tensor, a_v: Tensor | None, labels: Tensor,
            offsets: Sequence[int], kpm: Tensor | None, allowed: Tensor | None, add: Tensor | None, causal: bool,
            offset: int, scale: float) -> tuple[Tensor, Tensor]:
    """``(out [B, H, nq, dh], lse [B, H, nq])`` in q's dtype (float32 / float64; ``out`` a view of a
    ``[B, nq, H, dh]`` buffer); see the C++ file."""
    dt = q.dtype
    return ops.forward(_rows(q), _rows(k), _rows(v), a_k.detach().to(dt).contiguous(),
                       None if a_v is None else a_v.detach().to(dt).contiguous(), labels, list(offsets),
                       None if kpm is None else kpm.contiguous(), _mask(allowed, torch.bool), _mask(add, dt),
                       causal, offset, scale)


def backward(ops, d_out: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, a_k: Tensor,
             a_v: Tensor | None, labels: Tensor, offsets: Sequence[int], kpm: Tensor | None, allowed: Tensor | None,
             add: Tensor | None, causal: bool, offset: int, scale: float):
    """``(dq, dk, dv, da_k, da_v)`` (``da_v`` empty without ``a_v``); see the C++ file."""
    dt = q.dtype
    return ops.backward(_rows(d_out), _rows(q), _rows(k), _rows(v), _rows(out), lse.detach(),
                        a_k.detach().to(dt).contiguous(), None if a_v is None else a_v.detach().to(dt).contiguous(),
                        labels, list(offsets), None if kpm is None else kpm.contiguous(), _mask(allowed, torch.bool),
                        _mask(add, dt), causal, offset, scale)
