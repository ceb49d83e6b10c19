"""Where and how a training step runs: CPU threads, autocast, moving batches to a device, RNG states, and
the few collectives the :class:`g2gt.core.train.Trainer` makes its ranks agree with.

Under ``torchrun`` (``WORLD_SIZE > 1``) every rank calls the collectives here at the same point; with one
process they are plain local operations (no process group needed).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import random
from typing import Any

import torch
import torch.distributed as dist

from ..errors import Error
from ._compat import cpu_bf16_supported  # the private-torch-API probes live in g2gt.core._compat
from .config import AMP_MODES, GPU_BUDGET_GIB, GPU_BUDGET_MAX

__all__ = ["DeviceError", "DTYPE_NAMES", "resolve_device", "resolve_dtype", "set_threads", "autocast_dtype", "autocast_context", "move_to_device", "rng_state", "set_rng_state",
           "all_rng_states", "from_main", "max_over_ranks", "host_reads_are_free", "train_batch_tokens"]


class DeviceError(Error, RuntimeError):
    """A device name that is not a device, or a device this machine lacks (also a ``RuntimeError``, as torch
    raises for these)."""


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The one reading of a device name, used by every loader and command.

    ``"auto"`` -> CUDA when a GPU is available, else the CPU; any other name (or ``torch.device``) is checked and
    returned as a ``torch.device``.

    Raises :class:`DeviceError` (a :class:`g2gt.Error`) for a name that is not a device, for a CUDA device
    this machine lacks, or for a device type g2gt does not run on.

    Args:
        device: ``"auto"`` (default), a device name (``"cpu"``, ``"cuda:1"`` ...) or a ``torch.device``.

    Returns:
        The ``torch.device``.

    Raises:
        DeviceError: a name that is not a device, a CUDA device this machine lacks, or a device type g2gt does not run
            on.
    """
    if isinstance(device, torch.device) and device.type == "cpu":
        return device
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise DeviceError(f"device={device!r} is not a device; expected 'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise DeviceError(f"device={device!r}: unsupported device type {dev.type!r}; expected cpu or cuda")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"device={device!r}: CUDA is not available on this machine; use device='cpu' or 'auto'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceError(f"device={device!r}: this machine has {torch.cuda.device_count()} GPU(s) "
                              f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")
    return dev


#: dtype names a user may give (``"int8"``: int8 dynamic quantization of the linear layers, CPU only)
DTYPE_NAMES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "int8": torch.qint8}


def resolve_dtype(dtype: torch.dtype | str | None, device: str | torch.device = "auto", *,
                  int8: bool = False) -> torch.dtype:
    """The one reading of a precision, used by every loader.

    A floating ``torch.dtype``, or ``torch.qint8`` (int8 dynamic quantization of the linear layers, CPU only).

    Args:
        dtype: ``"auto"``: the fastest precision for ``device`` with the same accuracy -- bfloat16 where bfloat16
            matrix products are fast (a CUDA GPU that has them, a CPU with AMX tiles), else int8 on a CPU when
            ``int8`` is True and torch provides it, else float32; ``"float32"``, ``"bfloat16"``, ``"float16"``,
            ``"int8"`` or a ``torch.dtype`` force one; ``None`` is float32.
        device: where the model runs (:func:`resolve_device`).
        int8: whether ``"auto"`` may pick int8 (a model whose int8 accuracy was measured: the parser).

    Returns:
        A floating ``torch.dtype``, or ``torch.qint8``.

    Raises:
        ValueError: a name that is no precision, or int8 on a GPU.
    """
    if dtype is None:
        return torch.float32
    dev = resolve_device(device)
    if isinstance(dtype, str) and dtype == "auto":
        from ._compat import amx_tile_supported, int8_linear_quantizer  # private-torch-API probes live there

        if dev.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
        if dev.type != "cpu":
            return torch.float32
        if amx_tile_supported():
            return torch.bfloat16
        return torch.qint8 if int8 and int8_linear_quantizer() is not None else torch.float32
    dt = dtype if isinstance(dtype, torch.dtype) else DTYPE_NAMES.get(str(dtype).removeprefix("torch."))
    if dt is None or not (dt.is_floating_point or dt is torch.qint8):
        raise Error(f"dtype must be auto, {', '.join(DTYPE_NAMES)} or a torch dtype, got {dtype!r}")
    if dt is torch.qint8 and dev.type != "cpu":
        raise Error(f"dtype='int8' (dynamic int8 quantization) runs on the CPU only, not on {dev}; "
                         "use bfloat16 on a GPU")
    return dt


def host_reads_are_free(t: torch.Tensor) -> bool:
    """Whether reading ``t`` on the host (``.item()``, ``nonzero()``, a boolean index, a range check) costs
    nothing: ``t`` is on the CPU. Elsewhere such a read makes the host wait for the device's queue, so the
    training path takes a sync-free way there (the character CNN, the attention's label check); the tests patch
    this to run that way on a CPU.

    Args:
        t: a tensor.

    Returns:
        True for a CPU tensor.
    """
    return t.device.type == "cpu"


def train_batch_tokens(cpu_tokens: int, device: str | torch.device) -> int:
    """The default tokens per training batch on ``device``: the one place training budgets are sized to a device.

    On the CPU (and MPS) ``cpu_tokens``, the recipe's budget; on a CUDA device ``cpu_tokens`` times
    ``GPU memory GiB // GPU_BUDGET_GIB`` (16), at least 1 and at most ``GPU_BUDGET_MAX`` (8) times
    (:mod:`g2gt.core.config`) (a GPU is fed far better
    by large batches; the parser's 1,500 words become 12,000 on an H200). ``g2gt train parser`` and ``g2gt train
    seq2seq`` use it when ``--batch-tokens`` is not given.

    Args:
        cpu_tokens: the recipe's budget (the CPU default).
        device: where the run trains.

    Returns:
        Tokens per batch.
    """
    dev = torch.device(device)
    if dev.type != "cuda" or not torch.cuda.is_available():
        return cpu_tokens
    gib = torch.cuda.get_device_properties(dev.index or 0).total_memory / 2**30
    return cpu_tokens * max(1, min(GPU_BUDGET_MAX, int(gib // GPU_BUDGET_GIB)))


def set_threads(n: int | None) -> None:
    """Use ``n`` CPU threads in torch (intra-op) and in the ``tokenizers`` library; ``None`` / 0 = defaults."""
    if not n:
        return
    if n < 0:
        raise ValueError(f"threads must be >= 1 (or 0 / None for the default), got {n}")
    torch.set_num_threads(n)
    os.environ["RAYON_NUM_THREADS"] = str(n)  # read by tokenizers when its thread pool starts


def autocast_dtype(device: torch.device, amp: str) -> torch.dtype | None:
    """The autocast dtype for ``amp`` on ``device`` (``None``: off).

    * ``'auto'``: on CUDA bf16 when the GPU supports it, else fp16; on a CPU with native bfloat16
      matrix products (AVX512-BF16 or AMX, :func:`g2gt.core._compat.cpu_bf16_supported`) bf16, which
      trains faster there (measured by ``benchmarks/amp.py``, table in the README); otherwise off;
    * ``'bf16'``: bf16 on CUDA and on any CPU (emulated, slow, where the CPU lacks bfloat16 instructions);
    * ``'fp16'``: fp16 on CUDA (with a GradScaler), off elsewhere; ``'none'``: off. Off on MPS.
    """
    if amp not in AMP_MODES:
        raise ValueError(f"amp must be 'auto', 'bf16', 'fp16' or 'none', got {amp!r}")
    if amp == "none":
        return None
    if device.type == "cpu":
        # G2GT_CPU_AUTO_BF16=0 keeps "auto" in float32 on every CPU (the test suite sets it, so that what a
        # test trains does not depend on whether the host has bfloat16 instructions)
        use = amp == "bf16" or (amp == "auto" and os.environ.get("G2GT_CPU_AUTO_BF16", "1") != "0"
                                and cpu_bf16_supported())
        return torch.bfloat16 if use else None
    if device.type != "cuda":
        return None
    if amp == "auto":
        amp = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[amp]


def autocast_context(device_type: str, dtype: torch.dtype | None):
    """A fresh ``torch.autocast(device_type, dtype)`` context, or a no-op one when ``dtype`` is None."""
    return contextlib.nullcontext() if dtype is None else torch.autocast(device_type, dtype=dtype)


def move_to_device(batch: Any, device: torch.device) -> Any:
    """Move a batch to ``device``: anything with ``.to()``, and tensors inside tuples / lists / dicts.

    To a CUDA device the copies are ``non_blocking`` (tensors, and objects whose ``.to`` takes ``non_blocking``,
    such as :class:`g2gt.core.batch.GraphBatch`): a blocking host-to-device copy waits for the GPU to finish its
    queued work, a host sync in every training step.
    """
    device = torch.device(device)
    nb = device.type == "cuda"
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=nb)
    if hasattr(batch, "to") and not isinstance(batch, type):
        return batch.to(device, non_blocking=True) if nb and _takes_non_blocking(batch.to) else batch.to(device)
    if isinstance(batch, dict):
        return {k: move_to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        moved = [move_to_device(v, device) for v in batch]
        return type(batch)(*moved) if hasattr(batch, "_fields") else type(batch)(moved)
    return batch


def _takes_non_blocking(method: Any) -> bool:
    try:
        return "non_blocking" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def rng_state() -> dict:
    """This process's RNG states (torch CPU, CUDA when present, Python ``random``)."""
    py = random.getstate()
    state = {"torch": torch.get_rng_state(), "python": list(py[1]), "python_pos": py[2]}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore a :func:`rng_state` (CUDA states only where CUDA is available)."""
    torch.set_rng_state(state["torch"].cpu())
    random.setstate((3, tuple(state["python"]), state["python_pos"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def all_rng_states(world_size: int) -> list[dict]:
    """:func:`rng_state` of every rank, in rank order (a collective under DDP)."""
    mine = rng_state()
    if world_size == 1:
        return [mine]
    box: list[Any] = [None] * world_size
    dist.all_gather_object(box, mine)
    return box


def from_main(value: Any, world_size: int) -> Any:
    """Rank 0's ``value`` on every rank (a collective under DDP; ``value`` itself with one process)."""
    if world_size == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, 0)
    return box[0]


def max_over_ranks(x: float, world_size: int, device: torch.device) -> float:
    """The largest ``x`` over the ranks (a collective under DDP; ``x`` itself with one process)."""
    if world_size == 1:
        return x
    box = torch.tensor(float(x), device=device)
    dist.all_reduce(box, op=dist.ReduceOp.MAX)
    return float(box)
