"""G2GTransformer properties: padding invariance, causality, KV cache, equivariance, config variants."""

from __future__ import annotations

import pytest
import torch

from g2gt.core import EdgeChannel, chain_graph, collate, num_chain_labels
from g2gt.nn import G2GTConfig, G2GTransformer
from g2gt.nn.transformer import sinusoidal_positions

K = 3


def _model(norm_first=True, positions="none", dtype=torch.float64, labels=None, **kw) -> G2GTransformer:
    torch.manual_seed(0)
    cfg = G2GTConfig(src_vocab_size=20, tgt_vocab_size=17, d_model=16, num_heads=2, num_encoder_layers=2,
                     num_decoder_layers=2, ffn_dim=32, dropout=0.1, norm_first=norm_first, positions=positions,
                     num_labels=labels or [num_chain_labels(K), 5], decoder_max_distance=K, **kw)
    return G2GTransformer(cfg).to(dtype).eval()


def _graph(tokens, seed):
    g = chain_graph(tokens, K)
    gen = torch.Generator().manual_seed(seed)
    n = len(tokens)
    e = torch.randint(0, n, (2, 2 * n), generator=gen)
    return g.with_channel("deps", EdgeChannel(e, torch.randint(1, 5, (2 * n,), generator=gen), 5))


def _src(lengths, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [_graph(torch.randint(3, 20, (n,), generator=gen).tolist(), seed + i) for i, n in enumerate(lengths)]


VARIANTS = [(True, "none"), (False, "none"), (True, "sinusoidal"), (True, "learned"), (False, "learned")]


@pytest.mark.parametrize("norm_first,positions", VARIANTS)
def test_encoder_padding_invariance(norm_first, positions):
    m = _model(norm_first, positions)
    gs = _src([4, 9, 6])
    big = collate(gs)
    mem = m.encode(big.tokens, big.labels, big.padding_mask)
    assert mem.shape == (3, 9, 16) and torch.isfinite(mem).all()
    for i, g in enumerate(gs):
        alone = collate([g])
        ref = m.encode(alone.tokens, alone.labels, alone.padding_mask)[0]
        n = g.num_nodes
        torch.testing.assert_close(mem[i, :n], ref, rtol=1e-10, atol=1e-10)
        assert not mem[i, n:].any()  # padding rows are zeroed


@pytest.mark.parametrize("norm_first,positions", VARIANTS)
def test_decoder_padding_and_memory_padding_invariance(norm_first, positions):
    m = _model(norm_first, positions)
    gs = _src([4, 7])
    b = collate(gs)
    mem = m.encode(b.tokens, b.labels, b.padding_mask)
    tgt = torch.tensor([[1, 5, 6, 0, 0], [1, 7, 8, 9, 10]])
    logits = m.decode(tgt, mem, b.padding_mask, tgt == 0)
    alone = collate([gs[0]])
    mem0 = m.encode(alone.tokens, alone.labels, alone.padding_mask)
    ref = m.decode(tgt[:1, :3], mem0, alone.padding_mask)
    torch.testing.assert_close(logits[0, :3], ref[0], rtol=1e-10, atol=1e-10)
    full = m(b.tokens, b.labels, b.padding_mask, tgt, tgt == 0)
    torch.testing.assert_close(full, logits)


@pytest.mark.parametrize("norm_first,positions", VARIANTS)
def test_no_causal_leakage(norm_first, positions):
    m = _model(norm_first, positions)
    b = collate(_src([5, 3]))
    mem = m.encode(b.tokens, b.labels, b.padding_mask)
    tgt = torch.randint(3, 17, (2, 8))
    base = m.decode(tgt, mem, b.padding_mask)
    for t in range(7):
        changed = tgt.clone()
        changed[:, t + 1 :] = torch.randint(3, 17, changed[:, t + 1 :].shape)
        changed[:, t + 1] = (tgt[:, t + 1] + 1 - 3) % 14 + 3  # surely different
        out = m.decode(changed, mem, b.padding_mask)
        torch.testing.assert_close(out[:, : t + 1], base[:, : t + 1], rtol=0, atol=0)
        assert not torch.allclose(out[:, t + 1], base[:, t + 1])


@pytest.mark.parametrize("norm_first,positions", VARIANTS)
def test_kv_cache_equals_full_decoding(norm_first, positions):
    m = _model(norm_first, positions)
    b = collate(_src([5, 8, 2]))
    mem = m.encode(b.tokens, b.labels, b.padding_mask)
    tgt = torch.randint(3, 17, (3, 9))
    full = m.decode(tgt, mem, b.padding_mask)
    cache = m.init_cache()
    steps = [m.decode(tgt[:, i : i + 1], mem, b.padding_mask, cache=cache) for i in range(9)]
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-10, atol=1e-10)
    # chunks of several tokens at a time also work
    cache = m.init_cache()
    chunks = [m.decode(tgt[:, a:z], mem, b.padding_mask, cache=cache) for a, z in ((0, 4), (4, 5), (5, 9))]
    torch.testing.assert_close(torch.cat(chunks, 1), full, rtol=1e-10, atol=1e-10)


