"""One reading of a precision for every loader (g2gt.core.runtime.resolve_dtype): one meaning of "auto"."""

from __future__ import annotations

import pytest
import torch

from g2gt.core import _compat
from g2gt.core.runtime import DeviceError, resolve_device, resolve_dtype


def test_names_and_dtypes():
    assert resolve_dtype(None) is torch.float32
    assert resolve_dtype("bfloat16") is resolve_dtype(torch.bfloat16) is torch.bfloat16
    assert resolve_dtype("float16") is torch.float16 and resolve_dtype("float32", "cpu") is torch.float32
    assert resolve_dtype("int8", "cpu") is resolve_dtype(torch.qint8, "cpu") is torch.qint8
    for bad in ("int64", "nonsense", torch.int32):
        with pytest.raises(ValueError, match="dtype must be auto, float32, bfloat16, float16, int8"):
            resolve_dtype(bad, "cpu")


@pytest.mark.parametrize("amx", [True, False])
def test_auto_is_bfloat16_where_fast_else_int8_for_models_that_allow_it(monkeypatch, amx):
    monkeypatch.setattr(_compat, "amx_tile_supported", lambda: amx)
    int8 = torch.qint8 if _compat.int8_linear_quantizer() is not None else torch.float32
    assert resolve_dtype("auto", "cpu", int8=True) is (torch.bfloat16 if amx else int8)
    assert resolve_dtype("auto", "cpu") is (torch.bfloat16 if amx else torch.float32)  # e.g. a translator


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_auto_on_a_gpu_and_no_int8_there():
    expected = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    assert resolve_dtype("auto", "cuda", int8=True) is expected
    with pytest.raises(ValueError, match="CPU only"):
        resolve_dtype("int8", "cuda")


def test_devices_are_checked_once_in_one_place():
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(DeviceError, match="unsupported device type 'meta'"):
        resolve_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="CUDA is not available"):
            resolve_device("cuda")
