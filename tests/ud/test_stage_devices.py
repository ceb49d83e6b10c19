"""Every stage loader reads ``device="auto"`` and answers a bad device with a :class:`g2gt.Error` naming the file."""

import pytest
import torch

import g2gt
from g2gt.core.runtime import DeviceError, resolve_device
from g2gt.ud.coref import Coreferencer
from g2gt.ud.enhance import Enhancer
from g2gt.core.registry import find_model
from g2gt.ud.parse import Parser
from g2gt.ud.tokenize import Segmenter

LOADERS = [(Parser, "parser.pt"), (Segmenter, "segmenter.pt"), (Enhancer, "enhancer.pt"), (Coreferencer, "coref.pt")]


def test_resolve_device_reads_auto_and_refuses_other_names():
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device(torch.device("cpu")) == resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(DeviceError, match="is not a device") as err:
        resolve_device("gpu0")
    assert isinstance(err.value, g2gt.Error) and isinstance(err.value, RuntimeError)


@pytest.mark.parametrize("cls, file", LOADERS, ids=[c.__name__ for c, _ in LOADERS])
def test_stage_loader_accepts_auto(cls, file):
    stage = cls.load(find_model("en_combined") / file, device="auto")
    assert stage.device.type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.parametrize("cls, file", LOADERS, ids=[c.__name__ for c, _ in LOADERS])
def test_stage_loader_refuses_a_bad_device_with_a_clear_error(cls, file):
    with pytest.raises(g2gt.Error, match="device='gpu0' is not a device; expected 'auto', 'cpu', 'cuda'"):
        cls.load(find_model("en_combined") / file, device="gpu0")