def test_kv_cache_beyond_clip_distance():
    m = _model()
    b = collate(_src([3]))
    mem = m.encode(b.tokens, b.labels, b.padding_mask)
    tgt = torch.randint(3, 17, (1, 4 * K))  # well past the decoder's clip distance
    full = m.decode(tgt, mem, b.padding_mask)
    cache = m.init_cache()
    inc = torch.cat([m.decode(tgt[:, i : i + 1], mem, b.padding_mask, cache=cache) for i in range(4 * K)], 1)
    torch.testing.assert_close(inc, full, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_permutation_equivariance(norm_first):
    m = _model(norm_first, "none")
    g = _src([7])[0]
    b = collate([g])
    perm = torch.randperm(7)
    tokens_p = b.tokens[:, perm]
    labels_p = b.labels[:, :, perm][:, :, :, perm]  # permute both node axes of every channel
    out = m.encode(b.tokens, b.labels, b.padding_mask)
    out_p = m.encode(tokens_p, labels_p, b.padding_mask[:, perm])
    torch.testing.assert_close(out_p, out[:, perm], rtol=1e-10, atol=1e-10)
    # ... and the decoder output is invariant to permuting the memory
    tgt = torch.randint(3, 17, (1, 5))
    torch.testing.assert_close(m.decode(tgt, out_p, None), m.decode(tgt, out, None), rtol=1e-10, atol=1e-10)


def test_absolute_positions_break_equivariance():
    m = _model(True, "sinusoidal")
    b = collate(_src([6]))
    perm = torch.arange(5, -1, -1)
    out = m.encode(b.tokens, b.labels, b.padding_mask)
    out_p = m.encode(b.tokens[:, perm], b.labels[:, :, perm][:, :, :, perm], b.padding_mask)
    assert not torch.allclose(out_p, out[:, perm])


def test_sinusoidal_positions_values():
    pe = sinusoidal_positions(torch.arange(4), 6)
    assert pe.shape == (4, 6)
    assert torch.allclose(pe[:, :3], torch.sin(torch.arange(4.0)[:, None] / 10000 ** (torch.arange(3.0) / 3)))
    assert torch.allclose(pe[0, 3:], torch.ones(3))
    assert sinusoidal_positions(torch.arange(2), 5).shape == (2, 5)


def test_learned_positions_limit():
    m = _model(positions="learned", max_positions=8)
    with pytest.raises(ValueError, match="max_positions=8"):
        m.encode(torch.ones(1, 9, dtype=torch.long), collate(_src([9])).labels, None)


def test_tied_and_shared_embeddings():
    m = _model(tie_embeddings=True)
    assert m.output.weight is m.tgt_embed.weight
    assert sum(p.data_ptr() == m.tgt_embed.weight.data_ptr() for p in m.parameters()) == 1
    m2 = _model(tie_embeddings=False)
    assert m2.output.weight is not m2.tgt_embed.weight
    torch.manual_seed(0)
    m3 = G2GTransformer(G2GTConfig(20, 20, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1,
                                   ffn_dim=32, share_embeddings=True))
    assert m3.src_embed is m3.tgt_embed and m3.output.weight is m3.src_embed.weight
    with pytest.raises(ValueError, match="share_embeddings"):
        G2GTransformer(G2GTConfig(20, 17, share_embeddings=True, d_model=16, num_heads=2))
    assert not m.src_embed.weight[0].any() and not m.tgt_embed.weight[0].any()  # pad rows start at zero


def test_state_dict_round_trip_strict(tmp_path):
    m = _model(positions="learned")
    torch.save(m.state_dict(), tmp_path / "m.pt")
    cfg = G2GTConfig(**m.config.to_dict())
    fresh = G2GTransformer(cfg).double().eval()
    fresh.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True), strict=True)
    assert fresh.output.weight is fresh.tgt_embed.weight  # tying survives loading
    b = collate(_src([4, 5]))
    tgt = torch.randint(3, 17, (2, 3))
    torch.testing.assert_close(fresh(b.tokens, b.labels, b.padding_mask, tgt),
                               m(b.tokens, b.labels, b.padding_mask, tgt), rtol=0, atol=0)


