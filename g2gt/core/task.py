"""The task protocol: what :class:`g2gt.core.train.Trainer` needs from a task, as a :class:`typing.Protocol`.

A *task* tells the Trainer how to batch its data, compute a loss and evaluate; the Trainer owns everything
else (optimizer, schedule, budget, checkpoints, resume, DDP). Any object with these methods is a task;
``isinstance(obj, Task)`` checks that they are there (not their signatures)::

    class MyTask:
        def train_batches(self, epoch, rank, world_size, skip=0): ...  # Iterable of batches
        def num_tokens(self, batch): ...                                 # what the loss is normalised by
        def loss(self, model, batch): ...                                # SUM of the per-token losses, a scalar
        def evaluate(self, model): ...                                   # {"metric": value, ...}

Optional: ``checkpoint_extra(self) -> dict`` (vocabularies etc., saved in every checkpoint as ``ck["task"]``;
it should hold ``"kind"``, the name of what the checkpoint is, see :data:`g2gt.core.checkpoint.CHECKPOINT_KINDS`)
and ``num_train_batches(self, epoch, rank, world_size) -> int`` (progress bars, schedules by epochs).
Examples: :class:`g2gt.ud.parse.ParsingTask`, :class:`g2gt.seq2seq.Seq2SeqTask`, ``examples/reverse.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from torch import Tensor, nn

__all__ = ["Task"]


@runtime_checkable
class Task(Protocol):
    """What :class:`g2gt.core.train.Trainer` calls on a task (see the module docstring)."""

    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> Iterable[Any]:
        """This rank's training batches of ``epoch``.

        Deterministic in ``(epoch, rank, world_size)``, without the first ``skip`` (exact resume).

        Args:
            epoch: the epoch.
            rank: this process's rank.
            world_size: number of processes.
            skip: batches to leave out at the start.

        Returns:
            The batches, in order.
        """
        ...

    def num_tokens(self, batch: Any) -> int:
        """The number of tokens of ``batch`` the loss is a sum over.

        Every step normalises by the tokens of all its micro-batches on all ranks.

        Args:
            batch: one batch of :meth:`train_batches`.

        Returns:
            The token count.
        """
        ...

    def loss(self, model: nn.Module, batch: Any) -> Tensor:
        """The SUM of the per-token losses of ``batch`` (a scalar tensor).

        Args:
            model: the model (its ``DistributedDataParallel`` wrapper under ``torchrun``).
            batch: one batch of :meth:`train_batches`.

        Returns:
            A scalar tensor.
        """
        ...

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        """Dev metrics; must contain ``TrainConfig.metric``.

        Args:
            model: the model, in eval mode.

        Returns:
            Metric name -> value.
        """
        ...
