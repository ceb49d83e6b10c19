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
    tc = default_train_config(max_steps=6, eval_every=2, log_every=2, progress=False, max_minutes=0, average_last=2)
    train_segmenter(train, dev, tmp_path, TINY, tc, data_config=SegmentDataConfig(batch_tokens=4 * 48), expander=False)
    info = json.loads((tmp_path / "config.json").read_text())
    assert info["model_config"]["d_model"] == 32 and info["train_config"]["keep_last"] == 2
    assert info["train_config"]["average_last"] == 2 and info["steps"] == 6 and "best_dev" in info
    assert info["average"]["file"] == "averaged.pt" and info["average"]["steps"] == [4, 6]
    ck = torch.load(tmp_path / "averaged.pt", weights_only=True)
    assert ck["task"]["kind"] == "segmenter" and ck["averaged"]["steps"] == [4, 6]


def test_batch_tokens_are_characters():
    from g2gt.ud.tokenize.config import DEFAULT_WINDOW

    assert SegmentDataConfig().batch_tokens == 64 * DEFAULT_WINDOW  # the recipe: 64 windows of 96 characters
    assert SegmentDataConfig(batch_tokens=500).windows_per_batch(48) == 10
    assert SegmentDataConfig(batch_tokens=10).windows_per_batch(48) == 1  # never an empty batch


def test_cli_batch_tokens():
    from g2gt.cli.main import build_parser
    from g2gt.cli.treebank import _segment_data_config

    args = build_parser().parse_args(["train", "segmenter", "--out", "o", "--batch-tokens", "960", "--window", "48"])
    assert _segment_data_config(args).windows_per_batch(48) == 20
