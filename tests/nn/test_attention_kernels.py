"""The blocked label-attention kernels (C++ and torch paths) against a naive float64 reference: values and
gradients over block boundaries, label-table sizes, dtypes, masks and strides; nothing [B, H, n, n] kept for
backward; the build fallback. The CUDA FlexAttention path runs where CUDA exists."""

from __future__ import annotations

import logging
import warnings

import pytest
import torch

from g2gt.nn import GraphAttention, label_blocked, label_cpp
from g2gt.nn.label_kernels import LabelAttentionFunction, compact_labels

PATHS = ["cpp", "torch"]


@pytest.fixture(autouse=True)
def _cpp_required(request):
    """A ``path="cpp"`` case runs the compiled kernel or fails; it skips only where no compiler is present."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("path") == "cpp":
        request.getfixturevalue("cpp_kernel")


def naive(q, k, v, a_k, a_v, labels, offsets, kpm, allowed, add, causal, offset, scale):
    """The definition, materialising everything: ``[B, H, nq, nk]`` scores, per-pair label lookups."""
    B, H, nq, _ = q.shape
    nk = k.shape[2]
    s = q @ k.transpose(-1, -2) * scale
    qa = q @ a_k.t() * scale
    idx = [(labels[:, c].long() + off).unsqueeze(1).expand(B, H, nq, nk) for c, off in enumerate(offsets)]
    for ix in idx:
        s = s + qa.gather(-1, ix)
    if add is not None:
        s = s + add
    vis = torch.ones(B, H, nq, nk, dtype=torch.bool)
    if causal:
        vis = vis & (torch.arange(nk)[None, :] <= torch.arange(nq)[:, None] + offset)
    if kpm is not None:
        vis = vis & ~kpm[:, None, None, :]
    if allowed is not None:
        vis = vis & allowed
    alive = vis.any(-1, keepdim=True)
    s = torch.where(alive, s.masked_fill(~vis, float("-inf")), torch.zeros_like(s))
    p = torch.softmax(s, -1) * alive
    out = p @ v
    if a_v is not None:
        per = torch.zeros(B, H, nq, a_k.shape[0], dtype=q.dtype)
        for ix in idx:
            per = per.scatter_add(-1, ix, p)
        out = out + per @ a_v
    return out


def case(sizes, dtype=torch.float64, B=3, H=2, nq=21, nk=26, dh=8, values=True, masks=True, broadcast=False,
         strided=False, seed=0):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        return torch.randn(*shape, generator=g, dtype=dtype)

    if strided:  # q, k, v as views of one packed [B, n, 3, H, dh] projection, as GraphAttention makes them
        packed = rnd(B, nq, 3, H, dh)
        q, k, v = (packed[:, :, i].transpose(1, 2) for i in range(3))
        nk = nq
    else:
        q, k, v = rnd(B, H, nq, dh), rnd(B, H, nk, dh), rnd(B, H, nk, dh)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    L = sum(sizes)
    a_k = rnd(L, dh).requires_grad_()
    a_v = rnd(L, dh).requires_grad_() if values else None
    labels = torch.stack([torch.randint(0, s, (1 if broadcast else B, nq, nk), generator=g) for s in sizes], 1)
    offsets = [sum(sizes[:c]) for c in range(len(sizes))]
    kpm = allowed = add = None
    if masks:
        kpm = torch.zeros(B, nk, dtype=torch.bool)
        kpm[0, nk - 4 :] = True
        kpm[1] = True  # example 1: nothing to attend to (zeros, no gradient)
        allowed = torch.rand(1, H, nq, nk, generator=g) > 0.25
        allowed[0, :, 2] = False  # query 2: a fully masked row in every example and head
        add = rnd(B, 1, nq, nk)
    return q, k, v, a_k, a_v, labels, offsets, kpm, allowed, add


def run(path, monkeypatch, q, k, v, a_k, a_v, labels, offsets, kpm, allowed, add, causal, offset, sizes):
    monkeypatch.setenv("G2GT_LABEL_KERNEL", path)
    assert (path == "cpp") == (label_cpp.cpp_kernels() is not None)  # a "cpp" case never runs the torch path
    monkeypatch.setenv("G2GT_LABEL_BLOCK_ROWS", "5")  # several blocks, a short last one, 4-row scatter tails
    monkeypatch.setattr(label_blocked, "BUDGET", 2 * 5 * k.shape[2] * q.shape[0])
    return LabelAttentionFunction.apply(q, k, v, a_k, a_v, compact_labels(labels, sizes), kpm, allowed, add,
                                        offsets, causal, offset, q.shape[-1] ** -0.5)


def compare(out, ref, ins, atol, rtol):
    torch.testing.assert_close(out, ref, atol=atol, rtol=rtol)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(9), dtype=out.dtype)
    ga = torch.autograd.grad((out * g).sum(), ins, allow_unused=True)
    gb = torch.autograd.grad((ref * g.to(ref.dtype)).sum(), ins, allow_unused=True)
    for name, a, b in zip(["q", "k", "v", "a_k", "a_v"], ga, gb):
        torch.testing.assert_close(a, b.to(a.dtype), atol=atol, rtol=rtol, msg=lambda m, name=name: f"d{name}: {m}")


SIZES = {  # label-table sizes: the gather's in-register slices (<= 32, 64, 128 entries), beyond, int16 labels
    "two-small": [5, 7], "one-40": [40], "one-100": [100], "one-200": [200], "int16": [300, 4],
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("sizes", list(SIZES.values()), ids=list(SIZES))
@pytest.mark.parametrize("values", [False, True], ids=["keys", "keys+values"])
def test_matches_naive_float64(path, sizes, values, monkeypatch):
    args = case(sizes, values=values)
    q, k, v, a_k, a_v = args[:5]
    for causal, offset in ((False, 0), (True, args[1].shape[2] - args[0].shape[2])):  # causal cross-attention
        out = run(path, monkeypatch, *args, causal, offset, sizes)
        ref = naive(*args, causal, offset, q.shape[-1] ** -0.5)
        assert out[1].abs().max() == 0 and out[:, :, 2].abs().max() == 0  # no visible key: zeros
        compare(out, ref, [q, k, v, a_k] + ([a_v] if values else []), atol=1e-10, rtol=1e-8)


@pytest.mark.parametrize("path", PATHS)
def test_strided_inputs_broadcast_labels_and_no_masks(path, monkeypatch):
    sizes = [9, 3]
    args = case(sizes, masks=False, broadcast=True, strided=True, seed=3)
    assert not args[0].is_contiguous()
    out = run(path, monkeypatch, *args, True, 0, sizes)
    ref = naive(*args, True, 0, args[0].shape[-1] ** -0.5)
    compare(out, ref, list(args[:5]), atol=1e-10, rtol=1e-8)


@pytest.mark.parametrize("path,gemm", [("cpp", "tiles"), ("cpp", "aten"), ("torch", "-")])
@pytest.mark.parametrize("threads,causal", [(1, False), (2, True)])
def test_float32_and_threads(path, gemm, threads, causal, monkeypatch):
    """float32 (the kernel's fast exponential, its register-tile or ATen products) against the float64
    reference; two threads share the table gradients."""
    monkeypatch.setenv("G2GT_LABEL_GEMM", gemm)
    sizes = [18, 60]
    args = case(sizes, dtype=torch.float32, B=4, H=3, nq=40, nk=37, dh=20, seed=5)
    ref_args = [None if t is None else t.detach().double().requires_grad_(t.requires_grad) for t in args[:5]]
    ref_args += [a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args[5:]]
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        out = run(path, monkeypatch, *args, causal, -3, sizes)  # causal: queries 0-2 see no key
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
        grads = torch.autograd.grad((out * g).sum(), list(args[:5]))
    finally:
        torch.set_num_threads(before)
    ref = naive(*ref_args, causal, -3, 20**-0.5)
    ref_grads = torch.autograd.grad((ref * g.double()).sum(), ref_args[:5])
    torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=1e-4)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a.double(), b, atol=5e-5, rtol=1e-3)


@pytest.mark.parametrize("path", PATHS)
def test_nothing_quadratic_is_saved_for_backward(path, monkeypatch):
    """Autograd keeps q, k, v, the output, the log-sum-exp and uint8 labels: no float [B, H, n, n] tensor."""
    monkeypatch.setenv("G2GT_LABEL_KERNEL", path)
    B, n, D, H = 2, 96, 16, 4
    torch.manual_seed(0)
    m = GraphAttention(D, H, [20, 9], value_labels=True)
    x = torch.randn(B, n, D, requires_grad=True)
    labels = torch.stack([torch.randint(0, 20, (B, n, n)), torch.randint(0, 9, (B, n, n))], 1)  # int64 given
    saved: list[torch.Tensor] = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = m(x, labels, key_padding_mask=torch.zeros(B, n, dtype=torch.bool), causal=True)
    assert saved
    for t in saved:
        if t.is_floating_point():
            assert t.numel() < B * H * n * n // 8, f"a float tensor of shape {tuple(t.shape)} is kept for backward"
        else:
            assert t.element_size() == 1, f"labels kept as {t.dtype}, expected uint8"
    out.sum().backward()
    assert m.label_key.grad.abs().max() > 0 and m.label_value.grad.abs().max() > 0


def test_kernel_choice_and_build_fallback(tmp_path, monkeypatch, capfd, g2gt_log):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    monkeypatch.setenv("G2GT_LABEL_KERNEL", "torch")
    assert label_cpp.cpp_kernels() is None
    monkeypatch.setenv("G2GT_LABEL_KERNEL", "fast")
    with pytest.raises(ValueError, match="G2GT_LABEL_KERNEL must be 'cpp' or 'torch'"):
        label_cpp.cpp_kernels()
    with pytest.warns(RuntimeWarning, match="missing; GraphAttention uses its slower torch label path"):
        assert label_cpp.build(tmp_path / "absent.cpp") is None
    assert "absent.cpp is missing" in label_cpp.build_error()
    capfd.readouterr()
    broken = tmp_path / "broken.cpp"
    broken.write_text('#include "no_such_header_g2gt.h"\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert label_cpp.build(broken) is None
    notes = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(notes) == 1 and "could not build the C++ label-attention kernel" in notes[0]
    assert "\n" not in notes[0]  # one line
    assert label_cpp.build_error() == notes[0]
    said = g2gt_log.messages(logging.INFO)
    assert said == [label_cpp.ANNOUNCE.removeprefix("g2gt: ")]  # the wait is announced once, before the compiler runs


def test_cpp_kernel_is_the_path_taken(cpp_kernel, monkeypatch):
    """Where the kernel builds, GraphAttention's CPU forward and backward run it, never the torch blocks."""
    calls = []
    for name, mod, fns in (("cpp", label_cpp, ("forward", "backward")), ("torch", label_blocked, ("forward",))):
        for fn in fns:
            inner = getattr(mod, fn)
            monkeypatch.setattr(mod, fn, lambda *a, _i=inner, _n=f"{name}.{fn}", **kw: calls.append(_n) or _i(*a, **kw))
    m = GraphAttention(16, 2, [7, 3], value_labels=True)
    x = torch.randn(2, 9, 16, requires_grad=True)
    labels = torch.stack([torch.randint(0, 7, (2, 9, 9)), torch.randint(0, 3, (2, 9, 9))], 1)
    m(x, labels).sum().backward()
    assert calls == ["cpp.forward", "cpp.backward"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the FlexAttention label path is the CUDA path")
def test_cuda_flex_path_matches_reference_with_gradients():
    """Keys-only label attention on CUDA through compiled FlexAttention (``backend="flex"``: label bias in score_mod,
    two channels, so two captured label-score tensors; masks as a BlockMask) against the float64 reference,
    gradients to the label table included."""
    from g2gt.nn.label_flex import flex_trains_label_bias

    if not flex_trains_label_bias():
        pytest.skip("this torch's FlexAttention does not differentiate captured tensors")
    torch.manual_seed(0)
    m = GraphAttention(64, 4, [11, 5], value_labels=False, backend="flex").cuda()
    ref_m = GraphAttention(64, 4, [11, 5], value_labels=False).double()
    ref_m.load_state_dict({k: v.double().cpu() for k, v in m.state_dict().items()})
    B, n = 2, 37
    x = torch.randn(B, n, 64, device="cuda", requires_grad=True)
    labels = torch.stack([torch.randint(0, 11, (B, n, n)), torch.randint(0, 5, (B, n, n))], 1).to(torch.uint8)
    kpm = torch.zeros(B, n, dtype=torch.bool)
    kpm[1, 30:] = True
    out = m(x, labels.cuda(), kpm.cuda(), causal=True)
    assert m.last_label_path == "flex"
    xr = x.detach().double().cpu().requires_grad_()
    ref = ref_m(xr, labels, kpm, causal=True)
    torch.testing.assert_close(out.double().cpu(), ref, atol=2e-4, rtol=1e-3)
    g = torch.randn(B, n, 64, dtype=torch.float64)
    (out * g.cuda().float()).sum().backward()
    (ref * g).sum().backward()
    torch.testing.assert_close(x.grad.double().cpu(), xr.grad, atol=2e-4, rtol=1e-3)
    torch.testing.assert_close(m.label_key.grad.double().cpu(), ref_m.label_key.grad, atol=2e-4, rtol=1e-3)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("values", [False, True], ids=["keys", "keys+values"])
def test_sparse_labels_match_naive(path, values, monkeypatch):
    """Parser-like labels (clipped relative positions + a tree): a block names few of the table's rows, which
    the C++ kernel renumbers; results and table gradients stay those of the whole table."""
    sizes = [9, 101]
    args = list(case(sizes, values=values, B=3, nq=23, nk=23, seed=7))
    g = torch.Generator().manual_seed(8)
    n = 23
    i = torch.arange(n)
    pos = ((i[None, :] - i[:, None]).clamp(-4, 4) + 4).expand(3, n, n)
    dep = torch.zeros(3, n, n, dtype=torch.long)
    heads, rel = torch.randint(0, n, (3, n), generator=g), torch.randint(1, 50, (3, n), generator=g)
    dep[torch.arange(3)[:, None], i[None, :], heads] = rel
    dep[torch.arange(3)[:, None], heads, i[None, :]] = rel + 50
    args[5] = torch.stack([pos, dep], 1)
    q, k, v, a_k, a_v = args[:5]
    out = run(path, monkeypatch, *args, True, 0, sizes)
    ref = naive(*args, True, 0, q.shape[-1] ** -0.5)
    compare(out, ref, [q, k, v, a_k] + ([a_v] if values else []), atol=1e-10, rtol=1e-8)


@pytest.mark.parametrize("gemm", ["tiles", "aten"])
@pytest.mark.parametrize("values", [False, True], ids=["keys", "keys+values"])
def test_label_runs_float32(gemm, values, cpp_kernel, monkeypatch):
    """Rows made of long runs of one label (clipped relative positions; a tree channel that is mostly "no
    edge"; rows with a single label throughout), over more keys than a vector holds and a ragged tail: the
    float32 kernel, which sums the run labels in registers, against the float64 reference."""
    monkeypatch.setenv("G2GT_LABEL_GEMM", gemm)
    sizes, B, n = [9, 11], 3, 53
    args = list(case(sizes, dtype=torch.float32, B=B, H=2, nq=n, nk=n, dh=16, values=values, seed=11))
    g = torch.Generator().manual_seed(12)
    i = torch.arange(n)
    pos = ((i[None, :] - i[:, None]).clamp(-4, 4) + 4).repeat(B, 1, 1)
    dep = torch.zeros(B, n, n, dtype=torch.long)
    dep[torch.arange(B)[:, None], i[None, :], torch.randint(0, n, (B, n), generator=g)] = torch.randint(
        1, 11, (B, n), generator=g)
    pos[2, 5], dep[2, 5], dep[0, 7, :] = 3, 0, 6  # single-label rows
    args[5] = torch.stack([pos, dep], 1)
    ref_args = [None if t is None else t.detach().double().requires_grad_(t.requires_grad) for t in args[:5]]
    ref_args += [a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args[5:]]
    out = run("cpp", monkeypatch, *args, False, 0, sizes)
    ref = naive(*ref_args, False, 0, 16**-0.5)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    ins = [t for t in args[:5] if t is not None]
    grads = torch.autograd.grad((out * grad).sum(), ins)
    ref_grads = torch.autograd.grad((ref * grad.double()).sum(), [t for t in ref_args[:5] if t is not None])
    torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=1e-4)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a.double(), b, atol=5e-5, rtol=1e-3)


