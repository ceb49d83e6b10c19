r"""FlexAttention with the label bias read inside ``score_mod`` (a CUDA path of keys-only label attention, the
second after the Triton kernel of :mod:`g2gt.nn.label_triton`).

.. math::

    S_{ij} = s\,q_i\cdot k_j + \sum_c qa^c_{b,h,i,\;l^c_{ij}} + m_{ij},
    \qquad qa^c = s\,q\,(a_K^c)^\top \;[B, H, n_q, L_c],

with ``m`` the float mask (in ``score_mod``); causal, padding and a boolean mask form a ``BlockMask``
(``create_block_mask``), so blocks with nothing visible are skipped. One ``qa^c`` tensor per channel, each indexed
once in ``score_mod``: inductor refuses "multiple indexing operations on the same tensor that requires gradients"
(what indexing one ``[B, H, nq, L]`` tensor once per channel did). On CUDA the kernel
is ``torch.compile``d once per process: it never builds the ``[B, H, nq, nk]`` scores, and its backward
scatters the gradient of ``qa`` (a captured tensor that requires grad, torch >= 2.6) by label inside the
kernel, so gradients reach ``q`` and the label table ``a_K``. Elsewhere FlexAttention runs eagerly (it
materialises the scores, and has no backward on CPU): GraphAttention uses that only for ``backend="flex"``
inference. Unmeasured on a GPU so far (no GPU was available when this was written).
"""

from __future__ import annotations

import warnings
from typing import Sequence

import torch
from torch import Tensor

__all__ = ["flex_attention_available", "flex_trains_label_bias", "flex_label_attention", "dead_rows"]

_COMPILED: dict[str, object] = {}


def flex_attention_available(device: torch.device | str = "cpu") -> bool:
    """Whether ``torch.nn.attention.flex_attention`` exists in this torch build."""
    try:
        from torch.nn.attention.flex_attention import flex_attention  # noqa: F401
    except Exception:
        return False
    return True


def flex_trains_label_bias() -> bool:
    """Whether compiled FlexAttention differentiates captured tensors in ``score_mod`` (torch >= 2.6)."""
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 6) and flex_attention_available()


def _kernel(device_type: str):
    """``flex_attention``, compiled once per process on CUDA (eager elsewhere, or if compiling fails)."""
    import torch.nn.attention.flex_attention as fa

    if device_type != "cuda":
        return fa.flex_attention
    if "cuda" not in _COMPILED:
        try:
            _COMPILED["cuda"] = torch.compile(fa.flex_attention)
        except Exception as err:  # pragma: no cover - toolchain dependent
            warnings.warn(f"g2gt: torch.compile(flex_attention) failed ({type(err).__name__}); eager FlexAttention "
                          "materialises the scores", RuntimeWarning, stacklevel=3)
            _COMPILED["cuda"] = fa.flex_attention
    return _COMPILED["cuda"]


def dead_rows(kpm: Tensor | None, allowed: Tensor | None, causal: bool, offset: int, nq: int, nk: int,
              device: torch.device) -> Tensor | None:
    """``[B|1, H|1, nq, 1]`` bool, True where a query sees no key (None when there is none), from the mask
    parts (``kpm [B|1, nk]`` True = padding, ``allowed [B|1, H|1, nq|1, nk]`` True = may attend)."""
    if allowed is not None:
        vis = allowed
        if kpm is not None:
            vis = vis & ~kpm.bool()[:, None, None, :]
        if causal:
            vis = vis & (torch.arange(nk, device=device) <= torch.arange(nq, device=device)[:, None] + offset)
        dead = ~vis.any(-1, keepdim=True)
    else:
        i = torch.arange(nq, device=device)[None, None, :, None] + offset  # last visible key when causal
        if kpm is not None:
            keep = ~kpm.bool()
            first = torch.where(keep.any(-1), keep.float().argmax(-1), nk)  # first non-padding key, [B]
            dead = (i < first[:, None, None, None]) if causal else (first[:, None, None, None] >= nk).expand(
                -1, 1, nq, 1)
        elif causal:
            dead = i < 0
        else:
            return None
    return dead if bool(dead.any()) else None


