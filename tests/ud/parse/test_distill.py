"""Distillation (``g2gt train distill``): targets, their average over teachers, label mapping, the loss, resume,
and the student as a normal parser."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from g2gt.core.config import TrainConfig
from g2gt.data import EWT_SAMPLE_DEV as SAMPLE_DEV, EWT_SAMPLE_TRAIN as SAMPLE_TRAIN
from g2gt.ud.io.conllu import read_conllu
from g2gt.ud.io import check_tree
from g2gt.ud.parse import Parser, ParserConfig, ParserModel, ParsingTask, make_batch, make_example, train_parser
from g2gt.ud.parse.distill import read_text, train_distill
from g2gt.ud.parse.distill_task import (
    DistillTask, Teacher, _mapped, average_targets, class_map, distill_loss, teacher_pass,
)

TINY = dict(d_model=32, num_heads=2, num_layers=1, ffn_dim=64, arc_dim=32, label_dim=16, char_dim=16,
            char_filters=32, dropout=0.1, head_dropout=0.1)


def _tc(**kw) -> TrainConfig:
    base = dict(lr=3e-3, max_steps=3, eval_every=0, metric="las", metric_mode="max", device="cpu", progress=False,
                schedule="constant", warmup_steps=2, cooldown=0.0, log_every=1)
    return TrainConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def data():
    return read_conllu(SAMPLE_TRAIN)[:240], read_conllu(SAMPLE_DEV)[:40]


@pytest.fixture(scope="module")
def teachers(tmp_path_factory, data):
    """Two tiny teachers trained a few steps (different seeds, so different functions; the second with
    min_freq 1, so other word ids)."""
    train, dev = data
    root = tmp_path_factory.mktemp("teachers")
    train_parser(train, dev, root / "a", ParserConfig(**TINY), _tc(max_steps=4, seed=1), refine_steps=1)
    train_parser(train, dev, root / "b", ParserConfig(**TINY), _tc(max_steps=4, seed=2), refine_steps=1,
                 min_freq=1)
    return str(root / "a"), str(root / "b")


def _task(names, sents, gold=True, **kw) -> DistillTask:
    first = Teacher.load(names[0], refine_steps=0)
    loaded = [first] + [Teacher.load(n, student_vocab=first.vocab, refine_steps=0) for n in names[1:]]
    ev = ParsingTask([], sents[:2], first.vocab, 8, 600, "none", 0, graph_channel=True)
    return DistillTask(sents, [gold] * len(sents), loaded, ev, **kw)


def _batch(task: DistillTask, n: int = 6):
    idx = list(range(n))
    return next(iter(task.train_batches(0, 0, 1))).__class__(
        make_batch([task.examples[i] for i in idx], idx, task.vocab, task.max_distance),
        [make_batch([exs[i] for i in idx], idx, tv, td)
         for (tv, td), exs in zip(task.teacher_inputs, task.teacher_examples)],
        torch.ones(n, dtype=torch.bool))


def test_class_map_by_name_and_renormalised_drop():
    assert class_map(["a", "b", "c"], ["c", "a"]).tolist() == [1, -1, 0]
    p = torch.tensor([[[0.5, 0.3, 0.2], [0.0, 1.0, 0.0]]], dtype=torch.float64)
    q, w = _mapped(p, class_map(["a", "b", "c"], ["c", "a"]), 2)
    assert torch.allclose(q[0, 0], torch.tensor([0.2, 0.5], dtype=torch.float64) / 0.7, atol=1e-15)
    assert w.tolist() == [[1.0, 0.0]]  # all mass on a class the student lacks: no target from this teacher
    assert q[0, 1].tolist() == [0.0, 0.0]


def test_one_teacher_at_t1_gives_its_softmax_float64(teachers, data):
    task = _task(teachers[:1], data[0])
    t = task.teachers[0]
    t.model.double()
    b = _batch(task)
    targets = task.targets(b)
    g = b.student.graph
    wm = b.student.words_mask
    m = t.model
    x = m.embed(g.tokens, b.student.char_ids, b.student.word_types)
    with torch.no_grad():
        arc, rel, tags, _ = m.score(g.tokens, b.student.char_ids, b.student.word_types, g.padding_mask,
                                    m.labels(b.student.position, None), g.node_features["head"], x)
    assert targets.arcs.dtype == torch.float64
    assert torch.allclose(targets.arcs[wm], torch.softmax(arc, -1)[wm], rtol=0, atol=1e-12)
    assert torch.allclose(targets.rels[wm], torch.softmax(rel, -1)[wm], rtol=0, atol=1e-12)
    assert torch.equal(targets.label_heads[wm], g.node_features["head"][wm])  # gold heads select the relations
    assert set(targets.tags) == {"upos", "xpos", "feats", "lemma"}
    for name, q in targets.tags.items():
        assert torch.allclose(q[wm], torch.softmax(tags[name], -1)[wm], rtol=0, atol=1e-12), name


def test_temperature_flattens_the_targets(teachers, data):
    task1, task3 = _task(teachers[:1], data[0]), _task(teachers[:1], data[0], temperature=3.0)
    b = _batch(task1)
    wm = b.student.words_mask
    ent = [-(torch.xlogy(t.targets(b).tags["upos"], t.targets(b).tags["upos"]).sum(-1))[wm].mean()
           for t in (task1, task3)]
    assert ent[1] > ent[0]


def test_two_teachers_average_to_the_mean(teachers, data):
    train = data[0]
    both = _task(teachers, train)
    assert both.slots == [-1, 0]  # the second teacher reads its own word ids
    b = _batch(both)
    wm = b.student.words_mask
    avg = both.targets(b)
    one = [average_targets([t], [teacher_pass(t, b.student if s < 0 else b.teacher_batches[s], 1.0)],
                           both.sizes, wm, both.gold_heads(b), 1.0) for t, s in zip(both.teachers, both.slots)]
    assert not torch.allclose(one[0].arcs[wm], one[1].arcs[wm], atol=1e-3)  # the teachers differ
    assert torch.allclose(avg.arcs[wm], (one[0].arcs[wm] + one[1].arcs[wm]) / 2, atol=1e-6)
    assert torch.allclose(avg.rels[wm], (one[0].rels[wm] + one[1].rels[wm]) / 2, atol=1e-6)
    for name in avg.tags:
        assert torch.allclose(avg.tags[name][wm], (one[0].tags[name][wm] + one[1].tags[name][wm]) / 2, atol=1e-6)


def test_text_sentences_take_relations_at_the_teachers_heads(teachers, data):
    task = _task(teachers[:1], data[0], gold=False)
    b = _batch(task)
    b.gold[:] = False
    t = task.targets(b)
    wm = b.student.words_mask
    assert torch.equal(t.label_heads[wm], t.arcs.argmax(-1)[wm])


def test_student_equal_to_teacher_has_zero_loss(teachers, data):
    task = _task(teachers[:1], data[0], temperature=2.0, refine_train="none")
    student = copy.deepcopy(task.teachers[0].model).eval()
    b = _batch(task)
    targets = task.targets(b)
    sb = b.student
    g = sb.graph
    with torch.no_grad():
        out = student.score(g.tokens, sb.char_ids, sb.word_types, g.padding_mask,
                            student.labels(sb.position, None), targets.label_heads)
    assert float(distill_loss(out, targets, sb.words_mask, 2.0)) == pytest.approx(0.0, abs=1e-3)
    fresh = ParserModel(student.config).eval()
    with torch.no_grad():
        out = fresh.score(g.tokens, sb.char_ids, sb.word_types, g.padding_mask, fresh.labels(sb.position, None),
                          targets.label_heads)
    assert float(distill_loss(out, targets, sb.words_mask, 2.0)) > 1.0


def test_distilled_student_learns_loads_and_parses(teachers, data, tmp_path):
    train, dev = data
    text = tmp_path / "text.txt"
    text.write_text("The cat sat on the mat .\nDogs bark at night .\n", encoding="utf-8")
    out = tmp_path / "student"
    parser, history = train_distill(list(teachers), train, dev, out, text=[text], config=ParserConfig(**dict(TINY, dropout=0.0)),
                                    train_config=_tc(max_steps=16, lr=5e-3), refine_steps=0,
                                    text_format="tokens", batch_tokens=400, gold_weight=0.2)
    losses = [e["loss"] for e in map(json.loads, (out / "log.jsonl").read_text().splitlines()) if e["kind"] == "train"]
    assert len(losses) == 16
    assert sum(losses[-4:]) < sum(losses[:4])
    for f in ("best.pt", "last.pt", "log.jsonl", "config.json"):
        assert (out / f).is_file()
    info = json.loads((out / "config.json").read_text())
    assert info["task"]["distill"]["teachers"] == list(teachers)
    assert info["data"]["text_sentences"] == 2
    p = Parser.load(out, dtype="float32")
    assert p.model.config.d_model == 32 and p.refine_steps == 0
    assert p.vocab.words == Teacher.load(teachers[0]).vocab.words  # the first teacher's vocabularies
    pred = p.parse(dev[:5])
    assert all(check_tree(s.heads) is None for s in pred)


def test_resume_continues_bit_exactly(teachers, data, tmp_path):
    train, dev = data
    kw = dict(config=ParserConfig(**TINY), refine_steps=1, batch_tokens=400, temperature=2.0, gold_weight=0.3)
    text = tmp_path / "text.txt"
    text.write_text("The cat sat on the mat .\nDogs bark at night .\n", encoding="utf-8")
    kw["text_format"] = "tokens"
    train_distill(list(teachers), train, dev, tmp_path / "full", [text], train_config=_tc(max_steps=6), **kw)
    train_distill(list(teachers), train, dev, tmp_path / "part", [text], train_config=_tc(max_steps=3), **kw)
    torch.manual_seed(999)  # another RNG state must not matter
    # the teachers, the text files and the settings are read back from last.pt (the values given here are not used)
    train_distill([], train, dev, tmp_path / "part", train_config=_tc(max_steps=6), resume=True,
                  **{**kw, "temperature": 1.0, "refine_steps": 0, "gold_weight": 0.0, "teacher_refine_steps": 2})
    a = torch.load(tmp_path / "full" / "last.pt", weights_only=True)
    b = torch.load(tmp_path / "part" / "last.pt", weights_only=True)
    assert a["step"] == b["step"] == 6
    for k, v in a["model"].items():
        assert torch.equal(v, b["model"][k]), k
    with pytest.raises(ValueError, match="distils"):
        train_distill([teachers[1]], train, dev, tmp_path / "part", train_config=_tc(max_steps=7), resume=True, **kw)
    with pytest.raises(ValueError, match="text files"):
        train_distill([], train, dev, tmp_path / "part", [tmp_path / "other.txt"], train_config=_tc(max_steps=7),
                      resume=True, **kw)


def test_read_text_formats(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("Hello world .\n\nA second line\n", encoding="utf-8")
    assert [s.forms for s in read_text(f, "tokens")] == [["Hello", "world", "."], ["A", "second", "line"]]
    assert [s.forms for s in read_text(f, "lines", segment=lambda t: [make_sentence(p) for p in t.split("\n\n")])] \
        == [["Hello", "world", "."], ["A", "second", "line"]]
    short = sum(len(s) <= 5 for s in read_conllu(SAMPLE_DEV))
    assert len(read_text(SAMPLE_DEV, "auto", max_words=5)) == short
    assert len(read_text(SAMPLE_DEV, "lines", max_words=5)) == short  # *.conllu files are always CoNLL-U
    with pytest.raises(ValueError, match="segmenter"):
        read_text(f, "raw")


def make_sentence(text: str):
    from g2gt.ud.io import sentence_from_words

    return sentence_from_words(text.split())


def test_make_example_accepts_unannotated_text(data):
    from g2gt.ud.parse import ParserVocab

    vocab = ParserVocab.build(data[0])
    ex = make_example(make_sentence("an unannotated sentence"), vocab)
    assert ex.heads == [0, -1, -1, -1]


def test_cli_records_its_commands_and_resumes_without_teachers(teachers, tmp_path):
    from g2gt.cli.main import main
    from g2gt.core.run_folder import run_commands

    out = tmp_path / "cli"
    common = ["--out", str(out), "--train", str(SAMPLE_TRAIN), "--dev", str(SAMPLE_DEV), "--d-model", "32",
              "--layers", "1", "--ffn-dim", "32", "--arc-dim", "32", "--char-filters", "16", "--no-graph-channel",
              "--refine-steps", "0", "--eval-every", "0", "--threads", "1", "--no-progress", "--batch-tokens", "600"]
    assert main(["train", "distill", "--teacher", teachers[0], "--max-steps", "2", *common]) == 0
    assert main(["train", "distill", "--resume", "--max-steps", "3", *common]) == 0
    assert torch.load(out / "last.pt", weights_only=True)["step"] == 3
    commands = run_commands(out)
    assert len(commands) == 2 and "--teacher" in commands[0] and "--resume" in commands[1]
    assert main(["train", "distill", *common]) == 2  # no teacher and no --resume: a usage error
    model = tmp_path / "model"
    assert main(["export-model", "--parser", str(out), "-o", str(model)]) == 0
    assert "g2gt train distill --teacher" in json.loads((model / "model.json").read_text())["commands"]["parser"]
    assert main(["parse", "--model", str(model), "--text", "A short test."]) == 0


def test_teacher_with_other_position_clipping_reads_its_own(teachers, data):
    near = _task(teachers[:1], data[0])
    first = near.teachers[0]
    ev = ParsingTask([], data[0][:2], first.vocab, 3, 600, "none", 0, graph_channel=True)
    far = DistillTask(data[0], [True] * len(data[0]), [first], ev)
    assert near.slots == [-1] and far.slots == [0]  # the student clips at 3, the teacher at 8
    b_near, b_far = _batch(near), _batch(far)
    wm = b_near.student.words_mask
    assert torch.equal(b_far.teacher_batches[0].position, b_near.student.position)
    assert torch.allclose(far.targets(b_far).arcs[wm], near.targets(b_near).arcs[wm], atol=1e-6)


def test_distill_task_is_a_trainer_task():
    from g2gt.core.task import Task

    assert issubclass(DistillTask, Task)


def test_resume_of_a_run_without_recorded_text_files_takes_the_given_ones(tmp_path):
    from g2gt.ud.parse.distill import _resumed_text

    old = {"task": {"distill": {"teachers": ["t"]}}}
    assert _resumed_text(old, tmp_path, ["a.txt"], "lines", 50) == (["a.txt"], "lines", 50)
    new = {"task": {"distill": {"teachers": ["t"], "text": ["a.txt"], "text_format": "lines", "text_max_words": 50}}}
    assert _resumed_text(new, tmp_path, [], "auto", 100) == (["a.txt"], "lines", 50)
    with pytest.raises(ValueError, match="text files"):
        _resumed_text(new, tmp_path, ["b.txt"], "lines", 50)


def _first_pass_scores(models, teachers, data):
    """Arc and relation scores of each model (float64) on the words of a training batch, first pass."""
    task = _task(teachers[:1], data[0], refine_train="none")
    b = _batch(task)
    heads = task.targets(b).label_heads
    sb = b.student
    g = sb.graph
    out = []
    with torch.no_grad():
        for model in models:
            arcs, rels = model.score(g.tokens, sb.char_ids, sb.word_types, g.padding_mask,
                                     model.labels(sb.position, None), heads)[:2]
            out.append((arcs[sb.words_mask], rels[sb.words_mask]))
    return out


def _assert_same_scores(got, want):
    finite = torch.isfinite(want[0])
    assert torch.equal(finite, torch.isfinite(got[0])) and torch.allclose(got[0][finite], want[0][finite], atol=1e-8)
    assert torch.allclose(got[1], want[1], atol=1e-8)  # relations


def test_student_without_graph_channel_from_a_teacher_computes_its_first_pass(teachers, data):
    """Warm start with the graph channel dropped: the empty-graph row folded into the position rows gives the
    source's iteration-0 scores (float64 on both sides)."""
    from g2gt.ud.parse.warm import copy_weights, load_source, warm_config

    source = load_source(teachers[0])
    teacher = Teacher.load(teachers[0], refine_steps=0).model.double().eval()
    cfg = warm_config(source, source.vocab, {"graph_channel": False})
    student = ParserModel(cfg)
    report = copy_weights(student, source)
    assert not report.new and any("label_key" in n for n in report.copied)
    fresh = ParserModel(cfg).double().eval()  # the fold is what makes them equal
    want, got, other = _first_pass_scores([teacher, student.double().eval(), fresh], teachers, data)
    _assert_same_scores(got, want)
    assert not torch.allclose(other[1], want[1], atol=1e-3)