@pytest.mark.parametrize("gemm", ["tiles", "aten"])
@pytest.mark.parametrize("n", [16, 37])
def test_one_channel_value_labels_float32(gemm, n, cpp_kernel, monkeypatch):
    """One label channel with value labels, float32 (the vectorised gathers and scatters over whole vectors of
    keys and a ragged tail): gradients against the float64 reference."""
    monkeypatch.setenv("G2GT_LABEL_GEMM", gemm)
    sizes = [40]
    args = list(case(sizes, dtype=torch.float32, B=3, H=2, nq=n, nk=n, dh=16, values=True, seed=21))
    ref_args = [None if t is None else t.detach().double().requires_grad_(t.requires_grad) for t in args[:5]]
    ref_args += [a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args[5:]]
    out = run("cpp", monkeypatch, *args, False, 0, sizes)
    ref = naive(*ref_args, False, 0, 16**-0.5)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
    grads = torch.autograd.grad((out * grad).sum(), [t for t in args[:5] if t is not None])
    ref_grads = torch.autograd.grad((ref * grad.double()).sum(), [t for t in ref_args[:5] if t is not None])
    assert len(grads) == 5  # q, k, v and both label tables
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a.double(), b, atol=5e-5, rtol=1e-3)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("values", [False, True])
def test_narrow_inputs_at_inference_are_read_in_place_with_the_float32_arithmetic(dtype, values, cpp_kernel):
    """bfloat16 / float16 q, k, v (strided views of one packed projection) at inference: the kernel widens
    them as it reads them and gives exactly the float32 kernel's output on float32 copies, narrowed; with
    gradients the float32 copies are made (the same numbers)."""
    B, H, n, dh, L = 3, 2, 37, 16, 20
    qkv = torch.randn(B, n, 3, H, dh).to(dtype)
    q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
    a_k = torch.randn(L, dh)
    a_v = torch.randn(L, dh) if values else None
    labels = torch.randint(0, L, (B, 1, n, n), dtype=torch.uint8)
    kpm = torch.zeros(B, n, dtype=torch.bool)
    kpm[1, 30:] = True
    args = (labels, kpm, None, None, [0], False, 0, dh**-0.5)  # LabelAttentionFunction's order
    ref, _ = label_cpp.forward(label_cpp.cpp_kernels(), q.float(), k.float(), v.float(), a_k, a_v, labels, [0], kpm,
                               None, None, False, 0, dh**-0.5)
    with torch.inference_mode():
        out = LabelAttentionFunction.apply(q, k, v, a_k, a_v, *args)
    assert out.dtype == dtype and torch.equal(out, ref.to(dtype))
    qg = q.detach().clone().requires_grad_()
    out_grad = LabelAttentionFunction.apply(qg, k, v, a_k, a_v, *args)
    assert torch.equal(out_grad.detach(), ref.to(dtype))
    out_grad.float().sum().backward()
    assert qg.grad is not None and qg.grad.dtype == dtype


