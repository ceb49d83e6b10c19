"""On a CUDA device: the first updates' losses are the CPU's in float32 (TF32 off), and the training updates make no
host sync (``torch.cuda.set_sync_debug_mode("error")`` around them). Skipped without CUDA; ``benchmarks/gpu_check.py``
runs them (``-k cuda``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from g2gt.core.train import TrainConfig, Trainer
from fixture_paths import FIXTURES_MT, ROOT
from helpers_ddp import ReverseTask, make_sequences, tiny_model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def ieee_float32():
    """Float32 products in float32 (TF32 rounds them to 10 bits of mantissa)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _cfg(device: str, **kw) -> TrainConfig:
    base = dict(lr=1e-3, warmup_steps=2, max_steps=3, log_every=1, eval_every=0, progress=False, device=device,
                amp="none", seed=3)
    return TrainConfig(**(base | kw))


def _train_losses(folder: Path) -> list[float]:
    lines = [json.loads(x) for x in (folder / "log.jsonl").read_text().splitlines()]
    return [e["loss"] for e in lines if e["kind"] == "train"]


def _parsing():
    from g2gt.ud.io import read_conllu
    from g2gt.ud.parse.model import ParserModel
    from g2gt.ud.parse.task import ParsingTask
    from g2gt.ud.parse.vocab import ParserVocab

    sample = ROOT / "g2gt" / "data" / "ud-en-ewt"
    train = list(read_conllu(sample / "en_ewt-ud-train.sample.conllu"))[:80]
    dev = list(read_conllu(sample / "en_ewt-ud-dev.sample.conllu"))[:4]
    vocab = ParserVocab.build(train)
    torch.manual_seed(0)
    # no dropout anywhere: the CPU and the GPU draw different random numbers
    model = ParserModel(vocab.config(d_model=64, num_layers=2, num_heads=4, ffn_dim=128, dropout=0.0,
                                     head_dropout=0.0, char_filters=32))
    return model, ParsingTask(train, dev, vocab, batch_tokens=400, refine_train="self", refine_steps=1,
                              word_dropout=0.0)


def _seq2seq():
    from g2gt.nn.transformer import G2GTransformer
    from g2gt.seq2seq.config import Seq2SeqConfig
    from g2gt.seq2seq.recipe import _new_task

    src = (FIXTURES_MT / "train.en").read_text().splitlines()
    tgt = (FIXTURES_MT / "train.de").read_text().splitlines()
    cfg = Seq2SeqConfig(d_model=64, num_layers=2, num_heads=4, ffn_dim=128, dropout=0.0, bpe_vocab=300,
                        batch_tokens=400)
    task = _new_task(src, tgt, False, cfg, seed=1)
    task.train = task.encode_pairs(src, tgt, "train")
    task.dev = task.encode_pairs(src[:4], tgt[:4], "dev")
    torch.manual_seed(0)
    return G2GTransformer(task.model_config(**cfg.model_kwargs())), task


def _reverse():
    return tiny_model(), ReverseTask(make_sequences(40, seed=1), make_sequences(8, seed=2), max_tokens=48)


CASES = {"reverse": (_reverse, "loss", "min"), "parser": (_parsing, "las", "max"), "seq2seq": (_seq2seq, "bleu", "max")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_first_losses_on_cuda_are_the_cpus(tmp_path, case):
    make, metric, mode = CASES[case]
    losses = {}
    for device in ("cpu", "cuda"):
        model, task = make()
        Trainer(model, task, _cfg(device, metric=metric, metric_mode=mode), tmp_path / device).fit()
        losses[device] = _train_losses(tmp_path / device)
    assert len(losses["cuda"]) == 3
    for a, b in zip(losses["cpu"], losses["cuda"]):
        assert math.isclose(a, b, rel_tol=2e-4), (losses["cpu"], losses["cuda"])


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("amp", ["none", "bf16"])
def test_cuda_updates_make_no_host_sync(tmp_path, case, amp):
    """Between two log lines nothing is read back: ``set_sync_debug_mode("error")`` raises at the first sync inside
    an update (the optimizer's own step left out: AdamW keeps its step counts on the host)."""
    make, metric, mode = CASES[case]
    model, task = make()
    trainer = Trainer(model, task, _cfg("cuda", metric=metric, metric_mode=mode, amp=amp, log_every=1000),
                      tmp_path)
    micro = trainer._micro_step

    def strict(*args, **kw):
        torch.cuda.set_sync_debug_mode("error")
        try:
            return micro(*args, **kw)
        finally:
            torch.cuda.set_sync_debug_mode("default")

    trainer._micro_step = strict
    trainer.optimizer.register_step_pre_hook(lambda *a: torch.cuda.set_sync_debug_mode("default"))
    trainer.optimizer.register_step_post_hook(lambda *a: torch.cuda.set_sync_debug_mode("error"))
    try:
        trainer.fit()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert trainer.step == 3
