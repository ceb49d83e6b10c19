"""The parser trains under ``torchrun`` / ``DistributedDataParallel`` exactly like one process.

Two gloo processes with ``accum_steps=1`` must take the same optimizer steps as one
process with ``accum_steps=2`` on the same global batches, for both refinement
training modes (``self``: the second pass reads pass 1's predictions, which needs a
deterministic model — dropout 0; ``corrupt``: the corruption seed follows the
batch's global position). The file doubles as the torchrun script::

    python -m torch.distributed.run --nproc_per_node=2 tests/ud/parse/test_parser_ddp.py OUT_DIR --steps 3
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import torch
from fixture_paths import ROOT, TESTS

MODES = ("self", "corrupt")
TINY = dict(d_model=16, num_heads=2, num_layers=1, ffn_dim=32, arc_dim=16, label_dim=8, char_dim=8,
            char_filters=16, dropout=0.0, attention_dropout=0.0, head_dropout=0.0)


def _setup(mode: str):
    """``(model, task)``: a float64 tiny parser (seeded) and its task on 20 sample sentences."""
    from g2gt.data import EWT_SAMPLE_TRAIN as SAMPLE_TRAIN
    from g2gt.ud.io.conllu import read_conllu
    from g2gt.ud.parse import ParserModel, ParserVocab, ParsingTask

    sents = read_conllu(SAMPLE_TRAIN)[:24]
    train, dev = sents[:20], sents[20:]
    vocab = ParserVocab.build(train, min_freq=1)
    cfg = vocab.config(**TINY)
    torch.manual_seed(0)
    model = ParserModel(cfg).double()
    task = ParsingTask(train, dev, vocab, cfg.max_distance, batch_tokens=90, refine_train=mode, refine_steps=1,
                       corrupt_max=0.5, word_dropout=0.0, seed=3)
    return model, task


def train(out_dir: str, steps: int, accum: int) -> None:
    """Train every mode for ``steps`` optimizer steps; rank 0 saves ``{out_dir}/{mode}.pt``."""
    from g2gt.core.train import TrainConfig, Trainer

    torch.set_num_threads(1)
    for mode in MODES:
        model, task = _setup(mode)
        cfg = TrainConfig(lr=3e-3, warmup_steps=1, max_steps=steps, accum_steps=accum, eval_every=0,
                          progress=False, device="cpu", amp="none", seed=5, metric="las", metric_mode="max")
        trainer = Trainer(model, task, cfg, os.path.join(out_dir, f"run-{mode}-{accum}"))
        trainer.fit()
        if trainer.is_main:
            torch.save({k: v.clone() for k, v in model.state_dict().items()}, os.path.join(out_dir, f"{mode}.pt"))
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:  # torchrun's --master_port=0 hangs with the static rendezvous
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_parser_ddp_two_processes_equal_accumulation(tmp_path):
    steps = 3
    model, task = _setup("self")
    assert len(list(task.train_batches(0, 0, 1))) >= 2 * steps, "need 2 x steps batches in epoch 0 for equal groups"
    init = {k: v.clone() for k, v in model.state_dict().items()}

    ddp_dir, one_dir = tmp_path / "ddp", tmp_path / "one"
    ddp_dir.mkdir()
    one_dir.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr=127.0.0.1",
           f"--master_port={_free_port()}", str(Path(__file__).resolve()), str(ddp_dir), "--steps", str(steps)]
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    elapsed = time.time() - t0
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    train(str(one_dir), steps, accum=2)
    for mode in MODES:
        ddp = torch.load(ddp_dir / f"{mode}.pt", weights_only=True)
        one = torch.load(one_dir / f"{mode}.pt", weights_only=True)
        assert ddp.keys() == one.keys()
        moved = sum(not torch.equal(one[k], init[k]) for k in one)
        assert moved > len(one) // 2, f"{mode}: training barely changed the parameters"
        for k in one:
            torch.testing.assert_close(ddp[k], one[k], rtol=1e-9, atol=1e-10, msg=f"{mode}: {k}")
    print(f"torchrun 2 procs took {elapsed:.1f}s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", help="where rank 0 writes {mode}.pt (final state_dict per refinement mode)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--accum", type=int, default=1)
    args = ap.parse_args(argv)
    train(args.out_dir, args.steps, args.accum)
    return 0


if __name__ == "__main__":
    sys.exit(main())
