"""The task protocol is a typing.Protocol: the library's tasks satisfy it, an incomplete object does not."""

from __future__ import annotations

from g2gt.core.task import Task
from g2gt.core.train import Task as TrainTask


def test_library_tasks_are_tasks():
    from g2gt.seq2seq.task import Seq2SeqTask
    from g2gt.ud.enhance.task import EnhancerTask
    from g2gt.ud.parse.task import ParsingTask
    from g2gt.ud.tokenize.task import SegmentTask

    assert TrainTask is Task
    for cls in (ParsingTask, EnhancerTask, SegmentTask, Seq2SeqTask):
        assert issubclass(cls, Task), cls


def test_an_object_without_a_loss_is_not_a_task():
    class NoLoss:
        def train_batches(self, epoch, rank, world_size, skip=0):
            return []

        def num_tokens(self, batch):
            return 0

        def evaluate(self, model):
            return {}

    assert not isinstance(NoLoss(), Task)
