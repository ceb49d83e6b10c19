"""Old spellings keep working for one release, each with a DeprecationWarning; the signature shows the new name."""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import pytest

from g2gt.core.deprecation import renamed_fields, renamed_kwargs, renamed_params, upgrade_keys


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


@renamed_fields(width="num_width")
@dataclasses.dataclass
class _Toy:
    num_width: int = 3
    depth: int = 1


def test_renamed_fields_old_keyword_and_attribute_warn_and_work():
    with pytest.warns(DeprecationWarning, match="_Toy: 'width' is deprecated.*'num_width'"):
        toy = _Toy(width=5)
    assert toy == _Toy(num_width=5) and [f.name for f in dataclasses.fields(_Toy)] == ["num_width", "depth"]
    with pytest.warns(DeprecationWarning, match="'width'"):
        assert toy.width == 5
    with pytest.raises(TypeError, match="both 'width' and 'num_width'"):
        _Toy(width=1, num_width=2)


def test_renamed_fields_read_stored_dicts_with_old_keys_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checkpoint written before the rename is not the reader's fault
        assert _Toy.from_dict({"width": 7, "depth": 2}) == _Toy(num_width=7, depth=2)
        assert upgrade_keys({"width": 1, "num_width": 2}, {"width": "num_width"}) == {"num_width": 2}


def test_config_renames_num_labels_num_layers_num_heads_batch_tokens():
    from g2gt.nn import G2GTConfig
    from g2gt.seq2seq import Seq2SeqSettings, Seq2SeqTrainConfig

    with pytest.warns(DeprecationWarning, match="encoder_labels.*num_labels"):
        old = G2GTConfig(src_vocab_size=10, encoder_labels=[5, 3])
    assert old == G2GTConfig(src_vocab_size=10, num_labels=[5, 3]) and "encoder_labels" not in old.to_dict()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rc = Seq2SeqTrainConfig(layers=2, heads=1, encoder_layers=4, decoder_layers=1)
    assert sorted(str(w.message).split("'")[1] for w in seen if w.category is DeprecationWarning) == [
        "decoder_layers", "encoder_layers", "heads", "layers"]
    assert (rc.num_layers, rc.num_heads, rc.num_encoder_layers, rc.num_decoder_layers) == (2, 1, 4, 1)
    assert rc.model_kwargs()["num_encoder_layers"] == 4 and rc.model_kwargs()["num_heads"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stored = G2GTConfig.from_dict({"src_vocab_size": 10, "encoder_labels": [34]})
        assert stored.num_labels == [34]
        assert Seq2SeqSettings.from_dict({"max_tokens": 77}).batch_tokens == 77
        assert Seq2SeqTrainConfig.from_dict({"layers": 5, "heads": 2}).num_layers == 5
