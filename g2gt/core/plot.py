"""Attention heatmaps (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import os
from typing import Mapping, Sequence

from torch import Tensor

__all__ = ["plot_attention"]


def plot_attention(tokens: Sequence[str], weights: Mapping[int, Tensor], path: str | os.PathLike) -> None:
    """Save a grid of heatmaps: one row per layer, one column per head.

    Args:
        tokens: the ``n`` node labels (query rows and key columns).
        weights: ``layer -> [H, n, n]`` attention probabilities (rows = queries).
        path: output image (format from the extension).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = sorted(weights)
    if not layers:
        raise ValueError("no attention weights to plot")
    H = int(weights[layers[0]].shape[0])
    n = len(tokens)
    for k in layers:
        if tuple(weights[k].shape) != (H, n, n):
            raise ValueError(f"layer {k}: weights of shape {tuple(weights[k].shape)}, expected ({H}, {n}, {n})")
    cell = max(2.2, 0.22 * n)
    fig, axes = plt.subplots(len(layers), H, figsize=(cell * H, cell * len(layers)), squeeze=False)
    for r, k in enumerate(layers):
        for h in range(H):
            ax = axes[r][h]
            ax.imshow(weights[k][h].float().numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(f"layer {k} head {h}", fontsize=8)
            ax.set_xticks(range(n))
            ax.set_yticks(range(n))
            ax.set_xticklabels(tokens, rotation=90, fontsize=6)
            ax.set_yticklabels(tokens, fontsize=6)
    fig.tight_layout()
    fig.savefig(os.fspath(path), dpi=100)
    plt.close(fig)
