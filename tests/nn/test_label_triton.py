"""The Triton label kernel (g2gt.nn.label_triton) against the float64 reference, forward and gradients: keys-only and
keys + values, one and two channels, padding, causal, boolean and float masks, fully masked rows, sizes that are not a
multiple of the tile, float32 / bfloat16 / float16, and GraphAttention(backend="triton"); plus the backend choice.

The kernel checks run in one child process (``triton_cases.py``): on CPU under Triton's interpreter
(``TRITON_INTERPRET=1``, which must be set before triton is imported, so not in this process), on CUDA compiled.
Each test here reads its own case's result, so a failing case fails its own test with the child's traceback."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from g2gt.nn import GraphAttention
from g2gt.nn.label_kernels import choose_label_backend
from g2gt.nn.label_triton import MAX_HEAD_DIM, MAX_LABELS, unsupported

RUNNER = Path(__file__).with_name("triton_cases.py")
HAS_TRITON = importlib.util.find_spec("triton") is not None
CASES = ["keys_one_channel", "keys_two_channels", "values_one_channel", "values_two_channels", "bfloat16", "float16",
         "strided_broadcast_no_masks", "padding_only_and_head_dim_not_a_power_of_two", "largest_label_table",
         "tables_matter", "graph_attention_backend", "limits_are_refused"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """``{case: {"ok", "error", "seconds"}}`` from one run of the runner (interpreted on CPU, compiled on CUDA)."""
    if not HAS_TRITON:
        pytest.skip("triton is not installed (pip install triton)")
    out = tmp_path_factory.mktemp("triton") / "results.json"
    cuda = torch.cuda.is_available()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(
        [str(RUNNER.parents[2]), os.environ.get("PYTHONPATH", "")])}
    if cuda:
        env.pop("TRITON_INTERPRET", None)
    else:
        env["TRITON_INTERPRET"] = "1"
    done = subprocess.run([sys.executable, str(RUNNER), "--device", "cuda" if cuda else "cpu", "--out", str(out),
                           *CASES], capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0 or not out.exists():
        pytest.fail(f"the Triton case runner failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(out.read_text())


def test_runner_knows_every_case():
    text = RUNNER.read_text()
    assert all(f"def {name}():" in text for name in CASES)


@pytest.mark.parametrize("name", CASES)
def test_triton_kernel(results, name):
    r = results.get(name)
    assert r is not None, f"case {name} did not run"
    assert r["ok"], f"{name} ({r['seconds']:.1f} s):\n{r['error']}"


# ------------------------------------------------------------------ the backend choice (no kernel runs)
def _choose(backend="sdpa", device="cuda", dtype=torch.float32, values=True, grad=True, L=20, dh=32):
    return choose_label_backend(backend, device, dtype, values, grad, L, dh)[0]


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed (pip install triton)")
def test_cuda_prefers_triton_then_flex_then_blocked(monkeypatch):
    monkeypatch.delenv("G2GT_CUDA_LABEL_BACKEND", raising=False)
    assert _choose() == "triton" and _choose(values=False) == "triton"
    with pytest.warns(RuntimeWarning, match=f"at most {MAX_LABELS}"):
        too_many = _choose(values=False, L=MAX_LABELS + 1)
    assert too_many == "flex"  # keys-only: FlexAttention takes it
    assert _choose(values=True, L=MAX_LABELS + 1) == "blocked"  # FlexAttention has no value term
    with warnings.catch_warnings():  # warned once per reason and process: maybe already
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _choose(dh=MAX_HEAD_DIM * 2) == "blocked"
        assert _choose(dtype=torch.float64) == "blocked"
    monkeypatch.setenv("G2GT_CUDA_LABEL_BACKEND", "flex")
    assert _choose(values=False) == "flex" and _choose(values=True) == "blocked"
    monkeypatch.setenv("G2GT_CUDA_LABEL_BACKEND", "blocked")
    assert _choose(values=False) == "blocked"
    monkeypatch.setenv("G2GT_CUDA_LABEL_BACKEND", "fast")
    with pytest.raises(ValueError, match="G2GT_CUDA_LABEL_BACKEND must be one of triton, flex, blocked"):
        _choose()


def test_cpu_keeps_the_blocked_kernels_unless_asked():
    assert _choose(device="cpu") == "blocked" and _choose(device="cpu", values=False) == "blocked"
    assert _choose("flex", device="cpu", values=False, grad=False) == "flex"  # CPU flex: inference only
    assert _choose("flex", device="cpu", values=False, grad=True) == "blocked"


def test_explicit_triton_backend_says_why_it_cannot_run():
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        pytest.skip("TRITON_INTERPRET is set in this process: CPU tensors are accepted")
    why = unsupported("cpu", torch.float32, 10, 16)
    assert why is not None and ("CUDA" in why or "triton" in why)
    m = GraphAttention(16, 2, 5, backend="triton")
    with pytest.raises(ValueError, match=r"backend='triton'.*backend='sdpa' chooses"):
        m(torch.randn(1, 3, 16), torch.zeros(1, 3, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="'sdpa' \\(automatic\\), 'flex' or 'triton'"):
        GraphAttention(16, 2, 5, backend="cuda")


@pytest.mark.skipif(not (HAS_TRITON and torch.cuda.is_available()), reason="the default CUDA path needs CUDA and triton")
def test_cuda_default_path_is_triton_and_matches_the_blocked_kernels():
    """On CUDA the default GraphAttention takes the Triton kernel (compiled), keys + values, gradients included;
    the same layer on the blocked kernels (G2GT_CUDA_LABEL_BACKEND=blocked) gives the same values."""
    torch.manual_seed(0)
    m = GraphAttention(64, 4, [17, 40], value_labels=True).cuda()
    x = torch.randn(2, 150, 64, device="cuda", requires_grad=True)
    labels = torch.stack([torch.randint(0, 17, (2, 150, 150)), torch.randint(0, 40, (2, 150, 150))], 1).cuda()
    out = m(x, labels, causal=True)
    assert m.last_label_path == "triton"
    grads = torch.autograd.grad(out.square().sum(), [x, m.label_key, m.label_value])
    os.environ["G2GT_CUDA_LABEL_BACKEND"] = "blocked"
    try:
        ref = m(x, labels, causal=True)
        assert m.last_label_path == "blocked"
        ref_grads = torch.autograd.grad(ref.square().sum(), [x, m.label_key, m.label_value])
    finally:
        del os.environ["G2GT_CUDA_LABEL_BACKEND"]
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, atol=1e-3, rtol=1e-3)


def _compile_sm90(fn, pointers: dict[str, str], const: dict) -> dict:
    """``fn`` compiled for an sm_90 GPU (TTIR -> PTX -> cubin with the ptxas that ships with triton); no GPU needed."""
    import inspect

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = list(inspect.signature(fn.fn).parameters)
    def kind(n: str) -> str:  # pointers: the upper-case parameters but H and LT (float32 unless named)
        if n in const:
            return "constexpr"
        if n.isupper() and n not in ("H", "LT"):
            return pointers.get(n, "*fp32")
        return "fp32" if n == "scale" else "i32"

    sig = {n: kind(n) for n in names}
    src = ASTSource(fn=fn, signature=sig, constexprs={(names.index(n),): v for n, v in const.items()})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8}).metadata._asdict()


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed (pip install triton)")
@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="kernels are interpreted here")
def test_kernels_compile_for_an_sm90_gpu():
    """What the interpreter cannot check: the three kernels (bfloat16, two channels, value labels, every mask)
    go through Triton's GPU compiler and ptxas, within an H100's shared memory."""
    try:
        from g2gt.nn import label_triton_kernels as kern

        from triton.backends.nvidia.compiler import CUDABackend  # noqa: F401
    except Exception as err:  # pragma: no cover - depends on the triton build
        pytest.skip(f"triton's NVIDIA compiler is not available here: {err}")
    common = {n: "*u8" for n in ("LAB", "KPM", "AL")} | {"OFF": "*i32", "ADD": "*fp32"}
    data = {n: "*bf16" for n in ("Q", "K", "V", "DO")}
    const = dict(C=2, D=64, DP=64, LP=32, VALUES=True, HAS_KPM=True, HAS_AL=True, HAS_ADD=True, CAUSAL=True,
                 PREC="tf32")
    for fn, tiles in ((kern._fwd, (64, 32)), (kern._bwd_kv, (32, 64)), (kern._bwd_q, (64, 32))):
        meta = _compile_sm90(fn, {**common, **data}, {**const, "BM": tiles[0], "BN": tiles[1]})
        assert 0 < meta["shared"] <= 228 * 1024, meta["shared"]
