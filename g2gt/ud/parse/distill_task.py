r"""Knowledge distillation of parsers: the teachers' soft targets, the student's loss and the Trainer task.

Teachers are trained parsers (:class:`Teacher`, loaded from anything :meth:`g2gt.ud.parse.Parser.load` reads),
run in eval mode (no dropout, float32) on the same words as the student. For a batch of ``B`` sentences over
``n`` nodes (node 0 = ROOT) each teacher ``k`` gives, at temperature ``T``, after its own refinement passes
(:func:`teacher_pass`):

* arcs ``P_k(h | i) = softmax_h(s_k(i, h) / T)``, ``[B, n, n]`` (row = dependent, column = head);
* relations ``P_k(r | i, h_i) = softmax_r(z_k(i, h_i, r) / T)`` at one head ``h_i`` per dependent, ``[B, n, R]``:
  the gold head for treebank sentences, the argmax of the averaged arc targets for unlabeled text;
* UPOS, XPOS, UFeats and lemma scripts ``softmax(t_k / T)``, ``[B, n, K]``.

Label spaces: the student uses the first teacher's vocabularies. A later teacher's classes are mapped into the
student's by name (:func:`class_map`); probability on classes the student lacks is dropped and each word's
distribution renormalised over the classes that map (a word whose whole mass is dropped takes no part from that
teacher). The target of each head is the mean over the teachers that have it, per word:
``q = sum_k w_k P_k / sum_k w_k`` (:func:`average_targets`). Arcs need no mapping: all teachers see the same
words.

The student's loss (:func:`distill_loss`) per pass and word is the Kullback-Leibler divergence
``T^2 * KL(q || softmax(z / T))`` summed over the heads (0 when the student matches the teachers), optionally
mixed with the gold cross-entropies on treebank sentences: ``(1 - g) * KD + g * gold``.

Targets are computed on the fly, per batch: exact for any word dropout of the student, no memory or disk for
``[n, n]`` arcs and 250-way lemma distributions of every word, and a teacher costs forward passes only
(no backward), about a third of a training step of a student of its size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

import torch
from torch import Tensor

from ...core.batch import BucketBatchSampler
from .batching import TAG_HEADS, ParseBatch, dependency_labels, make_batch, make_example
from .model import ParserModel
from .vocab import ParserVocab

__all__ = ["Teacher", "TeacherOutput", "Targets", "class_map", "teacher_pass", "average_targets", "distill_loss",
           "DistillBatch", "DistillTask", "HEAD_VOCABS"]

#: the vocabulary list of each head whose classes are mapped by name (arcs need no mapping)
HEAD_VOCABS = {"rel": "rels", "upos": "upos", "xpos": "xpos", "feats": "feats", "lemma": "lemma_rules"}


def class_map(teacher: Sequence[str], student: Sequence[str]) -> Tensor:
    """``[K_teacher]`` long: the student's index of each teacher class of the same name, -1 where the student
    has no such class."""
    index = {name: i for i, name in enumerate(student)}
    return torch.tensor([index.get(name, -1) for name in teacher], dtype=torch.long)


@dataclass
class Teacher:
    """A teacher parser: ``model`` (eval mode), its ``vocab``, the refinement passes run for the targets and
    ``maps`` (head name -> :func:`class_map` into the student's vocabulary, for the heads both have)."""

    name: str
    model: ParserModel
    vocab: ParserVocab
    refine_steps: int
    maps: dict[str, Tensor] = field(default_factory=dict)

    @classmethod
    def load(cls, name: str, student_vocab: ParserVocab | None = None, refine_steps: int | None = None,
             device: str | torch.device = "auto") -> "Teacher":
        """The parser ``name`` (a shipped model name, a model / training folder or a checkpoint) in float32;
        ``refine_steps`` None = the parser's own default. Without ``student_vocab`` the teacher's own."""
        from .parser import Parser

        p = Parser.load(name, device, dtype="float32")
        p.model.eval()
        for prm in p.model.parameters():
            prm.requires_grad_(False)
        steps = p.refine_steps if refine_steps is None else refine_steps
        t = cls(name, p.model, p.vocab, steps if p.model.config.graph_channel else 0)
        t.map_into(student_vocab or p.vocab)
        return t

    def map_into(self, student: ParserVocab) -> dict[str, list[str]]:
        """Set :attr:`maps` for ``student``'s vocabulary; returns ``{head: [teacher classes it lacks]}``."""
        self.maps, dropped = {}, {}
        heads = {"rel", "upos", *self.model.taggers}
        for head in heads:
            mine, theirs = getattr(self.vocab, HEAD_VOCABS[head]), getattr(student, HEAD_VOCABS[head])
            if not theirs:
                continue  # the student has no such head
            self.maps[head] = class_map(mine, theirs)
            lost = [c for c, j in zip(mine, self.maps[head].tolist()) if j < 0]
            if lost:
                dropped[head] = lost
        return dropped

    def same_words(self, student: ParserVocab) -> bool:
        """Whether this teacher reads words and characters with the student's ids (then one batch serves both)."""
        v = self.vocab
        return (v.words == student.words and v.chars == student.chars and v.lowercase == student.lowercase
                and v.max_word_chars == student.max_word_chars)


@dataclass
class TeacherOutput:
    """One teacher's last pass: arc probabilities ``[B, n, n]`` (float32 or wider, at temperature ``T``),
    tag probabilities in the teacher's classes (``{name: [B, n, K_t]}``) and what relations at given heads
    need (the relation scorer's projections ``(d, hh)``)."""

    arcs: Tensor
    tags: dict[str, Tensor]
    rel_proj: tuple[Tensor, Tensor]


@dataclass
class Targets:
    """The averaged targets of a batch: ``arcs [B, n, n]``, ``rels [B, n, R]`` at ``label_heads [B, n]``,
    ``tags {name: [B, n, K]}``, in the student's classes."""

    arcs: Tensor
    rels: Tensor
    label_heads: Tensor
    tags: dict[str, Tensor]


def _wide(x: Tensor) -> Tensor:
    """``x`` in float32, or kept when wider (float64 stays float64)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def _mapped(probs: Tensor, cmap: Tensor, size: int) -> tuple[Tensor, Tensor]:
    """Teacher probabilities ``[B, n, K_t]`` moved to the student's ``size`` classes by ``cmap`` (unmapped
    classes dropped), renormalised per word; returns ``(probs [B, n, size], weight [B, n])``, weight 0 where
    no probability mapped."""
    cmap = cmap.to(probs.device)
    # unmapped classes go to an extra column, cut off (no boolean selection: it would read cmap on the host)
    out = probs.new_zeros(*probs.shape[:-1], size + 1)
    out.index_add_(-1, torch.where(cmap >= 0, cmap, size), probs)
    out = out[..., :size]
    mass = out.sum(-1)
    weight = (mass > 0).to(probs.dtype)
    return out / mass.clamp_min(torch.finfo(probs.dtype).tiny)[..., None], weight


@torch.no_grad()
def teacher_pass(teacher: Teacher, batch: ParseBatch, temperature: float) -> TeacherOutput:
    """Run ``teacher`` on ``batch`` (ids in the teacher's vocabulary): pass 0 from the empty graph, then
    ``teacher.refine_steps`` passes each reading the previous pass's argmax heads and the relations at them
    (the graphs the parser's own refinement training reads); the last pass gives the targets."""
    m = teacher.model
    g = batch.graph
    wm = batch.words_mask
    position = batch.position
    x = m.embed(g.tokens, batch.char_ids, batch.word_types)
    labels = m.labels(position, None)
    n = g.tokens.shape[1]
    eye = torch.eye(n, dtype=torch.bool, device=g.tokens.device)
    for k in range(teacher.refine_steps + 1):
        h = m.encoder(x, labels, g.padding_mask)
        arc = m.arc(h, g.padding_mask).masked_fill(eye, float("-inf"))
        d, hh = m.rel.project(h)
        if k < teacher.refine_steps:
            heads = arc.argmax(-1)
            rels = m.rel.score(d, hh, heads).argmax(-1)
            labels = m.labels(position, dependency_labels(heads, rels, wm))
    T = temperature
    logits = {"upos": m.tagger(h), **{name: t(h) for name, t in m.taggers.items()}}
    tags = {name: torch.softmax(_wide(z) / T, -1) for name, z in logits.items() if name in teacher.maps}
    return TeacherOutput(torch.softmax(_wide(arc) / T, -1), tags, (d, hh))


def average_targets(teachers: Sequence[Teacher], outputs: Sequence[TeacherOutput], sizes: dict[str, int],
                    words_mask: Tensor, gold_heads: Tensor | None, temperature: float) -> Targets:
    """The mean of the teachers' distributions (module docstring). ``sizes``: the student's classes per head
    (``"rel"``, ``"upos"`` ...); ``gold_heads [B, n]`` long with -1 where a word has no gold head (unlabeled
    text; None: none has one): relations are taken at the gold head, else at the argmax of the averaged arcs."""
    arcs = torch.stack([o.arcs for o in outputs]).mean(0)
    label_heads = arcs.argmax(-1)
    if gold_heads is not None:
        label_heads = torch.where(gold_heads >= 0, gold_heads, label_heads)
    label_heads = label_heads.masked_fill(~words_mask, 0)
    tags: dict[str, Tensor] = {}
    rels = None
    for name, size in sizes.items():
        total, weight = None, None
        for t, o in zip(teachers, outputs):
            if name not in t.maps:
                continue
            if name == "rel":
                d, hh = o.rel_proj
                probs = torch.softmax(_wide(t.model.rel.score(d, hh, label_heads)) / temperature, -1)
            elif name in o.tags:
                probs = o.tags[name]
            else:
                continue
            p, w = _mapped(probs, t.maps[name], size)
            total = p * w[..., None] if total is None else total + p * w[..., None]
            weight = w if weight is None else weight + w
        if total is None:
            continue
        avg = total / weight.clamp_min(1)[..., None]
        if name == "rel":
            rels = avg
        else:
            tags[name] = avg
    if rels is None:
        raise ValueError("no teacher has relations that map into the student's relation vocabulary")
    return Targets(arcs, rels, label_heads, tags)


def _kl(logits: Tensor, q: Tensor, mask: Tensor, temperature: float) -> Tensor:
    """``sum over masked rows of KL(q || softmax(logits / T))`` (rows ``[..., K]``; classes with ``q = 0``,
    e.g. the ``-inf`` padded / self columns of arcs, add nothing)."""
    # every row is computed and the others' terms zeroed: selecting rows with logits[mask] reads the mask on the
    # host (a device sync per call)
    logp = torch.log_softmax(_wide(logits) / temperature, -1)
    qm = q.to(logp.dtype).masked_fill(~mask[..., None], 0.0)
    logp = logp.masked_fill(qm <= 0, 0.0)
    return (torch.xlogy(qm, qm) - qm * logp).sum()


def distill_loss(out: tuple[Tensor, Tensor, dict[str, Tensor], Tensor], targets: Targets, words_mask: Tensor,
                 temperature: float) -> Tensor:
    """``T^2`` times the summed KL divergences (arcs, relations, every tag head in ``targets.tags``) of one
    student pass (:meth:`ParserModel.score` output, relations scored at ``targets.label_heads``) over the words
    of ``words_mask [B, n]``."""
    arc, rel, tags, _ = out
    T = temperature
    loss = _kl(arc, targets.arcs, words_mask, T) + _kl(rel, targets.rels, words_mask, T)
    for name, q in targets.tags.items():
        loss = loss + _kl(tags[name], q, words_mask, T)
    return loss * T * T


@dataclass
class DistillBatch:
    """The student's batch, one batch per distinct teacher vocabulary (``teacher_batches``; ``teacher_slot[k]``:
    the one teacher ``k`` reads, -1 = the student's) and ``gold [B]`` bool (sentences with gold annotation)."""

    student: ParseBatch
    teacher_batches: list[ParseBatch]
    gold: Tensor

    def to(self, device, non_blocking: bool = False) -> "DistillBatch":
        return DistillBatch(self.student.to(device, non_blocking), [b.to(device, non_blocking)
                                                                     for b in self.teacher_batches],
                            self.gold.to(device, non_blocking=non_blocking))


class DistillTask:
    """The :class:`g2gt.core.train.Trainer` task of a distilled student (see the module docstring).

    Args:
        sentences: training sentences: treebank sentences and unlabeled text (:class:`g2gt.ud.io.Sentence`).
        gold: per sentence, whether its gold annotation may be used (False for unlabeled text).
        teachers: the :class:`Teacher` list (mapped into ``eval_task.vocab``, the student's vocabulary).
        eval_task: a :class:`g2gt.ud.parse.ParsingTask` over the dev set with the student's vocabulary: dev
            evaluation and the checkpoint's ``task`` record (the parser's format, so ``Parser.load`` reads it).
        temperature: ``T`` of the targets and the student's softmax.
        gold_weight: ``g`` of ``(1 - g) * KD + g * gold`` on sentences with gold annotation.
        refine_train: ``"self"`` (a second student pass reading its own first-pass graph) or ``"none"``.
        batch_tokens, word_dropout, seed: as in :class:`~g2gt.ud.parse.ParsingTask`.
        info: more entries for the checkpoint's ``task["distill"]`` record (e.g. the teachers' names).
    """

    def __init__(self, sentences: Sequence, gold: Sequence[bool], teachers: Sequence[Teacher], eval_task,
                 temperature: float = 1.0, gold_weight: float = 0.0, refine_train: str = "self",
                 batch_tokens: int = 4000, word_dropout: float = 0.2, seed: int = 1, info: dict | None = None) -> None:
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if not 0.0 <= gold_weight <= 1.0:
            raise ValueError(f"gold_weight must be in [0, 1] (0 = teachers only, 1 = gold only), got {gold_weight}")
        if refine_train not in ("self", "none"):
            raise ValueError(f"refine_train must be 'self' or 'none' for a distilled student, got {refine_train!r}")
        if len(gold) != len(sentences):
            raise ValueError(f"gold has {len(gold)} flags for {len(sentences)} sentences (expected one per sentence)")
        if not teachers:
            raise ValueError("distillation needs at least one teacher")
        self.eval_task = eval_task
        self.vocab: ParserVocab = eval_task.vocab
        self.max_distance = eval_task.max_distance
        self.teachers = list(teachers)
        self.temperature, self.gold_weight = float(temperature), float(gold_weight)
        self.refine_train = refine_train
        self.batch_tokens, self.word_dropout, self.seed = batch_tokens, word_dropout, seed
        self.info = dict(info or {})
        v = self.vocab
        self.sizes = {"rel": len(v.rels), "upos": len(v.upos),
                      **{h: len(getattr(v, HEAD_VOCABS[h])) for h in TAG_HEADS if getattr(v, HEAD_VOCABS[h])}}
        self.examples = [make_example(s, v) for s in sentences]
        self.gold = list(map(bool, gold))
        # teachers reading other word / character ids or position labels (max_distance) get their own batches:
        # one example list per distinct (vocabulary, max_distance)
        self.slots: list[int] = []
        self.teacher_inputs: list[tuple[ParserVocab, int]] = []
        self.teacher_examples: list[list] = []
        for t in self.teachers:
            dist = t.model.config.max_distance
            if t.same_words(v) and dist == self.max_distance:
                self.slots.append(-1)
                continue
            for k, (tv, td) in enumerate(self.teacher_inputs):
                if t.same_words(tv) and td == dist:
                    self.slots.append(k)
                    break
            else:
                self.slots.append(len(self.teacher_inputs))
                self.teacher_inputs.append((t.vocab, dist))
                self.teacher_examples.append([make_example(s, t.vocab) for s in sentences])
        self._lengths = [len(ex.words) for ex in self.examples]

    # -- the Trainer's task protocol
    def train_batches(self, epoch: int, rank: int, world_size: int, skip: int = 0) -> Iterator[DistillBatch]:
        if world_size > 1:
            raise ValueError("distillation runs in one process (the teachers are not distributed); start it "
                             "without torchrun")
        sampler = BucketBatchSampler(self._lengths, max(self.batch_tokens, max(self._lengths)), True, self.seed,
                                     num_replicas=world_size, rank=rank)
        sampler.set_epoch(epoch, skip)
        for idx in sampler:
            student = make_batch([self.examples[i] for i in idx], idx, self.vocab, self.max_distance)
            others = [make_batch([exs[i] for i in idx], idx, tv, td)
                      for (tv, td), exs in zip(self.teacher_inputs, self.teacher_examples)]
            yield DistillBatch(student, others, torch.tensor([self.gold[i] for i in idx], dtype=torch.bool))

    def num_tokens(self, batch: DistillBatch) -> int:
        return batch.student.num_words * (2 if self.refine_train == "self" else 1)

    @torch.no_grad()
    def targets(self, batch: DistillBatch) -> Targets:
        """The averaged teacher targets of ``batch`` (gold heads of gold sentences select the relations)."""
        sb = batch.student
        g = sb.graph
        wm = sb.words_mask
        outputs = []
        for t, slot in zip(self.teachers, self.slots):
            if next(t.model.parameters()).device != g.tokens.device:
                t.model.to(g.tokens.device)
                t.maps = {k: v.to(g.tokens.device) for k, v in t.maps.items()}  # once, not a copy per step
            outputs.append(teacher_pass(t, sb if slot < 0 else batch.teacher_batches[slot], self.temperature))
        return average_targets(self.teachers, outputs, self.sizes, wm, self.gold_heads(batch), self.temperature)

    @staticmethod
    def gold_mask(batch: DistillBatch) -> Tensor:
        """``[B, n]`` True on the words of gold sentences that have a gold head."""
        g = batch.student.graph
        return batch.student.words_mask & (g.node_features["has_head"] > 0) & batch.gold.to(g.tokens.device)[:, None]

    def gold_heads(self, batch: DistillBatch) -> Tensor:
        """``[B, n]`` the gold heads of :meth:`gold_mask`'s words, -1 elsewhere."""
        return torch.where(self.gold_mask(batch), batch.student.graph.node_features["head"], -1)

    def loss(self, model, batch: DistillBatch) -> Tensor:
        """``(1 - g) * KD + g * gold`` summed over the words of one or two student passes."""
        core = model.module if hasattr(model, "module") else model
        targets = self.targets(batch)
        sb = batch.student
        g = sb.graph
        wm = sb.words_mask
        words = g.tokens
        if self.word_dropout > 0 and core.training:
            drop = (torch.rand(words.shape, device=words.device) < self.word_dropout) & wm
            words = words.masked_fill(drop, 1)
        x = core.embed(words, sb.char_ids, sb.word_types)
        out = core.score(words, sb.char_ids, sb.word_types, g.padding_mask, core.labels(sb.position, None),
                         targets.label_heads, x)
        total = self._pass_loss(out, targets, batch)
        if self.refine_train == "self":
            graph = dependency_labels(out[3][0], out[3][1], wm)
            out = core.score(words, sb.char_ids, sb.word_types, g.padding_mask, core.labels(sb.position, graph),
                             targets.label_heads, x)
            total = total + self._pass_loss(out, targets, batch)
        return total

    def _pass_loss(self, out, targets: Targets, batch: DistillBatch) -> Tensor:
        g = batch.student.graph
        w = self.gold_weight
        loss = distill_loss(out, targets, batch.student.words_mask, self.temperature)
        if w == 0:
            return loss
        gm = self.gold_mask(batch)
        golds = {k: g.node_features[k] for k in TAG_HEADS if k in g.node_features}
        gold = ParserModel.pass_loss(out, gm, g.node_features["head"], g.node_features["rel"],
                                     {"upos": g.node_features["upos"], **golds})
        return (1 - w) * loss + w * gold

    def evaluate(self, model) -> dict[str, float]:
        """Dev scores of the student (:meth:`ParsingTask.evaluate`)."""
        return self.eval_task.evaluate(model)

    def checkpoint_extra(self) -> dict:
        """The parser's checkpoint record (:meth:`ParsingTask.checkpoint_extra`) plus ``"distill"``: the
        teachers and settings (for ``--resume`` and the record)."""
        return {**self.eval_task.checkpoint_extra(), "refine_train": self.refine_train,
                "distill": {"teachers": [t.name for t in self.teachers], "temperature": self.temperature,
                            "gold_weight": self.gold_weight, **self.info}}
