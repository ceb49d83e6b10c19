"""g2gt.nn.char_transducer: the model it builds, its source labels, and a loss that padding does not change."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from g2gt.core.graph import chain_labels, relative_position_labels
from g2gt.nn.char_transducer import build_char_transducer, transducer_loss

PAD, BOS, EOS = 0, 1, 2


@dataclass
class Shape:
    vocab_size: int = 12
    d_model: int = 16
    num_heads: int = 2
    num_layers: int = 1
    ffn_dim: int = 32
    dropout: float = 0.0
    max_distance: int = 3


def test_build_reads_the_shape():
    model = build_char_transducer(Shape(num_layers=2), PAD, BOS, EOS)
    cfg = model.config
    assert (cfg.src_vocab_size, cfg.tgt_vocab_size, cfg.d_model) == (12, 12, 16)
    assert (cfg.num_encoder_layers, cfg.num_decoder_layers, cfg.decoder_max_distance) == (2, 2, 3)
    assert cfg.num_labels == [2 * 3 + 2] and cfg.positions == "sinusoidal"
    assert (cfg.pad_id, cfg.bos_id, cfg.eos_id) == (PAD, BOS, EOS)


def test_chain_labels_are_the_clipped_distances_for_one_row():
    lab = chain_labels(7, 3)
    assert lab.shape == (1, 1, 7, 7) and lab.dtype == torch.uint8
    assert torch.equal(lab[0, 0].long(), relative_position_labels(7, 3).long())


def test_loss_is_the_sum_over_rows_whatever_the_padding():
    torch.manual_seed(0)
    model = build_char_transducer(Shape(), PAD, BOS, EOS).double().eval()
    rows = [([5, 6, 7, 8, 9], [5, 6, 7]), ([4, 11], [10, 4, 11, 9])]

    def batch(pairs):
        m = max(len(s) for s, _ in pairs)
        t = max(len(o) for _, o in pairs) + 1
        src = torch.tensor([s + [PAD] * (m - len(s)) for s, _ in pairs])
        tgt_in = torch.tensor([[BOS] + o + [PAD] * (t - 1 - len(o)) for _, o in pairs])
        tgt_out = torch.tensor([o + [EOS] + [PAD] * (t - 1 - len(o)) for _, o in pairs])
        return src, tgt_in, tgt_out

    with torch.no_grad():
        together = transducer_loss(model, *batch(rows), 3, PAD)
        alone = sum(transducer_loss(model, *batch([r]), 3, PAD) for r in rows)
        smoothed = transducer_loss(model, *batch(rows), 3, PAD, label_smoothing=0.1)
    assert together.dtype == torch.float32  # the loss is taken in float32
    torch.testing.assert_close(together, alone, rtol=1e-6, atol=1e-6)
    assert not torch.isclose(smoothed, together)
