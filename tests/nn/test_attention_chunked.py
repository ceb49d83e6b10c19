"""GraphAttention at inference on long inputs: query chunks give the unchunked result (float64), only
under no-grad, and never hold the scores of more rows than the chunk allows."""

from __future__ import annotations

import pytest
import torch

from g2gt.nn import GraphAttention

D, H = 16, 2


def _layer(value_labels: bool, sizes, seed: int = 0) -> GraphAttention:
    torch.manual_seed(seed)
    return GraphAttention(D, H, sizes, value_labels=value_labels).double().eval()


def _spy(attn: GraphAttention) -> list[int]:
    """Record the query rows of every call of the label path."""
    rows: list[int] = []
    inner = attn._label_attention

    def spy(q, *a, **kw):
        rows.append(q.shape[2])
        return inner(q, *a, **kw)

    attn._label_attention = spy  # type: ignore[method-assign]
    return rows


def _run(attn: GraphAttention, chunk: int | None, *args, **kw) -> torch.Tensor:
    if chunk is not None:
        attn.inference_chunk = chunk
    with torch.inference_mode():
        return attn(*args, **kw)


CASES = [
    pytest.param(True, 10, dict(), id="value-labels"),
    pytest.param(False, 10, dict(), id="keys-only"),
    pytest.param(True, [6, 9], dict(), id="two-channels"),
    pytest.param(True, [6, 9], dict(padding=True), id="padding"),
    pytest.param(False, [6, 9], dict(padding=True, causal=True), id="causal-keys-only"),
    pytest.param(True, 10, dict(float_mask=True), id="float-attn-mask"),
    pytest.param(True, 10, dict(bool_mask=True), id="bool-attn-mask-dead-rows"),
    pytest.param(True, [6, 9], dict(broadcast=True, compact=True), id="broadcast-uint8-labels"),
]


@pytest.mark.parametrize("value_labels,sizes,opts", CASES)
def test_chunked_equals_unchunked(value_labels, sizes, opts):
    B, n = 3, 23
    attn = _layer(value_labels, sizes)
    x = torch.randn(B, n, D, dtype=torch.float64)
    chans = [sizes] if isinstance(sizes, int) else sizes
    lab = torch.stack([torch.randint(0, s, (1 if opts.get("broadcast") else B, n, n)) for s in chans], 1)
    if opts.get("compact"):
        lab = lab.to(torch.uint8)
    if isinstance(sizes, int):
        lab = lab[:, 0]
    kw = {}
    if opts.get("padding"):
        kpm = torch.zeros(B, n, dtype=torch.bool)
        kpm[1, 17:] = True
        kpm[2, 5:] = True
        kw["key_padding_mask"] = kpm
    if opts.get("causal"):
        kw["causal"] = True
    if opts.get("float_mask"):
        kw["attn_mask"] = torch.randn(n, n, dtype=torch.float64)
    if opts.get("bool_mask"):
        m = torch.rand(B * H, n, n) < 0.3
        m[0, 4] = True  # a query with no key left: zeros, chunked or not
        kw["attn_mask"] = m
    whole = _run(attn, None, x, lab, **kw)
    rows = _spy(attn)
    per_row = B * H * n
    chunked = _run(attn, per_row * 4, x, lab, **kw)  # 4 query rows per chunk, the last one shorter
    assert rows == [4] * 5 + [3]
    torch.testing.assert_close(chunked, whole, rtol=1e-10, atol=1e-10)
    assert not chunked.isnan().any()


def test_cross_attention_with_labels_is_chunked_over_queries():
    B, nq, nk = 2, 9, 14
    attn = _layer(True, 7)
    x, mem = torch.randn(B, nq, D, dtype=torch.float64), torch.randn(B, nk, D, dtype=torch.float64)
    lab = torch.randint(0, 7, (B, nq, nk))
    whole = _run(attn, None, x, lab, memory=mem)
    rows = _spy(attn)
    chunked = _run(attn, B * H * nk * 2, x, lab, memory=mem)
    assert rows == [2] * 4 + [1]
    torch.testing.assert_close(chunked, whole, rtol=1e-10, atol=1e-10)


def test_small_inputs_and_training_are_not_chunked():
    B, n = 2, 11
    attn = _layer(True, 10)
    x, lab = torch.randn(B, n, D, dtype=torch.float64), torch.randint(0, 10, (B, n, n))
    rows = _spy(attn)
    _run(attn, None, x, lab)  # the default budget is far above 2 * 2 * 11 * 11
    assert rows == [n]
    attn.inference_chunk = 1
    rows.clear()
    out = attn(x.requires_grad_(), lab)  # gradients wanted: one pass over all rows (the autograd kernels)
    out.sum().backward()
    assert rows == [n] and x.grad is not None
    rows.clear()
    with torch.no_grad():
        attn(x, lab, need_weights=True)  # the weights of every row are returned anyway
    assert rows == []


def test_one_row_per_chunk_at_the_smallest_budget():
    B, n = 1, 6
    attn = _layer(False, [6, 9])
    x = torch.randn(B, n, D, dtype=torch.float64)
    lab = torch.stack([torch.randint(0, s, (B, n, n)) for s in (6, 9)], 1)
    whole = _run(attn, None, x, lab)
    rows = _spy(attn)
    chunked = _run(attn, 1, x, lab)
    assert rows == [1] * n
    torch.testing.assert_close(chunked, whole, rtol=1e-10, atol=1e-10)
