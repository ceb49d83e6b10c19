"""The fused residual add + LayerNorm (g2gt.nn.residual_norm and its C++ op) against float64 references, and
the encoder's fused inference loop against its layer-by-layer loop."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from g2gt.nn import GraphEncoder
from g2gt.nn.residual_norm import MIN_KERNEL_ELEMENTS, add_layer_norm


def _norm(d: int, dtype: torch.dtype = torch.float32) -> nn.LayerNorm:
    norm = nn.LayerNorm(d)
    with torch.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    return norm.to(dtype)


def _reference(s: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
    return F.layer_norm(s.double(), norm.normalized_shape, norm.weight.double(), norm.bias.double(), norm.eps)


# widths: whole vectors, a tail, narrower than one vector; rows: a whole block of 16, a partial one
@pytest.mark.parametrize("shape", [(2, 16, 64), (3, 7, 100), (5, 9), (1, 1, 256)])
@pytest.mark.parametrize("with_y", [True, False], ids=["add", "norm-only"])
def test_op_float32_matches_float64(cpp_kernel, shape, with_y):
    d = shape[-1]
    norm = _norm(d)
    x = torch.randn(shape) * 3 + 1
    y = torch.randn(shape) if with_y else None
    with torch.inference_mode():
        s, out = cpp_kernel.add_layer_norm(x, y, norm.weight, norm.bias, norm.eps)
    want_s = x + y if with_y else x
    if with_y:
        assert torch.equal(s, want_s)  # one float32 addition per element: exact
    else:
        assert s.numel() == 0
    torch.testing.assert_close(out.double(), _reference(want_s, norm), rtol=0, atol=2e-5)


@pytest.mark.parametrize("with_y", [True, False], ids=["add", "norm-only"])
def test_op_bfloat16_rounds_like_torch(cpp_kernel, with_y):
    """bfloat16: s is x + y rounded to nearest even (torch's bfloat16 add, exactly); the output is the float64
    layer norm of that rounded s, within bfloat16 rounding of the result."""
    d = 64
    norm = _norm(d, torch.bfloat16)
    x = (torch.randn(4, 33, d) * 3).bfloat16()
    y = torch.randn(4, 33, d).bfloat16() if with_y else None
    with torch.inference_mode():
        s, out = cpp_kernel.add_layer_norm(x, y, norm.weight, norm.bias, norm.eps)
    want_s = x + y if with_y else x
    if with_y:
        assert s.dtype == torch.bfloat16 and torch.equal(s, want_s)
    assert out.dtype == torch.bfloat16
    ref = _reference(want_s, norm)
    # bfloat16 keeps 8 significant bits: relative rounding error <= 2^-8 of the value (plus the float32 sums)
    assert ((out.double() - ref).abs() <= ref.abs() * 2.0 ** -8 + 1e-3).all()


def test_op_keeps_nan(cpp_kernel):
    norm = _norm(32, torch.bfloat16)
    x = torch.randn(2, 32).bfloat16()
    x[0, 3] = float("nan")
    with torch.inference_mode():
        _, out = cpp_kernel.add_layer_norm(x, None, norm.weight, norm.bias, norm.eps)
    assert out[0].isnan().all() and not out[1].isnan().any()


def test_op_rejects_mismatched_inputs(cpp_kernel):
    norm = _norm(8)
    with pytest.raises(RuntimeError, match="y must have x's shape and dtype"):
        cpp_kernel.add_layer_norm(torch.randn(2, 8), torch.randn(2, 4), norm.weight, norm.bias, 1e-5)
    with pytest.raises(RuntimeError, match="weight and bias must be"):
        cpp_kernel.add_layer_norm(torch.randn(2, 6), None, norm.weight, norm.bias, 1e-5)
    with pytest.raises(RuntimeError, match="float32 or bfloat16"):
        cpp_kernel.add_layer_norm(torch.randn(2, 8).double(), None, norm.weight, norm.bias, 1e-5)


def test_add_layer_norm_uses_the_kernel_for_large_bfloat16_inference(cpp_kernel, monkeypatch):
    """The function takes the kernel exactly where documented (bfloat16, large, no gradient) and torch's two
    steps elsewhere; both agree with the float64 reference."""
    calls = []
    real = cpp_kernel.add_layer_norm

    class Spy:
        def add_layer_norm(self, *args):
            calls.append(args[0].shape)
            return real(*args)

    from g2gt.nn import residual_norm

    monkeypatch.setattr(residual_norm.label_cpp, "cpp_kernels", lambda: Spy())
    d = 64
    rows = MIN_KERNEL_ELEMENTS // d
    norm = _norm(d, torch.bfloat16)
    big, small = torch.randn(rows, d).bfloat16(), torch.randn(8, d).bfloat16()
    norm32 = _norm(d)
    with torch.inference_mode():
        s, out = add_layer_norm(big, big, norm)
        assert len(calls) == 1
        add_layer_norm(small, small, norm)
        add_layer_norm(big.float(), big.float(), norm32)
        assert len(calls) == 1  # small and float32: torch's path
    torch.testing.assert_close(s, big + big)
    ref = _reference(big + big, norm)
    assert ((out.double() - ref).abs() <= ref.abs() * 2.0 ** -8 + 1e-3).all()
    x = big.clone().requires_grad_()
    s, out = add_layer_norm(x, big, norm)
    assert len(calls) == 1 and out.requires_grad  # a gradient is wanted: torch's path, which autograd sees
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        add_layer_norm(big, big, norm)
    assert len(calls) == 1  # autocast returns float32 layer norms: torch's path


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-LN", "post-LN"])
def test_encoder_fused_loop_equals_layer_loop(norm_first):
    """GraphEncoder in eval mode runs the fused loop; in float64 (torch's path inside) it computes the same
    function as calling its layers one by one, to rounding."""
    enc = GraphEncoder(3, 32, 4, 64, [5], value_labels=True, dropout=0.3, norm_first=norm_first).double().eval()
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    labels = torch.randint(0, 5, (2, 1, 7, 7))
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 5:] = True
    with torch.no_grad():
        fused = enc(x, labels, pad)
        h = x
        for layer in enc.layers:
            h = layer(h, labels, pad)
        want = enc.norm(h).masked_fill(pad[..., None], 0.0)
    torch.testing.assert_close(fused, want, rtol=1e-12, atol=1e-12)


def test_encoder_fused_loop_in_bfloat16_tracks_float64(cpp_kernel):
    """The bfloat16 encoder with the kernel inside stays as close to the float64 encoder as torch's own
    bfloat16 path does (the kernel changes rounding order only)."""
    enc = GraphEncoder(2, 64, 4, 128, [5], value_labels=True, dropout=0.0).eval()
    x = torch.randn(4, 160, 64)  # 4 * 160 * 64 elements: above the kernel's threshold
    assert x.numel() >= MIN_KERNEL_ELEMENTS
    labels = torch.randint(0, 5, (4, 1, 160, 160))
    with torch.inference_mode():
        want = enc.double()(x.double(), labels)
        bf = enc.bfloat16()
        fused = bf(x.bfloat16(), labels).double()
        h = x.bfloat16()
        for layer in bf.layers:
            h = layer(h, labels)
        unfused = bf.norm(h).double()
    err_fused = (fused - want).abs().mean().item()
    err_torch = (unfused - want).abs().mean().item()
    assert err_fused <= 1.25 * err_torch + 1e-3


def test_encoder_hooks_still_fire_in_eval_mode():
    """A forward hook on a layer, a residual wrapper or a norm makes the encoder call its layers one by one
    (the fused loop would skip the hook)."""
    enc = GraphEncoder(2, 32, 4, 64, [5], value_labels=True, dropout=0.0).eval()
    x, labels = torch.randn(2, 40, 32), torch.randint(0, 5, (2, 1, 40, 40))
    for module in (enc.layers[1], enc.layers[0].res_ffn.norm, enc.norm):
        seen = []
        handle = module.register_forward_hook(lambda m, args, out, seen=seen: seen.append(out.shape))
        with torch.inference_mode():
            enc(x, labels)
        handle.remove()
        assert len(seen) == 1
