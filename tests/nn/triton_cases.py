"""The checks of the Triton label kernel, run in a process of their own by ``test_label_triton.py``.

Triton decides when a kernel is defined whether it runs compiled (CUDA) or interpreted (``TRITON_INTERPRET=1``,
CPU tensors), so the variable must be set before ``triton`` is first imported: the pytest process (which may
compile FlexAttention on CUDA, or import triton for other reasons) cannot switch. ``python tests/nn/triton_cases.py
--device cpu|cuda --out results.json [names...]`` runs the named cases (all by default) and writes
``{name: {"ok": bool, "error": str, "seconds": float}}``; each case compares the kernel with a float64 reference
(forward and the gradients to q, k, v and both label tables) and raises on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
os.environ.setdefault("G2GT_TRITON_BLOCK", "16,16")  # several tiles and short last ones at these small shapes

from reference import reference_attention  # noqa: E402
from test_attention_kernels import case, naive  # noqa: E402

from g2gt.nn import GraphAttention  # noqa: E402
from g2gt.nn.label_kernels import compact_labels  # noqa: E402
from g2gt.nn.label_triton import MAX_LABELS, triton_label_attention  # noqa: E402

TOL = {torch.float32: (3e-5, 1e-4), torch.bfloat16: (6e-2, 5e-2), torch.float16: (1e-2, 1e-2)}
DEVICE = torch.device("cpu")


def _kernel(args, causal, offset, sizes, dtype, a_k=None, a_v=None):
    """The kernel on ``dtype`` copies of the float64 inputs ``args`` (from ``case``); returns ``(out, leaves)``."""
    q, k, v, ak, av, labels, offsets, kpm, allowed, add = args
    leaves = [t.detach().to(DEVICE, dtype).requires_grad_() for t in (q, k, v)]
    tables = [(ak if a_k is None else a_k).detach().to(DEVICE, torch.float32).requires_grad_()]
    if av is not None:
        tables.append((av if a_v is None else a_v).detach().to(DEVICE, torch.float32).requires_grad_())
    dev = [None if t is None else t.to(DEVICE) for t in (kpm, allowed, add)]
    out = triton_label_attention(*leaves, tables[0], tables[1] if av is not None else None,
                                 compact_labels(labels, sizes).to(DEVICE), offsets, *dev, causal, offset,
                                 q.shape[-1] ** -0.5)
    return out, leaves + tables


def _reference(args, causal, offset, dtype):
    """``naive`` in float64 on the inputs rounded to ``dtype`` (what the kernel reads), and its leaves."""
    q, k, v, ak, av, labels, offsets, kpm, allowed, add = args
    leaves = [t.detach().to(dtype).double().requires_grad_() for t in (q, k, v)]
    tables = [ak.detach().float().double().requires_grad_()]
    if av is not None:
        tables.append(av.detach().float().double().requires_grad_())
    out = naive(*leaves, tables[0], tables[1] if av is not None else None, labels, offsets, kpm, allowed, add,
                causal, offset, q.shape[-1] ** -0.5)
    return out, leaves + tables


def _compare(args, causal, offset, sizes, dtype, **perturbed):
    """Forward and the gradients (q, k, v, a_k, a_v) of the kernel against the float64 reference."""
    atol, rtol = TOL[dtype]
    out, ins = _kernel(args, causal, offset, sizes, dtype, **perturbed)
    ref, ref_ins = _reference(args, causal, offset, dtype)
    assert out.dtype == dtype and torch.isfinite(out).all()
    torch.testing.assert_close(out.double().cpu(), ref, atol=atol, rtol=rtol, msg=lambda m: f"output: {m}")
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    ga = torch.autograd.grad((out.double() * g.to(DEVICE)).sum(), ins)
    gb = torch.autograd.grad((ref * g).sum(), ref_ins)
    for name, a, b in zip(["q", "k", "v", "a_k", "a_v"], ga, gb):
        assert torch.isfinite(a).all(), f"d{name} is not finite"
        scale = max(1.0, float(b.abs().max()))  # the table gradients sum over B, H, nq, nk: compare relative
        torch.testing.assert_close(a.double().cpu() / scale, b / scale, atol=atol, rtol=rtol,
                                   msg=lambda m, name=name: f"d{name}: {m}")
    return out, ga


def _masked_case(sizes, values, dtype=torch.float32):
    args = case(sizes, B=2, H=2, nq=21, nk=26, dh=8, values=values, seed=len(sizes) + 2 * values)
    for causal, offset in ((False, 0), (True, 26 - 21)):  # causal cross-attention: query i sees keys j <= i + 5
        out, grads = _compare(args, causal, offset, sizes, dtype)
        assert out[1].abs().max() == 0 and out[:, :, 2].abs().max() == 0  # nothing visible: zeros
        assert grads[0][1].abs().max() == 0 and grads[0][:, :, 2].abs().max() == 0  # and no gradient


def keys_one_channel():
    _masked_case([9], values=False)


def keys_two_channels():
    _masked_case([5, 7], values=False)


def values_one_channel():
    _masked_case([9], values=True)


def values_two_channels():
    _masked_case([5, 7], values=True)


def bfloat16():
    """(Under the interpreter the kernels get float32 copies: its bfloat16 tl.dot is wrong; CUDA reads bfloat16.)"""
    _masked_case([5, 7], values=True, dtype=torch.bfloat16)


def float16():
    _masked_case([5, 7], values=True, dtype=torch.float16)


def strided_broadcast_no_masks():
    """q, k, v as views of one packed projection, labels broadcast over the batch, no mask at all."""
    sizes = [6, 4]
    args = case(sizes, B=2, H=2, nq=19, dh=16, masks=False, broadcast=True, strided=True, seed=3)
    assert not args[0].is_contiguous()
    _compare(args, False, 0, sizes, torch.float32)


def padding_only_and_head_dim_not_a_power_of_two():
    """Only a key padding mask (one example fully padded), ``dh = 12`` (padded to 16 inside), one key tile."""
    sizes = [11]
    args = list(case(sizes, B=2, H=3, nq=9, nk=13, dh=12, values=True, masks=False, seed=4))
    kpm = torch.zeros(2, 13, dtype=torch.bool)
    kpm[0, 7:] = True
    kpm[1] = True
    args[7] = kpm
    out, _ = _compare(tuple(args), False, 0, sizes, torch.float32)
    assert out[1].abs().max() == 0


def largest_label_table():
    """``MAX_LABELS`` rows over two channels, every id drawn (the last rows of the tables included)."""
    sizes = [MAX_LABELS - 40, 40]
    args = case(sizes, B=2, H=1, nq=17, nk=18, dh=8, values=True, seed=5)
    assert int(args[5][:, 0].max()) == sizes[0] - 1
    _compare(args, True, 1, sizes, torch.float32)


def tables_matter():
    """The comparison can fail: the kernel run with a changed key table, or value table, differs from the
    reference of the original tables (so a kernel ignoring a table would not pass)."""
    sizes = [5, 7]
    args = case(sizes, B=2, H=2, nq=21, nk=26, dh=8, values=True, seed=6)
    for which in ("a_k", "a_v"):
        table = args[3] if which == "a_k" else args[4]
        changed = table.detach().clone()
        changed[3] += 0.5  # one row of channel 0
        try:
            _compare(args, False, 0, sizes, torch.float32, **{which: changed})
        except AssertionError:
            continue
        raise AssertionError(f"changing {which} did not change the kernel's result")


def graph_attention_backend():
    """``GraphAttention(backend="triton")`` against the naive float64 module reference: two channels, value labels,
    padding, causal and a boolean ``attn_mask`` together; gradients to the input and every parameter."""
    torch.manual_seed(0)
    m = GraphAttention(32, 4, [7, 3], value_labels=True, backend="triton").to(DEVICE)
    B, n = 2, 19
    x = torch.randn(B, n, 32, device=DEVICE, requires_grad=True)
    labels = torch.stack([torch.randint(0, 7, (B, n, n)), torch.randint(0, 3, (B, n, n))], 1).to(DEVICE)
    kpm = torch.zeros(B, n, dtype=torch.bool, device=DEVICE)
    kpm[1, 15:] = True
    am = torch.rand(n, n, generator=torch.Generator().manual_seed(1)) < 0.2
    am[4] = True  # query 4 sees nothing: zeros
    out = m(x, labels, kpm, causal=True, attn_mask=am.to(DEVICE))
    assert m.last_label_path == "triton", m.last_label_path
    m64 = GraphAttention(32, 4, [7, 3], value_labels=True).double()
    m64.load_state_dict({k: v.double().cpu() for k, v in m.state_dict().items()})
    x64 = x.detach().cpu().double().requires_grad_()
    ref = reference_attention(m64, x64, labels.cpu(), kpm.cpu(), True, attn_mask=am)
    torch.testing.assert_close(out.double().cpu(), ref, atol=3e-5, rtol=1e-4)
    torch.testing.assert_close(out[:, 4].detach(), m.out_proj.bias.detach().expand(B, -1))  # a dead query: the bias
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    ga = torch.autograd.grad((out * g.to(DEVICE, out.dtype)).sum(), [x] + list(m.parameters()))
    gb = torch.autograd.grad((ref * g).sum(), [x64] + list(m64.parameters()))
    for (name, _), a, b in zip([("x", None)] + list(m.named_parameters()), ga, gb, strict=True):
        torch.testing.assert_close(a.double().cpu(), b, atol=1e-4, rtol=1e-4, msg=lambda s, name=name: f"{name}: {s}")


def limits_are_refused():
    """Above ``MAX_LABELS`` table rows the kernel refuses with the limit in the message."""
    q = torch.zeros(1, 1, 4, 8, device=DEVICE)
    try:
        triton_label_attention(q, q, q, torch.zeros(MAX_LABELS + 1, 8, device=DEVICE), None,
                               torch.zeros(1, 1, 4, 4, dtype=torch.uint8, device=DEVICE), [0])
    except ValueError as err:
        assert f"at most {MAX_LABELS}" in str(err), err
        return
    raise AssertionError("MAX_LABELS + 1 table rows were accepted")


CASES = {f.__name__: f for f in (
    keys_one_channel, keys_two_channels, values_one_channel, values_two_channels, bfloat16, float16,
    strided_broadcast_no_masks, padding_only_and_head_dim_not_a_power_of_two, largest_label_table, tables_matter,
    graph_attention_backend, limits_are_refused,
)}


def main(argv: list[str] | None = None) -> int:
    global DEVICE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", required=True)
    ap.add_argument("names", nargs="*", default=list(CASES))
    args = ap.parse_args(argv)
    DEVICE = torch.device(args.device)
    torch.set_num_threads(1)
    results = {}
    for name in args.names:
        t0 = time.perf_counter()
        try:
            CASES[name]()
            results[name] = {"ok": True, "error": ""}
        except Exception:  # noqa: BLE001 - reported to the test that asked for this case
            results[name] = {"ok": False, "error": traceback.format_exc()}
        results[name]["seconds"] = time.perf_counter() - t0
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
