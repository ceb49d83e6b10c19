"""Old spellings keep working for one release, each with a DeprecationWarning; the signature shows the new name."""

from __future__ import annotations

import inspect

import pytest

from g2gt.core.deprecation import renamed_kwargs, renamed_params


@renamed_params(max_tokens="batch_tokens")
def _budget(items, batch_tokens=3000):
    return batch_tokens


def test_renamed_params_moves_the_value_and_warns():
    assert _budget([]) == 3000 and _budget([], batch_tokens=7) == 7
    with pytest.warns(DeprecationWarning, match="'max_tokens' is deprecated.*'batch_tokens'"):
        assert _budget([], max_tokens=9) == 9
    assert "batch_tokens" in inspect.signature(_budget).parameters  # what the CLI options are built from
    assert "max_tokens" not in inspect.signature(_budget).parameters


def test_both_spellings_at_once_is_an_error():
    with pytest.raises(TypeError, match="both 'max_tokens' and 'batch_tokens'"):
        renamed_kwargs({"max_tokens": 1, "batch_tokens": 2}, {"max_tokens": "batch_tokens"}, "f")


def test_library_old_names_still_work():
    from g2gt.ud.parse.batching import length_batches

    lengths = [5, 3, 40, 2, 9]
    with pytest.warns(DeprecationWarning):
        old = length_batches(lengths, max_tokens=20)
    assert old == length_batches(lengths, 20) == length_batches(lengths, batch_tokens=20)


def test_graph_attention_is_causal_is_deprecated():
    import torch

    from g2gt.nn import GraphAttention

    attn = GraphAttention(8, 2).double().eval()
    x = torch.randn(1, 4, 8, dtype=torch.float64)
    with pytest.warns(DeprecationWarning, match="is_causal.*causal"):
        old = attn(x, is_causal=True)
    torch.testing.assert_close(old, attn(x, causal=True), rtol=0, atol=0)