def _block_mask(kpm: Tensor | None, allowed: Tensor | None, causal: bool, offset: int, B: int, H: int, nq: int,
                nk: int, device: torch.device):
    """The masks as a FlexAttention ``BlockMask`` (``mask_mod`` True = may attend), so that blocks with no visible
    key are skipped; None when nothing is masked. Its batch / head sizes are 1 (None) where the masks broadcast."""
    if kpm is None and allowed is None and not causal:
        return None
    from torch.nn.attention.flex_attention import create_block_mask

    Bm = B if B > 1 and any(t is not None and t.shape[0] == B for t in (kpm, allowed)) else None
    Hm = H if H > 1 and allowed is not None and allowed.shape[1] == H else None
    pick = _picker(B, H, nq)  # mask_mod also sees every (b, h) of the call, not only the BlockMask's
    ab, ah, ai = pick(allowed, 0), pick(allowed, 1), pick(allowed, 2)
    kb = pick(kpm, 0)

    def mask_mod(b, h, q_idx, kv_idx):
        keep = kv_idx >= 0
        if allowed is not None:
            keep = keep & allowed[ab(b), ah(h), ai(q_idx), kv_idx]
        if kpm is not None:
            keep = keep & ~kpm[kb(b), kv_idx]
        if causal:
            keep = keep & (kv_idx <= q_idx + offset)
        return keep

    return create_block_mask(mask_mod, Bm, Hm, nq, nk, device=device, _compile=device.type == "cuda")


def _picker(B: int, H: int, nq: int):
    """``pick(t, dim)``: an index map into ``t``'s dim ``dim`` (batch, head, query), which may be 1 (broadcast)."""
    full = (B, H, nq)

    def pick(t: Tensor | None, dim: int):
        return (lambda i: i) if t is None or t.shape[dim] == full[dim] else (lambda i: i * 0)

    return pick


def flex_label_attention(q: Tensor, k: Tensor, v: Tensor, a_k: Tensor | None, labels: Tensor | None,
                         offsets: Sequence[int], kpm: Tensor | None, allowed: Tensor | None, add: Tensor | None,
                         causal: bool, offset: int, scale: float) -> Tensor:
    """``[B, H, nq, dh]``: attention with ``score_mod`` adding the label bias and the float mask ``add``
    (``[B|1, H|1, nq|1, nk]``), and a ``BlockMask`` for ``kpm [B|1, nk]`` (True = padding), ``allowed`` (like
    ``add``, False = masked) and ``j > i + offset`` when ``causal``. The label bias: ``labels [B|1, C, nq, nk]``
    channel-local ids, ``offsets[c]`` channel c's first row of ``a_k [L, dh]``; channel c reads its own ``qa_c = s
    q a_k[o_c : o_c + L_c]^T`` (``[B, H, nq, L_c]``), a separate tensor, because compiled FlexAttention refuses
    two indexing operations on one captured tensor that requires a gradient. Queries with no visible key give
    zeros."""
    B, H, nq, _ = q.shape
    nk = k.shape[2]
    n_ch = 0 if labels is None else labels.shape[1]
    ends = [int(o) for o in offsets[1:]] + ([a_k.shape[0]] if a_k is not None else [])
    qa = [torch.matmul(q, a_k[int(o):e].to(q.dtype).t()) * scale for o, e in zip(offsets, ends)]  # [B, H, nq, L_c]
    lab = [labels[:, c] for c in range(n_ch)]  # [B|1, nq, nk] each
    add = None if add is None else add.to(q.dtype)
    pick = _picker(B, H, nq)
    lb = pick(labels, 0)
    db, dh_, di = pick(add, 0), pick(add, 1), pick(add, 2)

    def score_mod(score, b, h, q_idx, kv_idx):
        for c in range(n_ch):
            score = score + qa[c][b, h, q_idx, lab[c][lb(b), q_idx, kv_idx].long()]
        if add is not None:
            score = score + add[db(b), dh_(h), di(q_idx), kv_idx]
        return score

    block_mask = _block_mask(kpm, allowed, causal, offset, B, H, nq, nk, q.device)
    out = _kernel(q.device.type)(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale)
    dead = dead_rows(kpm, allowed, causal, offset, nq, nk, q.device)
    return out if dead is None else out.masked_fill(dead, 0.0)
