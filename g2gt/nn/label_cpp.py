"""The compiled CPU label-attention kernels (``csrc/label_attention.cpp``), built on first use.

:func:`cpp_kernels` compiles the C++ source once per machine (:func:`g2gt.nn.cpp_build.load_op_library`:
``torch.utils.cpp_extension.load`` into ``$TORCH_EXTENSIONS_DIR/g2gt/<name>`` or
``~/.cache/torch_extensions/g2gt/<name>``) and registers the ops ``torch.ops.g2gt_label_attention.forward /
backward``; later processes load the cached library (a second or so). torch is not needed to install g2gt,
only to build this at run time. The build is named after a hash of the sources, the torch and Python versions
and this CPU's instruction-set flags (it is compiled with ``-march=native``: AVX-512 or AVX2 + FMA code where the
CPU has it, 512-bit vectors preferred), so a cache shared by different machines never loads a library built
for another CPU: each CPU type gets its own build.

When it cannot be had, :func:`cpp_kernels` returns None after a one-line ``RuntimeWarning`` (once per
process) and :class:`~g2gt.nn.label_kernels.LabelAttentionFunction` runs its blocked torch path (same maths,
slower): no compiler or ``ninja``, a failed compile, or a build that does not finish within
``$G2GT_LABEL_BUILD_TIMEOUT`` seconds (default 300; another process's build counts too). A lock left by a
killed build is never waited on (see :mod:`g2gt.nn.cpp_build`). ``G2GT_LABEL_KERNEL=torch`` selects the torch
path without trying to compile; ``G2GT_LABEL_BLOCK_ROWS=r`` sets the query rows per block (default 256, fewer
for very long key rows; the tests use small blocks to cross block boundaries).

A first run never waits for the compiler: by default (``$G2GT_LABEL_BUILD=background``) the first process
that finds no built kernel starts a separate build process, says so in one line on stderr and goes on with
the torch path, switching to the kernel once it is there (:func:`cpp_kernels`); a build that fails is one
warning line per process. ``g2gt build-kernel`` (:func:`build_ahead`) builds it ahead and waits, exiting
non-zero with the reason when it cannot; ``G2GT_LABEL_BUILD=wait`` makes every process compile and wait
(announced as ``g2gt: building the label-attention kernel once (about 30 s ...``); :func:`build_error` says
why the last build in this process failed.

See the C++ file for the maths; :func:`forward` / :func:`backward` here only normalise the inputs
(contiguity, dtypes, broadcast strides) the kernels expect. The same library holds the fused residual add +
LayerNorm the encoders use at inference (``add_layer_norm``, ``csrc/residual_norm.h``; called through
:mod:`g2gt.nn.residual_norm`) and the parsers' maximum spanning tree decoder (``max_spanning_trees``,
``csrc/arborescence.h``; called through :func:`g2gt.ud.parse.trees.batch_decode`).
"""

from __future__ import annotations

import functools
import logging
import hashlib
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Sequence

import torch
from torch import Tensor

from .cpp_build import BuildTimeout, build_root, load_built, load_op_library

__all__ = ["cpp_kernels", "forward", "backward", "kernel_choice", "build", "build_directory", "build_error",
           "build_ahead"]

SOURCE = Path(__file__).with_name("csrc") / "label_attention.cpp"
CFLAGS = ["-O3", "-march=native", "-mprefer-vector-width=512", "-fopenmp", "-fno-math-errno"]
ANNOUNCE = ("g2gt: building the label-attention kernel once (about 30 s; later runs load it in a second; "
            "'g2gt build-kernel' does it ahead) ...")
_log = logging.getLogger("g2gt")
ANNOUNCE_BACKGROUND = ("building the label-attention kernel in the background (once per machine, about "
                       "30 s); until it is ready GraphAttention uses its slower torch path ('g2gt build-kernel' "
                       "builds it and waits)")
FAILED_NAME = "failed"  # the background build's one-line reason, in the build directory
CHECK_SECONDS = 2.0
_last_error: list[str] = []  # why the last build in this process failed (see build_error)


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
    return build_root() / _named(source, source.stat().st_mtime_ns if source.exists() else 0)


@functools.lru_cache(maxsize=None)
def _named(source: Path, mtime: int) -> str:
    return _build_name(source)


def build(source: Path = SOURCE) -> object | None:
    """Compile ``source`` (once per machine, see :mod:`g2gt.nn.cpp_build`) and return
    ``torch.ops.g2gt_label_attention``, or None with a one-line ``RuntimeWarning`` when it is missing, does
    not build, or does not finish within ``$G2GT_LABEL_BUILD_TIMEOUT`` seconds."""
    fallback = "GraphAttention uses its slower torch label path (set G2GT_LABEL_KERNEL=torch to skip the build)"
    _last_error.clear()
    if not source.exists():
        return _fail(f"g2gt: {source} is missing; {fallback}")
    try:
        load_op_library(_build_name(source), [str(source)], extra_cflags=CFLAGS, extra_ldflags=["-fopenmp"],
                        announce=ANNOUNCE)
        return torch.ops.g2gt_label_attention
    except BuildTimeout as err:
        return _fail(f"g2gt: the C++ label-attention kernel is not ready ({err}); GraphAttention uses its slower "
                     "torch label path in this process (G2GT_LABEL_BUILD_TIMEOUT=<seconds> waits longer, "
                     "G2GT_LABEL_KERNEL=torch skips the build)")
    except Exception as err:  # no compiler / ninja, or a toolchain problem: the torch path still works
        why = _first_error(str(err))
        return _fail(f"g2gt: could not build the C++ label-attention kernel ({type(err).__name__}: {why}); "
                     f"{fallback}")


