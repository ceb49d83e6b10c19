"""The segmenter trains through the one training runner (g2gt.core.run): config.json and --average-last."""

from __future__ import annotations

import json

import torch

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu
from g2gt.ud.tokenize import SegmentDataConfig, SegmenterConfig, train_segmenter
from g2gt.ud.tokenize.train import default_train_config

TINY = SegmenterConfig(d_model=32, num_layers=1, num_heads=2, ffn_dim=64, window=48, context=8)


def test_config_json_and_averaging(tmp_path):
    train = read_conllu(EWT_SAMPLE_TRAIN)[:120]
    dev = read_conllu(EWT_SAMPLE_DEV)[:20]
    tc = default_train_config(max_steps=6, eval_every=2, log_every=2, progress=False, max_minutes=0)
    train_segmenter(train, dev, tmp_path, TINY, tc, data_config=SegmentDataConfig(batch_windows=4), expander=False,
                    average_last=2)
    info = json.loads((tmp_path / "config.json").read_text())
    assert info["model_config"]["d_model"] == 32 and info["train_config"]["keep_last"] == 2
    assert info["task"]["average_last"] == 2 and info["steps"] == 6 and "best_dev" in info
    assert info["average"]["file"] == "averaged.pt" and info["average"]["steps"] == [4, 6]
    ck = torch.load(tmp_path / "averaged.pt", weights_only=True)
    assert ck["task"]["kind"] == "segmenter" and ck["averaged"]["steps"] == [4, 6]
