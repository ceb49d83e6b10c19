"""Your own graph-to-graph task on g2gt's pieces (runs as a script, about a minute on one CPU thread).

The toy task has the shape of coreference: every node of an input graph (a token sequence plus a tree) links
to an earlier node "of the same entity", or to none. Here a node's antecedent is the nearest earlier node
with the same token *and the same parent in the tree*, so the model must read the tree, not only the words.

The pieces are the ones ``g2gt train coref`` is built from:

* :class:`g2gt.Graph` with two label channels (relative position; the tree's ``up`` / ``down`` edges), and
  :func:`g2gt.core.batch.collate` to pad graphs into a batch;
* :class:`g2gt.nn.GraphEncoder`, whose attention adds a learned vector per pair label (memory linear in n
  with the label kernels);
* :class:`g2gt.nn.heads.BiaffineArcScorer` for the pairwise scores, ``s[i, j]`` = "j is the antecedent of
  i"; column ``i`` itself stands for "no antecedent";
* a task object with ``train_batches / num_tokens / loss / evaluate`` run by the one
  :class:`g2gt.core.train.Trainer` (checkpoints, schedule, resume).

    python examples/own_graph_task.py --steps 600 --out /tmp/own_task   # link recall ~78 %, accuracy ~95 %
"""

from __future__ import annotations

import argparse
import random

import torch
import torch.nn.functional as F
from torch import nn

from g2gt import Graph
from g2gt.core.batch import collate
from g2gt.core.config import TrainConfig
from g2gt.core.graph import ChainChannel, EdgeChannel, num_chain_labels
from g2gt.core.train import Trainer
from g2gt.nn import GraphEncoder
from g2gt.nn.heads import BiaffineArcScorer

VOCAB, MAX_DIST = 4, 8


def make_graph(rng: random.Random, n: int) -> Graph:
    """A random tree over ``n`` tokens and its antecedent targets (node feature ``target``)."""
    tokens = [rng.randrange(1, VOCAB) for _ in range(n)]
    heads = [-1] + [rng.randrange(0, i) for i in range(1, n)]  # node i hangs under an earlier node
    src = [i for i in range(1, n)] + [heads[i] for i in range(1, n)]
    dst = [heads[i] for i in range(1, n)] + [i for i in range(1, n)]
    lab = [1] * (n - 1) + [2] * (n - 1)  # 1 = up (child -> parent), 2 = down
    target = []
    for i in range(n):
        earlier = [j for j in range(i) if tokens[j] == tokens[i] and heads[j] == heads[i]]
        target.append(earlier[-1] if earlier else i)  # i itself = no antecedent
    return Graph(tokens, {"position": ChainChannel(MAX_DIST), "tree": EdgeChannel([src, dst], lab, 3)},
                 {"target": target})


class LinkModel(nn.Module):
    """Tokens + label channels -> antecedent scores ``[B, n, n]`` (row = node, column = candidate)."""

    def __init__(self, d: int = 64, layers: int = 2, heads: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d, padding_idx=0)
        self.encoder = GraphEncoder(layers, d, heads, 2 * d, [num_chain_labels(MAX_DIST), 3], dropout=0.0)
        self.scorer = BiaffineArcScorer(d, d)

    def forward(self, batch) -> torch.Tensor:
        x = self.encoder(self.embed(batch.tokens), batch.labels.long(), batch.padding_mask)
        s = self.scorer(x, batch.padding_mask)
        n = s.shape[-1]
        later = torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1)  # j > i: not an antecedent
        return s.masked_fill(later, float("-inf"))


class LinkTask:
    """The Trainer's task protocol (see g2gt.core.train) for :class:`LinkModel`."""

    def __init__(self, train: list[Graph], dev: list[Graph], batch_size: int = 16) -> None:
        self.train, self.dev, self.batch_size = train, dev, batch_size

    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0):
        order = list(range(len(self.train)))
        random.Random(epoch).shuffle(order)  # deterministic in the epoch: exact resume
        chunks = [order[k:k + self.batch_size] for k in range(0, len(order), self.batch_size)]
        for idx in chunks[rank::world_size][skip:]:
            yield collate([self.train[i] for i in idx], ["position", "tree"])

    def num_tokens(self, batch) -> int:
        return int((~batch.padding_mask).sum())

    def loss(self, model, batch) -> torch.Tensor:
        s = model(batch)
        words = ~batch.padding_mask
        return F.cross_entropy(s[words].float(), batch.node_features["target"][words], reduction="sum")

    @torch.no_grad()
    def evaluate(self, model) -> dict[str, float]:
        model.eval()
        ok = links = found = total = 0
        for k in range(0, len(self.dev), 64):
            batch = collate(self.dev[k:k + 64], ["position", "tree"])
            pred = model(batch).argmax(-1)
            gold = batch.node_features["target"]
            words = ~batch.padding_mask
            ok += int(((pred == gold) & words).sum())
            total += int(words.sum())
            n = gold.shape[1]
            self_index = torch.arange(n)[None].expand_as(gold)
            is_link = words & (gold != self_index)
            links += int(is_link.sum())
            found += int((is_link & (pred == gold)).sum())
        model.train()
        return {"accuracy": 100.0 * ok / total, "link_recall": 100.0 * found / max(links, 1)}

    def checkpoint_extra(self) -> dict:
        return {"kind": "own_graph_task", "vocab": VOCAB}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--train-size", type=int, default=3000)
    ap.add_argument("--out", default="own_task_run")
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = random.Random(0)
    train = [make_graph(rng, rng.randrange(8, 24)) for _ in range(args.train_size)]
    dev = [make_graph(rng, rng.randrange(8, 24)) for _ in range(300)]
    task = LinkTask(train, dev)
    model = LinkModel()
    print("before training:", task.evaluate(model))
    cfg = TrainConfig(lr=2e-3, max_steps=args.steps, eval_every=max(args.steps // 3, 1), metric="accuracy",
                      metric_mode="max", device="cpu", progress=False, warmup=0.1)
    Trainer(model, task, cfg, args.out).fit()
    print("after training: ", task.evaluate(model), f"(checkpoints in {args.out})")


if __name__ == "__main__":
    main()
