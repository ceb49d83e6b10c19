"""Test support: a tiny sequence-reversal task over chain graphs, and a script that
trains it under ``torchrun`` (used by ``tests/core/test_train.py`` to compare DDP with
gradient accumulation).

Run as::

    python -m torch.distributed.run --nproc_per_node=2 tests/helpers_ddp.py OUT.pt --steps 3
"""

from __future__ import annotations

import argparse
import os
import random
import sys

import torch
import torch.nn.functional as F

from g2gt.core import BucketBatchSampler, chain_graph, collate, num_chain_labels
from g2gt.core.batch import pad_sequences
from g2gt.nn import G2GTConfig, G2GTransformer

PAD, BOS, EOS = 0, 1, 2
MAX_DISTANCE = 4


def make_sequences(n: int, vocab: int = 12, min_len: int = 3, max_len: int = 8, seed: int = 0) -> list[list[int]]:
    """``n`` random token sequences over ids ``3 .. vocab-1``."""
    rng = random.Random(seed)
    return [[rng.randrange(3, vocab) for _ in range(rng.randint(min_len, max_len))] for _ in range(n)]


def make_batch(seqs: list[list[int]]):
    """``(GraphBatch of sources, target inputs [B, m], target outputs [B, m])`` for reversal."""
    src = collate([chain_graph(s, MAX_DISTANCE) for s in seqs])
    tgt_in = pad_sequences([[BOS] + s[::-1] for s in seqs], PAD)
    tgt_out = pad_sequences([s[::-1] + [EOS] for s in seqs], PAD)
    return src, tgt_in, tgt_out


class ReverseTask:
    """Reverse a token sequence; the source is a chain graph. Implements the Trainer task protocol.

    ``groups`` (optional): a fixed list of index lists used as the batches of every
    epoch instead of the bucket sampler (to build identical global batches in tests).
    """

    def __init__(self, train: list[list[int]], dev: list[list[int]], max_tokens: int = 48, seed: int = 0,
                 groups: list[list[int]] | None = None) -> None:
        self.train, self.dev = train, dev
        self.max_tokens, self.seed, self.groups = max_tokens, seed, groups
        self.lengths = [len(s) + 1 for s in train]

    def _batches(self, epoch: int, rank: int, world_size: int, skip: int) -> list[list[int]]:
        if self.groups is not None:
            return [g for i, g in enumerate(self.groups) if i % world_size == rank][skip:]
        sampler = BucketBatchSampler(self.lengths, self.max_tokens, seed=self.seed, num_replicas=world_size,
                                     rank=rank, bucket_size=4)
        sampler.set_epoch(epoch, skip)
        return list(sampler)

    def num_train_batches(self, epoch: int, rank: int, world_size: int) -> int:
        return len(self._batches(epoch, rank, world_size, 0))

    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0):
        for idx in self._batches(epoch, rank, world_size, skip):
            yield make_batch([self.train[i] for i in idx])

    def num_tokens(self, batch) -> int:
        return int((batch[2] != PAD).sum())

    def loss(self, model, batch):
        src, tgt_in, tgt_out = batch
        logits = model(src.tokens, src.labels, src.padding_mask, tgt_in, tgt_in == PAD)
        return F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=PAD, reduction="sum")

    def evaluate(self, model) -> dict[str, float]:
        dev = next(model.parameters()).device
        src, tgt_in, tgt_out = (t.to(dev) for t in make_batch(self.dev))
        loss = self.loss(model, (src, tgt_in, tgt_out))
        return {"loss": float(loss) / self.num_tokens((src, tgt_in, tgt_out))}

    def checkpoint_extra(self) -> dict:
        return {"max_distance": MAX_DISTANCE, "vocab": 12}


def tiny_model(seed: int = 0, dropout: float = 0.0, dtype: torch.dtype = torch.float32, vocab: int = 12,
               **kw) -> G2GTransformer:
    """A 1+1-layer, width-32 model, deterministically initialised from ``seed``."""
    torch.manual_seed(seed)
    cfg = G2GTConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=32, num_heads=2, num_encoder_layers=1,
                     num_decoder_layers=1, ffn_dim=64, dropout=dropout,
                     num_labels=[num_chain_labels(MAX_DISTANCE)], decoder_max_distance=MAX_DISTANCE, **kw)
    return G2GTransformer(cfg).to(dtype)


def ddp_groups() -> list[list[int]]:
    """Fixed global batches for the DDP-vs-accumulation comparison (12 items)."""
    return [[0, 1, 2], [3, 4], [5, 6, 7, 8], [9], [10, 11], [0, 5]]


def main(argv: list[str] | None = None) -> int:
    from g2gt.core.train import TrainConfig, Trainer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="where rank 0 writes the final model state_dict")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--accum", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    model = tiny_model(seed=0, dtype=torch.float64)
    task = ReverseTask(make_sequences(12, seed=1), make_sequences(4, seed=2), groups=ddp_groups())
    cfg = TrainConfig(lr=1e-3, warmup_steps=2, max_steps=args.steps, accum_steps=args.accum, eval_every=0,
                      progress=False, device="cpu", amp="none")
    trainer = Trainer(model, task, cfg, os.path.dirname(os.path.abspath(args.out)) + "/run")
    trainer.fit()
    if trainer.is_main:
        torch.save({k: v.clone() for k, v in model.state_dict().items()}, args.out)
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