def test_packed_projection_gradient_is_handed_on_without_a_copy(cpp_kernel, monkeypatch):
    """Self-attention's packed q/k/v projection: the compiled backward writes dq, dk, dv as the thirds of one
    [B, n, 3d] buffer and that buffer is the projection's gradient (no concatenation); the gradients equal the
    torch path's in float64."""
    from g2gt.nn import attention

    seen = []
    real = attention._thirds_of_one
    monkeypatch.setattr(attention, "_thirds_of_one", lambda *a: seen.append(real(*a)) or seen[-1])
    grads = {}
    for path in PATHS:
        monkeypatch.setenv("G2GT_LABEL_KERNEL", path)
        torch.manual_seed(0)
        attn = GraphAttention(64, 4, [7, 5], value_labels=True).double()
        x = torch.randn(3, 30, 64, dtype=torch.float64, requires_grad=True)
        labels = torch.stack([torch.randint(0, 7, (3, 30, 30)), torch.randint(0, 5, (3, 30, 30))], 1)
        out = attn(x, labels)
        (out * torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view_as(out)).sum().backward()
        grads[path] = [x.grad] + [p.grad for p in attn.parameters()]
    assert seen == [True, False]  # the kernel's gradients are packed; the torch path's are concatenated
    for a, b in zip(grads["cpp"], grads["torch"]):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
