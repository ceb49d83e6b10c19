"""g2gt._compat: one test per probe of a private torch API (a torch upgrade breaks here first)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from g2gt.core import _compat


def _cpu_flags() -> set[str] | None:
    """The CPU's feature flags as Linux reports them (``/proc/cpuinfo``), None elsewhere: an independent
    source for what torch's private probes say."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        return None
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return None


def test_amx_tile_supported_matches_the_cpu_flags():
    flags = _cpu_flags()
    if flags is None:
        pytest.skip("needs Linux's /proc/cpuinfo to know the answer independently")
    assert _compat.amx_tile_supported() is ("amx_tile" in flags)


def test_cpu_bf16_supported_matches_the_cpu_flags():
    flags = _cpu_flags()
    if flags is None:
        pytest.skip("needs Linux's /proc/cpuinfo to know the answer independently")
    assert _compat.cpu_bf16_supported() is bool({"avx512_bf16", "amx_tile"} & flags)


@pytest.mark.parametrize("probe", ["_is_amx_tile_supported", "_is_avx512_bf16_supported"])
def test_cpu_probes_say_no_when_torch_lacks_them_or_they_fail(probe, monkeypatch):
    """Never raises: a torch without the private probe, or a probe that fails, means "not supported"."""
    def boom():
        raise RuntimeError("probe failed")

    for replacement in (None, boom):
        if replacement is None:
            monkeypatch.delattr(torch.cpu, probe, raising=False)
        else:
            monkeypatch.setattr(torch.cpu, probe, replacement, raising=False)
        assert _compat._cpu_probe(probe) is False
    monkeypatch.setattr(torch.cpu, probe, lambda: 1, raising=False)
    assert _compat._cpu_probe(probe) is True


def test_int8_linear_quantizer_keeps_linear_outputs_close():
    quantize = _compat.int8_linear_quantizer()
    if quantize is None:  # the fallback: Parser.load(dtype="int8") then says it is not available
        pytest.skip(f"torch {torch.__version__} has no usable dynamic int8 quantization here")
    g = torch.Generator().manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Linear(48, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).eval()
    for lin in (net[0], net[2]):
        with torch.no_grad():
            lin.weight.copy_(torch.randn(lin.weight.shape, generator=g) / lin.in_features**0.5)
    q = quantize(net)
    assert not any(isinstance(m, torch.nn.Linear) for m in q.modules())  # every Linear was swapped
    assert all(isinstance(m, torch.nn.Linear) for m in (net[0], net[2]))  # the original is left as it was
    x = torch.randn(3, 11, 48, generator=g)
    with torch.no_grad():
        ref, out = net(x), q(x)
    assert out.dtype == torch.float32 and out.shape == ref.shape
    assert (out - ref).abs().max() <= 0.05 * ref.abs().max()
    assert (out - ref).abs().max() > 0  # int8 arithmetic, not the float layers
    assert _compat.int8_linear_quantizer() is quantize  # probed once per process


def test_keep_freed_memory_applies_on_glibc_and_can_be_turned_off(monkeypatch):
    import platform
    import sys

    probe = _compat.keep_freed_memory.__wrapped__  # uncached: the cached one runs once per process
    monkeypatch.setenv("G2GT_KEEP_FREED_MEMORY", "0")
    assert probe() is False
    monkeypatch.delenv("G2GT_KEEP_FREED_MEMORY")
    applied = probe()
    assert isinstance(applied, bool)
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert applied  # mallopt accepted both settings
    x = torch.randn(1024, 1024)  # allocating and freeing large tensors still works afterwards
    assert float((x + x).sub_(2 * x).abs().max()) == 0.0


def test_extension_baton_is_the_lock_file_torch_load_waits_on(tmp_path, monkeypatch):
    """torch's ``cpp_extension.load`` waits while ``extension_baton(d)`` exists and goes on once it is gone
    (a waiter then takes the library as built by the lock's holder: here there is none, so it fails to load it;
    without ninja or a compiler on PATH nothing is compiled either way)."""
    import threading

    from torch.utils.cpp_extension import load

    baton = _compat.extension_baton(tmp_path)
    if baton is None:
        pytest.skip(f"torch {torch.__version__} has no FileBaton")
    assert baton.parent == tmp_path
    src = tmp_path / "probe.cpp"
    src.write_text("int g2gt_probe() { return 1; }\n")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no ninja, no compiler
    baton.touch()
    outcome: list[BaseException | None] = []

    def build() -> None:
        try:
            load(name="g2gt_baton_probe", sources=[str(src)], build_directory=str(tmp_path), is_python_module=False)
            outcome.append(None)
        except BaseException as err:  # reported below
            outcome.append(err)

    worker = threading.Thread(target=build, daemon=True)
    worker.start()
    worker.join(2.0)
    assert worker.is_alive() and not outcome, f"load did not wait on {baton}: {outcome}"
    baton.unlink()
    worker.join(60.0)
    assert not worker.is_alive(), "load still waits after the lock file was removed"
    assert len(outcome) == 1 and not (tmp_path / "g2gt_baton_probe.so").exists(), outcome


def test_has_forward_hooks_sees_module_and_global_hooks():
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    assert not _compat.has_forward_hooks(a, b)
    handle = b.register_forward_hook(lambda *args: None)
    assert _compat.has_forward_hooks(a, b) and not _compat.has_forward_hooks(a)
    handle.remove()
    handle = a.register_forward_pre_hook(lambda *args: None)
    assert _compat.has_forward_hooks(a)
    handle.remove()
    for register in (register_module_forward_hook, register_module_forward_pre_hook):
        handle = register(lambda *args: None)
        assert _compat.has_forward_hooks(a)
        handle.remove()
    assert not _compat.has_forward_hooks(a, b)


def test_device_assert_queues_a_check_without_reading_it(monkeypatch):
    assert _compat.device_assert(torch.tensor(True), "fine") is True
    with pytest.raises(RuntimeError):  # on a CPU the queued check runs at once
        _compat.device_assert(torch.tensor(False), "labels out of range")
    monkeypatch.delattr(torch, "_assert_async")
    assert _compat.device_assert(torch.tensor(False), "unchecked") is False  # the caller checks on the host