def test_init_from_continues_a_student(teachers, data, tmp_path):
    train, dev = data
    first = tmp_path / "first"
    train_distill([teachers[0]], train, dev, first, config=ParserConfig(**dict(TINY, dropout=0.0, num_layers=2)),
                  train_config=_tc(max_steps=3), refine_steps=0, batch_tokens=400)
    again = tmp_path / "again"
    train_distill([teachers[0]], train, dev, again, train_config=_tc(max_steps=2, init_from=str(first)),
                  refine_steps=0, batch_tokens=400)
    p = Parser.load(again, dtype="float32")
    assert p.model.config.num_layers == 2  # the source's architecture, not the teacher's
    assert json.loads((again / "config.json").read_text())["train_config"]["init_from"] == str(first)


def test_deeper_student_starts_as_its_source(teachers, data):
    """--layers above the source's: the added top layer starts as the identity (zero output projections), so the
    grown model gives the source's scores (float64 on both sides); its other new weights are fresh."""
    from g2gt.ud.parse.warm import copy_weights, load_source, warm_config

    source = load_source(teachers[0])
    teacher = Teacher.load(teachers[0], refine_steps=0).model.double().eval()
    top = source.config.num_layers
    cfg = warm_config(source, source.vocab, {"num_layers": top + 1})
    student = ParserModel(cfg)
    report = copy_weights(student, source)
    assert report.new and all(n.startswith(f"encoder.layers.{top}.") for n in report.new)
    layer = student.encoder.layers[top]
    assert not layer.self_attn.out_proj.weight.any() and not layer.ffn.lin2.bias.any()
    assert layer.self_attn.q_proj.weight.any() and layer.ffn.lin1.weight.any()  # fresh, not zero
    want, got = _first_pass_scores([teacher, student.double().eval()], teachers, data)
    _assert_same_scores(got, want)
