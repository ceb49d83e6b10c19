"""The training loop reads nothing back from the device per step: the losses accumulate there and are read at the
log / evaluation intervals only, with the same logged numbers as adding each step's loss on the host.

A host sync cannot be seen on a CPU, so :class:`SyncCounter` counts the operators that force one on a GPU
(``.item()`` / ``float()`` / ``int()`` / ``bool()`` of a tensor, ``nonzero``, boolean indexing, ``masked_select``
...) while the Trainer runs its updates, the optimizer's own step left out (AdamW keeps its step counts on the host
by design).
"""

from __future__ import annotations

import json
import logging
import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from g2gt.core.train import TrainConfig, Trainer
from g2gt.core import runtime
from fixture_paths import ROOT
from helpers_ddp import ReverseTask, make_sequences, tiny_model

aten = torch.ops.aten
#: operators whose result size or value the host must wait for on a GPU
SYNC_OPS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default,
            aten.is_nonzero.default, aten.unique_consecutive.default, aten._unique2.default,
            aten.repeat_interleave.Tensor}


class SyncCounter(TorchDispatchMode):
    """Counts :data:`SYNC_OPS` and boolean indexing (``x[mask]``, ``x[mask] = v``) while ``active``."""

    def __init__(self) -> None:
        super().__init__()
        self.active = False
        self.calls: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.active:
            bool_index = func in (aten.index.Tensor, aten.index_put.default, aten.index_put_.default) and any(
                isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (args[1] or ()) if i is not None)
            if func in SYNC_OPS or bool_index:
                self.calls.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.fixture(autouse=True)
def device_paths(monkeypatch):
    """The paths taken off the CPU (the character CNN without compaction, the label check in the device's queue),
    which are what runs on a GPU; on the CPU they would read on the host, where that costs nothing."""
    monkeypatch.setattr(runtime, "host_reads_are_free", lambda t: False)


def count_update_syncs(trainer: Trainer) -> SyncCounter:
    """Count the syncs of ``trainer``'s updates (forward, backward, clipping, loss accumulation; the batches are
    already on the device there) during a :meth:`Trainer.fit`, without the optimizer's step."""
    counter = SyncCounter()
    micro = trainer._micro_step

    def counted(*args, **kw):
        counter.active = True
        try:
            return micro(*args, **kw)
        finally:
            counter.active = False

    trainer._micro_step = counted
    pre = trainer.optimizer.register_step_pre_hook(lambda *a: setattr(counter, "active", False))
    post = trainer.optimizer.register_step_post_hook(lambda *a: setattr(counter, "active", True))
    with counter:
        trainer.fit()
    pre.remove()
    post.remove()
    return counter


def _cfg(**kw) -> TrainConfig:
    base = dict(lr=2e-3, warmup_steps=2, max_steps=4, log_every=1000, eval_every=0, progress=False, device="cpu",
                amp="none", seed=3)
    base.update(kw)
    return TrainConfig(**base)


class RecordingTask(ReverseTask):
    """The reversal task, keeping each batch's loss tensor (a device copy: no sync) and token count."""

    def __init__(self, *a, nan_at: int | None = None, **kw) -> None:
        super().__init__(*a, **kw)
        self.losses: list[torch.Tensor] = []
        self.tokens: list[int] = []
        self.nan_at = nan_at

    def loss(self, model, batch):
        loss = super().loss(model, batch)
        if not model.training:
            return loss
        if self.nan_at is not None and len(self.losses) == self.nan_at:
            loss = loss * float("nan")
        self.losses.append(loss.detach().clone())
        self.tokens.append(int((batch[2] != 0).sum()))  # the test's own read (not in a counted run)
        return loss


def _reverse_task(**kw) -> RecordingTask:
    return RecordingTask(make_sequences(40, seed=1), make_sequences(8, seed=2), max_tokens=48, **kw)


def test_trainer_updates_read_nothing_back(tmp_path):
    task = ReverseTask(make_sequences(40, seed=1), make_sequences(8, seed=2), max_tokens=48)
    trainer = Trainer(tiny_model(), task, _cfg(metric="loss"), tmp_path)
    assert count_update_syncs(trainer).calls == []