def _first_error(text: str) -> str:
    """The compiler's first ``error:`` line of a failed build's output (else its start), shortened."""
    errors = [ln.strip() for ln in text.splitlines() if "error:" in ln and not ln.lstrip().startswith("[")]
    return (errors[0] if errors else " ".join(text.split()))[:200]


def _fail(message: str) -> None:
    """Record ``message`` (:func:`build_error`) and warn with it, once, on one line."""
    _last_error.append(message)
    warnings.warn(message, RuntimeWarning, stacklevel=4)
    return None


def build_error() -> str | None:
    """Why the last :func:`build` in this process failed (the warning's text), None after a success."""
    return _last_error[-1] if _last_error else None


def build_ahead() -> int:
    """Build (or load) the kernel now and wait for it (``g2gt build-kernel``, ``python -m g2gt.nn.label_cpp``,
    the background builder): 0 when it is ready, 1 (and why, on stderr) when it cannot be built here."""
    if kernel_choice() == "torch":
        print("g2gt: G2GT_LABEL_KERNEL=torch is set: the compiled kernel is not used", file=sys.stderr)
        return 1
    failed = build_directory() / FAILED_NAME
    failed.unlink(missing_ok=True)  # asked for explicitly: try again
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ops = build()
    if ops is None:
        why = build_error() or "g2gt: could not build the C++ label-attention kernel"
        _write_atomic(failed, why + "\n")
        print(why, file=sys.stderr)
        return 1
    print(f"the label-attention kernel is ready in {build_directory()}")
    return 0


_load = functools.lru_cache(maxsize=None)(build)


def build_mode() -> str:
    """``"background"`` (default) or ``"wait"``: ``$G2GT_LABEL_BUILD``, read at each call."""
    mode = os.environ.get("G2GT_LABEL_BUILD", "background").strip().lower() or "background"
    if mode not in ("background", "wait"):
        raise ValueError(f"G2GT_LABEL_BUILD must be 'background' or 'wait', got {mode!r}")
    return mode


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class _Background:
    """This process's view of a kernel built by a separate process (see :func:`cpp_kernels`)."""

    ops: object | None = None
    started = False
    gave_up = False
    next_check = 0.0

    @classmethod
    def poll(cls) -> object | None:
        if cls.ops is not None or cls.gave_up:
            return cls.ops
        now = time.monotonic()
        if now < cls.next_check:
            return None
        cls.next_check = now + CHECK_SECONDS
        directory = build_directory()
        if load_built(directory) is not None:
            cls.ops = torch.ops.g2gt_label_attention
            return cls.ops
        failed = directory / FAILED_NAME
        if failed.is_file():
            cls.gave_up = True
            why = failed.read_text().strip()
            warnings.warn(f"{why} ('g2gt build-kernel' tries again and waits)", RuntimeWarning, stacklevel=3)
            return None
        if not cls.started:
            cls.started = True
            directory.mkdir(parents=True, exist_ok=True)
            env = {**os.environ, "G2GT_LABEL_BUILD": "wait", "G2GT_LABEL_KERNEL": "cpp"}
            with open(directory / "build.log", "ab") as log:
                subprocess.Popen([sys.executable, "-m", "g2gt.nn.label_cpp"], stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, env=env, start_new_session=True)
            _log.info(ANNOUNCE_BACKGROUND)
        return None


def cpp_kernels() -> object | None:
    """``torch.ops.g2gt_label_attention``, or None where it cannot be had (yet) or ``G2GT_LABEL_KERNEL=torch``.

    Built once per machine. ``$G2GT_LABEL_BUILD=background`` (default): a run that finds no built kernel
    starts a separate process to build it (one line on stderr says so) and goes on with the torch path; it
    switches to the kernel once that process is done (checked every few seconds), and later runs load it
    directly; a failed build is one warning line per process. ``wait``: compile in this process and wait
    (:func:`build`; tests, ``g2gt build-kernel``)."""
    if kernel_choice() == "torch":
        return None
    if _Background.ops is not None:
        return _Background.ops
    if build_mode() == "wait":
        return _load()
    return _Background.poll()


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
    """``(out [B, H, nq, dh], lse [B, H, nq])``: ``out`` in q's dtype (a view of a ``[B, nq, H, dh]`` buffer),
    ``lse`` in the compute dtype: q's for float32 / float64 q, float32 for bfloat16 / float16 q (whose rows the
    kernel widens as it reads them; the label tables and ``add`` are passed in float32); see the C++ file."""
    dt = torch.float32 if q.dtype in (torch.bfloat16, torch.float16) else q.dtype
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


if __name__ == "__main__":
    raise SystemExit(build_ahead())
