"""G2GConv (g2gt/nn/conv.py): equality with dense GraphAttention and with PyG's
TransformerConv (outputs and gradients, float64), batching, equivariance, edge cases."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pyg = pytest.importorskip("torch_geometric")
from torch_geometric.data import Batch, Data  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402
from torch_geometric.nn import TransformerConv  # noqa: E402
from torch_geometric.utils import scatter  # noqa: E402

from g2gt.core import num_chain_labels, relative_position_labels  # noqa: E402
from g2gt.nn import G2GConv, GraphAttention  # noqa: E402
from g2gt.nn.conv import edge_relative_positions, node_positions  # noqa: E402

DT = torch.float64


def _random_graph(n: int, e: int, sizes: list[int], seed: int, d: int = 6):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=DT)
    ei = torch.randint(0, n, (2, e), generator=g)
    et = torch.stack([torch.randint(0, s, (e,), generator=g) for s in sizes], 1)
    return x, ei, et


def _grads(module: torch.nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    out = {name: p.grad.clone() for name, p in module.named_parameters() if p.grad is not None}
    out["x"] = x.grad.clone()
    return out


def _complete_graph(n: int) -> torch.Tensor:
    """All ordered pairs incl. self-loops as (source=j, target=i)."""
    i, j = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    return torch.stack([j.reshape(-1), i.reshape(-1)])


# ---------------------------------------------------------------- vs GraphAttention
@pytest.mark.parametrize("value_labels", [True, False])
@pytest.mark.parametrize("fused,label_path", [(True, "dense"), (True, "edge"), (False, "auto")])
def test_complete_graph_equals_graph_attention(value_labels: bool, fused: bool, label_path: str) -> None:
    torch.manual_seed(0)
    n, H, dh, sizes = 6, 2, 4, [5, 7]
    D = H * dh
    ga = GraphAttention(D, H, num_labels=sizes, value_labels=value_labels).to(DT)
    conv = G2GConv(D, dh, heads=H, num_edge_labels=sizes, value_labels=value_labels, root_weight=False,
                   fused=fused).to(DT)
    conv.label_path = label_path
    # weight map: q_proj/k_proj/v_proj -> same names; label_key/label_value -> same tables;
    # GraphAttention.out_proj is applied to G2GConv's (concatenated) output.
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj"):
            getattr(conv, name).weight.copy_(getattr(ga, name).weight)
            getattr(conv, name).bias.copy_(torch.randn(D, dtype=DT))
            getattr(ga, name).bias.copy_(getattr(conv, name).bias)
        conv.label_key.copy_(ga.label_key)
        if value_labels:
            conv.label_value.copy_(ga.label_value)
    labels = torch.stack([torch.randint(0, s, (n, n)) for s in sizes])  # [C, n, n], row = query
    ei = _complete_graph(n)
    et = labels[:, ei[1], ei[0]].t()  # edge j -> i carries labels[:, i, j]

    x1 = torch.randn(n, D, dtype=DT, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    ref = ga(x1[None], labels[None])[0]
    out = ga.out_proj(conv(x2, ei, et))
    torch.testing.assert_close(out, ref)
    w = torch.randn_like(ref)
    (ref * w).sum().backward()
    (out * w).sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad)
    for name in ("q_proj", "k_proj", "v_proj"):
        torch.testing.assert_close(getattr(conv, name).weight.grad, getattr(ga, name).weight.grad)
        torch.testing.assert_close(getattr(conv, name).bias.grad, getattr(ga, name).bias.grad)
    torch.testing.assert_close(conv.label_key.grad, ga.label_key.grad)
    if value_labels:
        torch.testing.assert_close(conv.label_value.grad, ga.label_value.grad)


def test_relative_position_channel_matches_chain_attention() -> None:
    """A chain channel passed as edge_type reproduces GraphAttention on a sequence."""
    torch.manual_seed(1)
    n, k, D, H = 7, 2, 8, 2
    L = num_chain_labels(k)
    ga = GraphAttention(D, H, num_labels=L).to(DT)
    conv = G2GConv(D, D // H, heads=H, num_edge_labels=L, root_weight=False).to(DT)
    conv.load_state_dict({k_: v for k_, v in ga.state_dict().items() if not k_.startswith("out_proj")}, strict=False)
    ei = _complete_graph(n)
    rel = relative_position_labels(n, k)
    et = rel[ei[1], ei[0]]
    torch.testing.assert_close(et, edge_relative_positions(ei, torch.arange(n), k))
    x = torch.randn(n, D, dtype=DT)
    torch.testing.assert_close(ga.out_proj(conv(x, ei, et)), ga(x[None], rel[None])[0])


# ---------------------------------------------------------------- vs TransformerConv
@pytest.mark.parametrize("concat,root_weight", [(True, True), (False, True), (True, False)])
def test_equals_transformer_conv_one_hot(concat: bool, root_weight: bool) -> None:
    torch.manual_seed(2)
    L, H, d = 5, 3, 4
    tc = TransformerConv(6, d, heads=H, concat=concat, beta=False, edge_dim=L, root_weight=root_weight).to(DT)
    conv = G2GConv.from_transformer_conv(tc)
    x, ei, et = _random_graph(9, 30, [L], seed=3)
    et = et[:, 0]
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    ref = tc(x1, ei, F.one_hot(et, L).to(DT))
    out = conv(x2, ei, et)
    torch.testing.assert_close(out, ref)
    w = torch.randn_like(ref)
    (ref * w).sum().backward()
    (out * w).sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad)
    pairs = [("q_proj", "lin_query"), ("k_proj", "lin_key"), ("v_proj", "lin_value")]
    if root_weight:
        pairs.append(("lin_skip", "lin_skip"))
    for ours, theirs in pairs:
        torch.testing.assert_close(getattr(conv, ours).weight.grad, getattr(tc, theirs).weight.grad)
        torch.testing.assert_close(getattr(conv, ours).bias.grad, getattr(tc, theirs).bias.grad)
    # lin_edge feeds keys and values: its gradient is the sum of both tables' gradients
    torch.testing.assert_close((conv.label_key.grad + conv.label_value.grad).t(), tc.lin_edge.weight.grad)


def test_shared_tables_equal_transformer_conv_with_tied_heads() -> None:
    """Shared [L, d] tables == TransformerConv whose lin_edge rows repeat across heads."""
    torch.manual_seed(4)
    L, H, d = 4, 2, 3
    tc = TransformerConv(6, d, heads=H, edge_dim=L).to(DT)
    table = torch.randn(L, d, dtype=DT)
    with torch.no_grad():
        tc.lin_edge.weight.copy_(table.t().repeat(H, 1))
    ref_conv = G2GConv.from_transformer_conv(tc)
    conv = G2GConv(6, d, heads=H, num_edge_labels=L).to(DT)
    sd = {k: v for k, v in ref_conv.state_dict().items() if not k.startswith("label_")}
    conv.load_state_dict(sd, strict=False)
    with torch.no_grad():
        conv.label_key.copy_(table)
        conv.label_value.copy_(table)
    x, ei, et = _random_graph(8, 25, [L], seed=5)
    torch.testing.assert_close(conv(x, ei, et[:, 0]), tc(x, ei, F.one_hot(et[:, 0], L).to(DT)))


# ---------------------------------------------------------------- properties
def _conv(**kw) -> G2GConv:
    torch.manual_seed(6)
    return G2GConv(6, 4, heads=2, num_edge_labels=[3, 5], **kw).to(DT)


@pytest.mark.parametrize("label_path", ["auto", "dense", "edge"])
def test_fused_equals_message_passing_path_with_grads(label_path: str) -> None:
    x, ei, et = _random_graph(10, 40, [3, 5], seed=7)
    outs = []
    for fused in (True, False):
        for shared in (True, False):
            conv = _conv(fused=fused, shared_labels=shared)
            conv.label_path = label_path
            xr = x.clone().requires_grad_()
            y = conv(xr, ei, et)
            (y * torch.linspace(-1, 1, y.numel(), dtype=DT).view_as(y)).sum().backward()
            outs.append((shared, y, _grads(conv, xr)))
    for shared in (True, False):
        (_, y1, g1), (_, y2, g2) = [o for o in outs if o[0] == shared]
        torch.testing.assert_close(y1, y2)
        assert g1.keys() == g2.keys()
        for k in g1:
            torch.testing.assert_close(g1[k], g2[k], msg=k)


@pytest.mark.parametrize("label_path", ["dense", "edge"])
def test_gradcheck_fused_kernels(label_path: str) -> None:
    x, ei, et = _random_graph(5, 12, [3, 5], seed=8, d=3)
    for shared in (True, False):
        torch.manual_seed(9)
        conv = G2GConv(3, 2, heads=2, num_edge_labels=[3, 5], shared_labels=shared).to(DT)
        conv.label_path = label_path
        xr = x.clone().requires_grad_()
        assert torch.autograd.gradcheck(
            lambda x_, k_, v_, conv=conv: conv(x_, ei, et), (xr, conv.label_key, conv.label_value)
        )


def test_batch_equals_one_by_one() -> None:
    conv = _conv()
    graphs = []
    for s, n in enumerate([4, 7, 1, 5]):
        x, ei, et = _random_graph(n, 3 * n, [3, 5], seed=10 + s)
        graphs.append(Data(x=x, edge_index=ei, edge_type=et))
    singles = [conv(g.x, g.edge_index, g.edge_type) for g in graphs]
    batch = Batch.from_data_list(graphs)
    torch.testing.assert_close(conv(batch.x, batch.edge_index, batch.edge_type), torch.cat(singles))
    loader = DataLoader(graphs, batch_size=3, shuffle=False)
    got = torch.cat([conv(b.x, b.edge_index, b.edge_type) for b in loader])
    torch.testing.assert_close(got, torch.cat(singles))


def test_permutation_equivariance() -> None:
    conv = _conv()
    n = 9
    x, ei, et = _random_graph(n, 30, [3, 5], seed=20)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    y = conv(x, ei, et)
    # node perm[k] of the new graph is old node k... relabel: new id of old node u = inv[u]
    x_p = x[perm]
    e_perm = torch.randperm(ei.shape[1], generator=torch.Generator().manual_seed(2))
    y_p = conv(x_p, inv[ei][:, e_perm], et[e_perm])
    torch.testing.assert_close(y_p, y[perm])


def test_isolated_nodes_finite_and_attention_normalised() -> None:
    conv = _conv(dropout=0.3)
    conv.eval()
    n = 8
    ei = torch.tensor([[0, 1, 2, 2, 3], [1, 1, 0, 3, 3]])  # nodes 2 and 4..7 receive nothing
    et = torch.tensor([[0, 1], [1, 4], [2, 0], [0, 3], [1, 1]])
    x = torch.randn(n, 6, dtype=DT, requires_grad=True)
    y, (ei_out, alpha) = conv(x, ei, et, return_attention_weights=True)
    assert torch.equal(ei_out, ei)
    assert alpha.shape == (5, 2)
    assert torch.isfinite(y).all()
    y.sum().backward()
    assert torch.isfinite(x.grad).all()
    sums = scatter(alpha, ei[1], dim=0, dim_size=n, reduce="sum")
    has_in = torch.zeros(n, dtype=torch.bool)
    has_in[ei[1]] = True
    torch.testing.assert_close(sums[has_in], torch.ones_like(sums[has_in]))
    assert (sums[~has_in] == 0).all()
    # isolated nodes see only the root term
    torch.testing.assert_close(y[4:], conv.lin_skip(x[4:]))
    # no edges at all
    y0 = conv(x, torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 2, dtype=torch.long))
    torch.testing.assert_close(y0, conv.lin_skip(x))


def test_dropout_only_in_training() -> None:
    x, ei, et = _random_graph(10, 60, [3, 5], seed=21)
    conv = _conv(dropout=0.5)
    conv.eval()
    a, b = conv(x, ei, et), conv(x, ei, et)
    torch.testing.assert_close(a, b)
    conv.train()
    torch.manual_seed(0)
    c = conv(x, ei, et)
    assert not torch.allclose(a, c)


def test_flow_target_to_source_and_bipartite() -> None:
    x, ei, et = _random_graph(7, 20, [3, 5], seed=22)
    conv = _conv()
    torch.manual_seed(6)
    conv_t = G2GConv(6, 4, heads=2, num_edge_labels=[3, 5], flow="target_to_source").to(DT)
    conv_t.load_state_dict(conv.state_dict())
    torch.testing.assert_close(conv_t(x, ei.flip(0), et), conv(x, ei, et))
    # bipartite: sources and targets are different node sets
    torch.manual_seed(0)
    bip = G2GConv((6, 3), 4, heads=2, num_edge_labels=[3, 5]).to(DT)
    xs = torch.randn(5, 6, dtype=DT)
    xt = torch.randn(4, 3, dtype=DT)
    eb = torch.stack([torch.randint(0, 5, (11,)), torch.randint(0, 4, (11,))])
    y = bip((xs, xt), eb, et[:11])
    assert y.shape == (4, 8)
    bip.fused = False
    torch.testing.assert_close(bip((xs, xt), eb, et[:11]), y)


def test_edge_relative_positions_in_batch() -> None:
    sizes = [3, 5, 2]
    graphs = [Data(x=torch.zeros(n, 1), edge_index=_complete_graph(n)) for n in sizes]
    b = Batch.from_data_list(graphs)
    pos = node_positions(b.batch, b.num_nodes)
    assert torch.equal(pos, node_positions(b.batch, b.num_nodes, b.ptr))
    rel = edge_relative_positions(b.edge_index, pos, 2)
    want = torch.cat([relative_position_labels(n, 2)[_complete_graph(n)[1], _complete_graph(n)[0]] for n in sizes])
    assert torch.equal(rel, want)


def test_errors_and_repr_and_reset() -> None:
    conv = _conv()
    x, ei, et = _random_graph(5, 8, [3, 5], seed=23)
    with pytest.raises(ValueError, match=r"\[E, 2\]"):
        conv(x, ei, et[:, 0])
    bad = et.clone()
    bad[0, 1] = 5
    with pytest.raises(ValueError, match="channel 1"):
        conv(x, ei, bad)
    with pytest.raises(ValueError, match="edge_type"):
        conv(x, ei)
    with pytest.raises(ValueError, match="outside"):
        conv(x, ei + 10, et)
    plain = G2GConv(6, 4, heads=2).to(DT)
    assert plain.label_key is None and plain(x, ei).shape == (5, 8)
    r = repr(conv)
    assert "heads=2" in r and "num_edge_labels=[3, 5]" in r
    before = conv.label_key.detach().clone()
    conv.reset_parameters()
    assert not torch.equal(before, conv.label_key)
    lazy = G2GConv(-1, 4, heads=2, num_edge_labels=[3, 5]).to(DT)
    assert lazy(x, ei, et).shape == (5, 8)


def test_positional_arguments_follow_pyg() -> None:
    """The fourth positional argument is ``concat`` (as in PyG's convs); the label count is keyword-only."""
    x, ei, _ = _random_graph(5, 8, [3, 5], seed=24)
    averaged = G2GConv(6, 4, 2, False).to(DT)
    assert averaged.concat is False and averaged.label_key is None and averaged(x, ei).shape == (5, 4)
    with pytest.raises(TypeError):
        G2GConv(6, 4, 2, False, 7)  # num_edge_labels (and everything after concat) must be named