@pytest.mark.parametrize("log_every,accum", [(1, 1), (3, 1), (2, 2)])
def test_logged_losses_are_the_sums_of_the_steps(tmp_path, log_every, accum):
    """Each log line's loss is the sum of its updates' losses, added one by one in float64, over their tokens:
    the numbers the Trainer logged when it read every loss back."""
    task = _reverse_task()
    Trainer(tiny_model(), task, _cfg(max_steps=6, log_every=log_every, accum_steps=accum, eval_every=4), tmp_path).fit()
    lines = [json.loads(x) for x in (tmp_path / "log.jsonl").read_text().splitlines()]
    per_step = [sum(float(x) for x in task.losses[i:i + accum]) for i in range(0, 6 * accum, accum)]
    toks = [sum(task.tokens[i:i + accum]) for i in range(0, 6 * accum, accum)]
    train = [e for e in lines if e["kind"] == "train"]
    assert [e["step"] for e in train] == list(range(log_every, 7, log_every))
    for e in train:
        lo = e["step"] - log_every
        expect = 0.0
        for k in range(lo, e["step"]):
            expect += per_step[k]
        # an evaluation inside the interval splits the sum into two parts (still float64)
        assert math.isclose(e["loss"], expect / sum(toks[lo:e["step"]]), rel_tol=1e-12)
    first_eval = next(e for e in lines if e["kind"] == "eval")
    assert math.isclose(first_eval["train_loss"], sum(per_step[:4]) / sum(toks[:4]), rel_tol=1e-12)


def test_a_nan_loss_is_reported_at_the_log_interval(tmp_path, caplog):
    task = _reverse_task(nan_at=2)
    with caplog.at_level(logging.WARNING, logger="g2gt"):
        Trainer(tiny_model(), task, _cfg(max_steps=4, log_every=2, metric="loss"), tmp_path).fit()
    warned = [r.getMessage() for r in caplog.records if "non-finite training loss" in r.getMessage()]
    assert warned == ["non-finite training loss (nan) in the updates up to step 4"]
    losses = [json.loads(x)["loss"] for x in (tmp_path / "log.jsonl").read_text().splitlines()
              if json.loads(x)["kind"] == "train"]
    assert math.isfinite(losses[0]) and math.isnan(losses[1])


# ------------------------------------------------------------------ the tasks' own losses
def _sample(name: str, n: int):
    from g2gt.ud.io import read_conllu

    return list(read_conllu(ROOT / f"g2gt/data/ud-en-ewt/en_ewt-ud-{name}.sample.conllu"))[:n]


def _parsing(refine: str):
    from g2gt.ud.parse.model import ParserModel
    from g2gt.ud.parse.task import ParsingTask
    from g2gt.ud.parse.vocab import ParserVocab

    train = _sample("train", 60)
    vocab = ParserVocab.build(train)
    torch.manual_seed(0)
    model = ParserModel(vocab.config(d_model=32, num_layers=1, num_heads=2, ffn_dim=64, char_filters=16))
    return model, ParsingTask(train, _sample("dev", 4), vocab, batch_tokens=300, refine_train=refine, refine_steps=1)


@pytest.mark.parametrize("refine", ["self", "corrupt"])
def test_parser_updates_read_nothing_back(tmp_path, refine):
    model, task = _parsing(refine)
    trainer = Trainer(model, task, _cfg(max_steps=2, metric="las", metric_mode="max"), tmp_path)
    assert count_update_syncs(trainer).calls == []


def test_seq2seq_updates_read_nothing_back(tmp_path):
    from g2gt.seq2seq.config import Seq2SeqConfig
    from g2gt.seq2seq.recipe import _new_task
    from g2gt.nn.transformer import G2GTransformer
    from fixture_paths import FIXTURES_MT

    src = (FIXTURES_MT / "train.de").read_text().splitlines()[:60]
    tgt = (FIXTURES_MT / "train.en").read_text().splitlines()[:60]
    cfg = Seq2SeqConfig(d_model=32, num_layers=1, num_heads=2, ffn_dim=64, bpe_vocab=300, batch_tokens=300)
    task = _new_task(src, tgt, False, cfg, seed=1)
    task.train = task.encode_pairs(src, tgt, "train")
    task.dev = task.encode_pairs(src[:4], tgt[:4], "dev")
    torch.manual_seed(0)
    model = G2GTransformer(task.model_config(**cfg.model_kwargs()))
    trainer = Trainer(model, task, _cfg(max_steps=2, metric="bleu", metric_mode="max"), tmp_path)
    assert count_update_syncs(trainer).calls == []