def test_reset_parameters_and_encoder_only():
    torch.manual_seed(0)
    enc = G2GTransformer(G2GTConfig(20, 0, d_model=16, num_heads=2, num_encoder_layers=1, ffn_dim=32,
                                    num_labels=[num_chain_labels(K)]))
    assert enc.decoder is None
    b = collate([chain_graph([4, 5, 6], K)])
    assert enc.encode(b.tokens, b.labels, b.padding_mask).shape == (1, 3, 16)
    with pytest.raises(RuntimeError, match="encoder-only"):
        enc.decode(torch.ones(1, 1, dtype=torch.long), torch.zeros(1, 3, 16))
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    enc.reset_parameters()
    changed = [k for k, v in enc.state_dict().items() if not torch.equal(v, before[k])]
    assert any("embed" in k for k in changed) and any("self_attn" in k for k in changed)
    with pytest.raises(ValueError, match="positions must be"):
        G2GTransformer(G2GTConfig(20, positions="rotary"))


def test_training_mode_dropout_and_gradients():
    m = _model(dtype=torch.float32).train()
    b = collate(_src([4, 6]))
    tgt = torch.randint(3, 17, (2, 5))
    a = m(b.tokens, b.labels, b.padding_mask, tgt)
    c = m(b.tokens, b.labels, b.padding_mask, tgt)
    assert not torch.allclose(a, c)  # dropout active
    a.sum().backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None]
    assert not missing, missing


@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_attention_weights_equal_direct_self_attention(norm_first):
    """``GraphEncoder(need_weights=True)`` returns, per layer, exactly the probabilities the
    layer's own ``self_attn`` gives on that layer's (normalised) input, and the same output."""
    from g2gt.nn.layers import GraphEncoder

    torch.manual_seed(3)
    enc = GraphEncoder(3, 16, 2, 32, [num_chain_labels(K), 5], True, dropout=0.1, norm_first=norm_first)
    enc = enc.to(torch.float64).eval()
    batch = collate(_src([5, 3, 7], seed=4))
    x = torch.randn(*batch.tokens.shape, 16, dtype=torch.float64)
    out, ws = enc(x, batch.labels, batch.padding_mask, need_weights=True)
    assert len(ws) == len(enc.layers)
    torch.testing.assert_close(out, enc(x, batch.labels, batch.padding_mask), rtol=1e-10, atol=1e-12)
    h = x
    B, n = batch.tokens.shape
    for layer, w in zip(enc.layers, ws):
        assert w.shape == (B, 2, n, n)
        inp = layer.res_attn.norm(h) if norm_first else h
        _, ref = layer.self_attn(inp, batch.labels, batch.padding_mask, need_weights=True)
        # h comes from the default (fused) path, the weights from the reference path: rounding only
        torch.testing.assert_close(w, ref, rtol=1e-10, atol=1e-12)
        real = ~batch.padding_mask
        sums = w.sum(-1)  # probabilities over keys for every real query
        torch.testing.assert_close(sums.permute(0, 2, 1)[real], torch.ones_like(sums.permute(0, 2, 1)[real]))
        assert (w.masked_select(batch.padding_mask[:, None, None, :].expand_as(w)) == 0).all()
        h = layer(h, batch.labels, batch.padding_mask)
