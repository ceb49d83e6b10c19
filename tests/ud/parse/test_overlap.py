"""g2gt.ud.parse.overlap (batches decoded ahead on worker threads, results in order) with small fakes, and
decode_sentences giving the same parses with batches ahead as without."""

from __future__ import annotations

import random
import threading
import time

import pytest
import torch

from g2gt.data import EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN
from g2gt.ud.io import read_conllu
from g2gt.ud.parse import ParserModel, ParserVocab
from g2gt.ud.parse.decode import decode_sentences
from g2gt.ud.parse.overlap import CUDA_BATCHES_AHEAD, batches_ahead, in_order, thread_context


class Recorder:
    """A fake batch decoder: sleeps a random while, records which calls overlap and on which thread."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.started: list[int] = []
        self.threads: set[int] = set()
        self.fail_at = fail_at

    def __call__(self, item: int) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(item)
            self.threads.add(threading.get_ident())
        time.sleep(random.Random(item).uniform(0.0, 0.01))
        with self.lock:
            self.running -= 1
        if item == self.fail_at:
            raise RuntimeError(f"batch {item} failed")
        return item * item


def test_one_ahead_is_a_lazy_loop_in_the_callers_thread() -> None:
    fake = Recorder()
    it = in_order(range(5), fake, 1)
    assert fake.started == []
    assert next(it) == 0 and fake.started == [0]
    assert list(it) == [1, 4, 9, 16]
    assert fake.threads == {threading.get_ident()} and fake.most == 1


@pytest.mark.parametrize("ahead", [2, 3])
def test_results_come_in_input_order_with_at_most_ahead_calls_in_flight(ahead) -> None:
    fake = Recorder()
    assert list(in_order(range(30), fake, ahead)) == [i * i for i in range(30)]
    assert 1 < fake.most <= ahead
    assert threading.get_ident() not in fake.threads
    assert sorted(fake.started) == list(range(30))


def test_a_failing_call_raises_at_its_place_and_stops_the_rest() -> None:
    fake = Recorder(fail_at=4)
    got = []
    with pytest.raises(RuntimeError, match="batch 4 failed"):
        for r in in_order(range(50), fake, 2):
            got.append(r)
    assert got == [0, 1, 4, 9]
    assert max(fake.started) <= 6  # at most ahead calls were submitted beyond the failing one


def test_an_abandoned_iteration_stops_submitting() -> None:
    fake = Recorder()
    it = in_order(range(50), fake, 2)
    assert [next(it) for _ in range(3)] == [0, 1, 4]
    it.close()
    assert len(fake.started) <= 5


def test_worker_threads_get_the_callers_autocast_state() -> None:
    def state(_: int) -> tuple[bool, torch.dtype | None]:
        on = torch.is_autocast_enabled("cpu")
        return on, torch.get_autocast_dtype("cpu") if on else None

    assert list(in_order(range(3), state, 2, thread_context("cpu"))) == [(False, None)] * 3
    with thread_context(torch.device("cpu"))():  # nothing to enter
        assert not torch.is_autocast_enabled("cpu")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ctx = thread_context("cpu")
    assert list(in_order(range(3), state, 2, ctx)) == [(True, torch.bfloat16)] * 3
    assert list(in_order(range(3), state, 2)) == [(False, None)] * 3  # threads do not inherit it by themselves


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_worker_threads_get_the_callers_cuda_device() -> None:
    dev = torch.device("cuda", torch.cuda.device_count() - 1)
    assert list(in_order(range(3), lambda _: torch.cuda.current_device(), 2, thread_context(dev))) == [dev.index] * 3


def test_batches_ahead_by_device() -> None:
    assert batches_ahead("cpu") == 1 and batches_ahead(torch.device("cpu")) == 1
    assert batches_ahead("cuda:0") == CUDA_BATCHES_AHEAD == 2
    assert batches_ahead("cpu", 3) == 3 and batches_ahead("cuda", 1) == 1
    with pytest.raises(ValueError, match=">= 1"):
        batches_ahead("cpu", 0)


def test_decode_sentences_gives_the_same_parses_with_batches_ahead() -> None:
    train, dev = read_conllu(EWT_SAMPLE_TRAIN)[:150], read_conllu(EWT_SAMPLE_DEV)[:40]
    vocab = ParserVocab.build(train, min_freq=1)
    torch.manual_seed(0)
    model = ParserModel(vocab.config(d_model=16, num_heads=2, num_layers=1, ffn_dim=32, arc_dim=16, label_dim=8,
                                     char_dim=8, char_filters=16, dropout=0.1, head_dropout=0.1))
    model.train()  # as during dev evaluation: decoding runs in eval mode and hands the model back in train mode
    plain = decode_sentences(model, vocab, dev, 8, batch_tokens=120, record_iterations=True)
    assert model.training
    ahead = decode_sentences(model, vocab, dev, 8, batch_tokens=120, record_iterations=True, ahead=3)
    assert model.training
    assert ahead == plain
