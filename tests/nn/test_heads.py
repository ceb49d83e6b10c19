"""Properties of the biaffine scorers, tagger and char-CNN word encoder."""

from __future__ import annotations

import torch

from g2gt.nn.heads import BiaffineArcScorer, BiaffineLabelScorer, CharCNNWordEncoder, Tagger


def _randomize(module: torch.nn.Module) -> None:
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0, 0.3)


def test_arc_scorer_matches_formula_and_masks_padding():
    m = BiaffineArcScorer(8, arc_dim=5, dropout=0.0).double()
    _randomize(m)
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    pad = torch.tensor([[False] * 4, [False, False, False, True]])
    s = m(x, pad)
    d, h = m.dep(x), m.head(x)
    for b in range(2):
        for i in range(4):
            for j in range(4):
                if pad[b, j]:
                    assert s[b, i, j] == float("-inf")
                else:
                    ref = d[b, i] @ m.U @ h[b, j] + h[b, j] @ m.u
                    assert torch.allclose(s[b, i, j], ref)


def test_label_scorer_matches_formula():
    m = BiaffineLabelScorer(6, num_labels=3, label_dim=4, dropout=0.0).double()
    _randomize(m)
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    heads = torch.randint(0, 5, (2, 5))
    s = m(x, heads)
    assert s.shape == (2, 5, 3)
    d, h = m.dep(x), m.head(x)
    for b in range(2):
        for i in range(5):
            hj = h[b, heads[b, i]]
            for r in range(3):
                ref = d[b, i] @ m.U[r] @ hj + m.W.weight[r] @ torch.cat([d[b, i], hj]) + m.W.bias[r]
                assert torch.allclose(s[b, i, r], ref)


def test_label_scorer_row_blocks_on_cpu_match_the_formula(monkeypatch):
    """On the CPU the [N, L * r] intermediate is made in row blocks: blocks of 1, 2 and 3 rows (N = 10, not a
    multiple of 3) give the float64 formula for every row, gradients included."""
    import g2gt.nn.heads as heads

    m = BiaffineLabelScorer(6, num_labels=3, label_dim=4, dropout=0.0).double()
    _randomize(m)
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    heads_ = torch.randint(0, 5, (2, 5))
    whole = m(x, heads_)
    d, h = m.dep(x), m.head(x)
    ref = torch.stack([torch.stack([torch.stack([d[b, i] @ m.U[r] @ h[b, heads_[b, i]] for r in range(3)])
                                    for i in range(5)]) for b in range(2)])
    ref = ref + m.W(torch.cat([d, h.gather(1, heads_[..., None].expand(-1, -1, 4))], -1))
    assert torch.allclose(whole, ref)
    g_whole = torch.autograd.grad(whole.square().sum(), m.U)[0]
    for rows in (1, 2, 3):
        monkeypatch.setattr(heads, "CPU_CHUNK_ELEMENTS", rows * 3 * 4)
        out = m(x, heads_)
        assert torch.allclose(out, ref)
        assert torch.allclose(torch.autograd.grad(out.square().sum(), m.U)[0], g_whole)
    assert m(x[:, :0], heads_[:, :0]).shape == (2, 0, 3)


def test_char_encoder_ignores_padding_columns():
    enc = CharCNNWordEncoder(20, 7, char_dim=5, filters=9, kernel=3).eval()
    chars = torch.tensor([[3, 4, 5, 0], [6, 0, 0, 0]])
    wider = torch.cat([chars, torch.zeros(2, 3, dtype=torch.long)], 1)
    assert torch.allclose(enc(chars), enc(wider), atol=1e-6)
    assert enc(chars).shape == (2, 7)


def test_reset_parameters_and_tagger_shape():
    t = Tagger(8, 5, hidden=6)
    assert t(torch.randn(3, 4, 8)).shape == (3, 4, 5)
    for m in (BiaffineArcScorer(8, 4), BiaffineLabelScorer(8, 3, 4), CharCNNWordEncoder(10, 8), t):
        m.reset_parameters()
    a = BiaffineArcScorer(8, 4)
    assert torch.count_nonzero(a.U) == 0  # biaffine weights start at zero (Dozat & Manning)


def test_char_encoder_is_the_padded_convolution_max_pooled():
    """The packed matrix-product path computes Conv1d + ReLU + masked max-pool + projection (float64)."""
    torch.manual_seed(0)
    enc = CharCNNWordEncoder(20, 7, char_dim=5, filters=9, kernel=3).double().eval()
    chars = torch.tensor([[3, 4, 5, 0, 0], [6, 0, 0, 0, 0], [1, 2, 3, 4, 19], [7, 7, 0, 0, 0]])
    z = torch.relu(enc.conv(enc.embed(chars).transpose(1, 2)))  # [N, f, m]
    z = z.masked_fill((chars == 0)[:, None, :], 0.0)
    ref = enc.proj(z.max(-1).values)
    assert torch.allclose(enc(chars), ref, atol=1e-12)
    grad = torch.autograd.grad(enc(chars).sum(), enc.conv.weight)[0]
    ref_grad = torch.autograd.grad(enc.proj(torch.relu(enc.conv(enc.embed(chars).transpose(1, 2)))
                                            .masked_fill((chars == 0)[:, None, :], 0.0).max(-1).values).sum(),
                                   enc.conv.weight)[0]
    assert torch.allclose(grad, ref_grad, atol=1e-10)
