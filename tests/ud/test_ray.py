"""Ray Data (g2gt.ud.scale.ray_data) against a real local Ray cluster started here: 2 CPUs, a small object store.

Skipped when the optional extra is not installed (pip install "g2gt[ray]"; CI installs it). The SIGKILL test
is marked slow (pytest -m slow); the local workers' SIGKILL test (tests/ud/test_parallel.py) runs by default."""

from __future__ import annotations

import os
import signal

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from g2gt.data import EWT_SAMPLE_DEV  # noqa: E402
from g2gt.core.registry import DEFAULT_MODEL  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, object_store_memory=100 * 2**20, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def nlp():
    import g2gt

    return g2gt.load(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def sample():
    from g2gt.ud.io import read_conllu

    return read_conllu(EWT_SAMPLE_DEV)[:60]


def _one_process(nlp, path, kind: str = "conllu") -> str:
    """What ``g2gt parse`` writes with one process: the file piece by piece (g2gt.ud.scale.piecewise)."""
    from g2gt.ud.scale.piecewise import open_pieces, parse_piece, write_pieces

    parts: list[str] = []
    _, jobs = open_pieces(str(path), kind)
    write_pieces((parse_piece(nlp, job, {}) for job in jobs), parts.append)
    return "".join(parts)


@pytest.fixture()
def small_pieces(monkeypatch):
    """Pieces of ~2 KB, so that a file is several rows (the driver cuts them, in this process)."""
    from g2gt.ud.scale import piecewise

    monkeypatch.setattr(piecewise, "KINDS", {k: (unit, 2000) for k, (unit, _) in piecewise.KINDS.items()})


def test_parse_files_writes_one_output_per_input_same_bytes_and_a_bad_file_fails_alone(cluster, nlp, sample,
                                                                                       tmp_path, small_pieces):
    from g2gt.ud.io import to_conllu_string
    from g2gt.ud.scale.ray_data import parse_files

    a, b, bad = tmp_path / "a.conllu", tmp_path / "b.conllu.gz", tmp_path / "bad.conllu"
    a.write_text(to_conllu_string(sample[:25]), encoding="utf-8")
    import gzip

    with gzip.open(b, "wt", encoding="utf-8") as f:
        f.write(to_conllu_string(sample[25:40]))
    lines = to_conllu_string(sample[:3]).split("\n")
    lines[4] = lines[4].replace("\t", " ")
    bad.write_text("\n".join(lines), encoding="utf-8")
    out = tmp_path / "out"
    raw = tmp_path / "c.txt"
    raw.write_text("\n\n".join(" ".join(s.text for s in sample[i:i + 4]) for i in range(0, 60, 4)) + "\n",
                   encoding="utf-8")
    report = parse_files([a, bad, b], out, log=None)  # Ray is already connected: the test's cluster
    assert sorted(report.done) == [str(out / "a.conllu"), str(out / "b.conllu")]
    assert len(report.failed) == 1 and report.failed[0][1].startswith(f"{bad}:5:")
    assert (out / "a.conllu").read_text(encoding="utf-8") == _one_process(nlp, a)
    assert (out / "b.conllu").read_text(encoding="utf-8") == _one_process(nlp, b)
    assert sorted(p.name for p in out.iterdir()) == ["a.conllu", "b.conllu"]  # nothing partial left
    assert report.sentences == 40
    report = parse_files([raw], out, kind="raw", log=None)  # several pieces, sentence ids across them
    text = (out / "c.conllu").read_text(encoding="utf-8")
    assert report.ok and text == _one_process(nlp, raw, "raw") and f"# sent_id = s{report.sentences}\n" in text
    again = parse_files([a, b], out, resume=True, log=None)
    assert again.skipped == [str(out / "a.conllu"), str(out / "b.conllu")] and not again.done


def _actor_pids() -> list[int]:
    import psutil

    return [p.pid for p in psutil.process_iter(["cmdline"])
            if "PipelineActor" in " ".join(p.info["cmdline"] or [])]


@pytest.mark.slow  # ~30 s more on 2 cores (a restarted actor reloads the model); run with -m slow
def test_dataset_of_texts_survives_a_killed_actor_nothing_lost_or_doubled(cluster, nlp, sample):
    import ray.data

    from g2gt.ud.io import parse_conllu_string
    from g2gt.ud.scale.ray_data import parse_dataset

    ray.data.DataContext.get_current().execution_options.preserve_order = True
    texts = ["\n\n".join(" ".join(s.text for s in sample[i + j:i + j + 3]) for j in range(0, 6, 3)) + "\n"
             for i in range(0, 60, 6)]  # 10 documents of 2 paragraphs
    from g2gt.ud.io import to_conllu_string

    rows_in = [{"id": k, "text": t, "conllu": None} for k, t in enumerate(texts)]
    rows_in[3] = {"id": 3, "text": None, "conllu": to_conllu_string(sample[:4])}  # a CoNLL-U document among texts
    ds = ray.data.from_items(rows_in)
    rows, killed = [], []
    for row in parse_dataset(ds, DEFAULT_MODEL, actors=2).iter_rows():
        rows.append(row)
        if not killed:
            pids = _actor_pids()
            assert pids, "no actor process found"
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
    assert killed
    assert [r["id"] for r in rows] == list(range(10)) and all(r["error"] == "" for r in rows)
    for r, t in zip(rows, texts):  # every document once, in order, and the bytes of one process
        sents = sample[:4] if r["id"] == 3 else nlp.text_sentences(t)
        assert r["parsed"] == "".join(s.serialize() for s in nlp.stream(sents, 2000))
    forms = [s.forms for r in rows for s in parse_conllu_string(r["parsed"])]
    assert sum(len(f) for f in forms) == sum(r["words"] for r in rows) > 500


def test_cli_parse_ray_writes_the_outputs(cluster, nlp, sample, tmp_path, capsys):
    from g2gt.cli.main import main
    from g2gt.ud.io import to_conllu_string

    a = tmp_path / "a.conllu"
    a.write_text(to_conllu_string(sample[:6]), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["parse", "--ray", str(a), "--output-dir", str(out), "--no-progress"]) == 0  # --ray FILE: local
    assert (out / "a.conllu").read_text(encoding="utf-8") == _one_process(nlp, a)
    assert "1 file(s) written" in capsys.readouterr().err