# ------------------------------------------------------------------ the sync-free rewrites compute the same
def test_dependency_labels_equal_the_selected_writes():
    from g2gt.ud.parse.batching import dependency_labels

    g = torch.Generator().manual_seed(0)
    for dtype in (torch.long, torch.uint8):
        B, n = 5, 9
        heads = torch.randint(0, n, (B, n), generator=g)
        heads[0, 3], heads[0, 4] = 4, 3  # each other's heads: rel-up is written last
        rels = torch.randint(0, 20, (B, n), generator=g)
        valid = torch.rand(B, n, generator=g) < 0.7
        valid[:, 0] = False
        valid[0, 3:5] = True
        expect = torch.zeros(B, n, n, dtype=dtype)
        b, i = valid.nonzero(as_tuple=True)
        h = heads[b, i]
        expect[b, h, i] = (2 + 2 * rels[b, i]).to(dtype)
        expect[b, i, h] = (1 + 2 * rels[b, i]).to(dtype)
        assert torch.equal(dependency_labels(heads, rels, valid, dtype), expect)


def test_parser_pass_loss_equals_the_selected_cross_entropy():
    import torch.nn.functional as F
    from g2gt.ud.parse.model import ParserModel

    g = torch.Generator().manual_seed(1)
    B, n, R, P = 3, 7, 5, 4
    arc, rel, upos = torch.randn(B, n, n, generator=g), torch.randn(B, n, R, generator=g), torch.randn(B, n, P, generator=g)
    gh, gr, gu = (torch.randint(0, k, (B, n), generator=g) for k in (n, R, P))
    m = torch.rand(B, n, generator=g) < 0.8
    got = ParserModel.pass_loss((arc, rel, {"upos": upos}, None), m, gh, gr, {"upos": gu})
    expect = sum(F.cross_entropy(x[m], y[m], reduction="sum") for x, y in ((arc, gh), (rel, gr), (upos, gu)))
    assert torch.allclose(got, expect, rtol=1e-6)


def test_char_cnn_device_path_equals_the_compacted_one(monkeypatch):
    from g2gt.nn.heads import CharCNNWordEncoder

    torch.manual_seed(0)
    enc = CharCNNWordEncoder(30, 16, char_dim=8, filters=12)
    chars = torch.randint(1, 30, (6, 9))
    for row, length in enumerate([9, 1, 4, 0, 7, 2]):
        chars[row, length:] = 0
    monkeypatch.setattr(runtime, "host_reads_are_free", lambda t: True)
    compact = enc(chars)
    monkeypatch.setattr(runtime, "host_reads_are_free", lambda t: False)
    assert torch.allclose(enc(chars), compact, atol=1e-6)


def test_label_range_is_checked_in_the_device_queue():  # (the autouse fixture: the path taken off the CPU)
    from g2gt.nn.label_kernels import check_labels

    labels = torch.zeros(1, 1, 3, 3, dtype=torch.long)
    assert check_labels(labels, [4], True, 1, 3, 3) is labels
    labels[0, 0, 1, 2] = 4
    with pytest.raises(RuntimeError):  # on a CPU the queued check fails at once
        check_labels(labels, [4], True, 1, 3, 3)


def test_distillation_kl_and_class_map_equal_the_selected_rows():
    from g2gt.ud.parse.distill_task import _kl, _mapped

    g = torch.Generator().manual_seed(2)
    logits = torch.randn(2, 5, 6, generator=g)
    logits[..., 0] = float("-inf")
    q = torch.softmax(torch.randn(2, 5, 6, generator=g), -1)
    q[..., 0] = 0
    mask = torch.rand(2, 5, generator=g) < 0.6
    logp = torch.log_softmax(logits[mask], -1).masked_fill(q[mask] <= 0, 0.0)
    assert torch.allclose(_kl(logits, q, mask, 1.0), (torch.xlogy(q[mask], q[mask]) - q[mask] * logp).sum())
    cmap = torch.tensor([2, -1, 0, 0, -1, 1])
    out, weight = _mapped(q, cmap, 3)
    keep = cmap >= 0
    ref = q.new_zeros(2, 5, 3).index_add_(-1, cmap[keep], q[..., keep])
    mass = ref.sum(-1)
    assert torch.allclose(out, ref / mass.clamp_min(torch.finfo(q.dtype).tiny)[..., None])
    assert torch.equal(weight, (mass > 0).float())
