r"""Residual add + LayerNorm in one pass, for the encoder stacks at inference.

Between two sublayers a pre-LN encoder computes

.. math::

    s = x + y,\qquad \mathrm{LN}(s) = \frac{s - \mu(s)}{\sqrt{\sigma^2(s) + \epsilon}}\, w + b

(``y`` the sublayer's output, ``s`` the residual stream the next sublayer adds to). :func:`add_layer_norm`
returns ``(s, LN(s))``. On the CPU, when no gradient is needed and the tensors are bfloat16 (the inference
dtype ``"auto"`` picks on CPUs with native bfloat16) with at least :data:`MIN_KERNEL_ELEMENTS` elements, it
runs the compiled kernel of :mod:`g2gt.nn.label_cpp` (``csrc/residual_norm.h``: one pass over each block of
rows instead of torch's add followed by its layer norm; about 2.7x faster for ``[64, 96, 64]`` and 1.7x for
``[70, 40, 256]`` on one thread); elsewhere (CUDA, training, float32, where the kernel gained nothing, small
tensors, no compiler, ``G2GT_LABEL_KERNEL=torch``) it is ``x + y`` and ``norm``. Both give the same function: ``s`` is rounded to the input dtype before it is
normalised, as the two-step code does, and only the order of the float32 sums differs.

Under CPU autocast ``x`` takes the torch path (autocast runs layer norm in float32 and returns float32; the
kernel would return bfloat16).

Shapes: ``x, y [..., d]`` (the same shape and dtype) -> ``([..., d], [..., d])``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import label_cpp

__all__ = ["add_layer_norm", "MIN_KERNEL_ELEMENTS"]

MIN_KERNEL_ELEMENTS = 1 << 15  # below this the op call costs more than torch's two steps


def _kernel_fits(x: Tensor, y: Tensor | None, norm: nn.LayerNorm) -> bool:
    if x.device.type != "cpu" or x.dtype != torch.bfloat16 or x.numel() < MIN_KERNEL_ELEMENTS:
        return False
    if y is not None and (y.dtype != x.dtype or y.shape != x.shape or y.device != x.device):
        return False
    if norm.weight is None or norm.bias is None or tuple(norm.normalized_shape) != (x.shape[-1],):
        return False
    if torch.is_grad_enabled() and not torch.is_inference_mode_enabled() and (
        x.requires_grad or (y is not None and y.requires_grad) or norm.weight.requires_grad
    ):
        return False
    return not torch.is_autocast_enabled("cpu")


def add_layer_norm(x: Tensor, y: Tensor | None, norm: nn.LayerNorm) -> tuple[Tensor, Tensor]:
    """``(x + y, norm(x + y))``; with ``y=None``, ``(x, norm(x))``. See the module docstring."""
    if _kernel_fits(x, y, norm):
        ops = label_cpp.cpp_kernels()
        if ops is not None:
            s, out = ops.add_layer_norm(x, y, norm.weight, norm.bias, norm.eps)
            return (x if y is None else s), out
    s = x if y is None else x + y
    return s, norm(s)
