"""g2gt.seq2seq.Translator on a tiny model that memorised the fixture: lines in, lines out, in order; blank
lines kept; over-long lines split; save / load; pipe with worker processes; packages found by name."""

from __future__ import annotations

import dataclasses
import json
import zipfile

import pytest
import torch

import g2gt

from g2gt.cli.main import main as cli_main
from g2gt.core.checkpoint import CheckpointError
from g2gt.core.train import TrainConfig, Trainer
from g2gt.seq2seq.config import DEFAULT_BEAM
from g2gt.seq2seq import (
    Seq2SeqConfig, Seq2SeqSettings, Seq2SeqTask, TranslateConfig, Translator,
    build_translation_package, mt_scores, read_parallel,
)
from g2gt.seq2seq.subword import SubwordTokenizer
from fixture_paths import FIXTURES_MT

TINY = dict(d_model=48, num_heads=4, num_encoder_layers=1, num_decoder_layers=2, ffn_dim=96, dropout=0.0,
            decoder_max_distance=8)


@pytest.fixture(scope="module")
def pairs() -> tuple[list[str], list[str]]:
    return read_parallel(FIXTURES_MT / "train.en", FIXTURES_MT / "train.de")


@pytest.fixture(scope="module")
def folder(pairs, tmp_path_factory):
    """A training folder whose model memorised the 50 fixture pairs."""
    torch.manual_seed(0)
    src, tgt = pairs
    tok = SubwordTokenizer.train(src + tgt, vocab_size=400)
    task = Seq2SeqTask(tok, tok, Seq2SeqSettings(max_distance=8, batch_tokens=2000, label_smoothing=0.0))
    task.train = task.dev = task.encode_pairs(src, tgt)
    out = tmp_path_factory.mktemp("mt")
    cfg = TrainConfig(lr=5e-3, warmup_steps=20, max_steps=120, eval_every=10_000, metric="bleu", metric_mode="max",
                      progress=False, weight_decay=0.0, device="cpu", amp="none")
    Trainer(task.build_model(**TINY), task, cfg, out).fit()
    return out


@pytest.fixture(scope="module")
def translator(folder) -> Translator:
    return Translator.load(folder, device="cpu", dtype="float32", beam=2)


def test_blank_lines_stay_blank_in_place_and_each_line_gets_its_own_translation(translator, pairs):
    src, tgt = pairs
    lines = [src[0], "", "   ", src[3], "\t", src[7]]
    out = translator(lines)
    assert len(out) == len(lines)
    assert [o == "" for o in out] == [not line.strip() for line in lines]
    refs = [tgt[0], tgt[3], tgt[7]]
    got = [out[0], out[3], out[5]]
    assert mt_scores(refs, got)["chrf"] > 60.0  # memorised: each line's own reference
    assert mt_scores(refs, got[1:] + got[:1])["chrf"] < 40.0  # not any other line's


def test_pipe_keeps_order_across_chunks_and_worker_processes(translator, pairs, monkeypatch):
    import g2gt.seq2seq.translator as tr

    src, _ = pairs
    lines = [src[i] if i % 4 else "" for i in range(14)]
    monkeypatch.setattr(tr, "CHUNK_LINES", 3)  # many chunks, so order across jobs is tested
    one = list(translator.pipe(iter(lines)))
    chunked = [h for i in range(0, len(lines), 3) for h in translator(lines[i:i + 3])]
    assert one == chunked  # the same batches as calling it chunk by chunk
    assert list(translator.pipe(iter(lines), n_process=2)) == one


def test_save_and_load_round_trip_gives_the_same_translations(translator, pairs, tmp_path):
    src, _ = pairs
    lines = src[:12]
    path = translator.save(tmp_path / "f32.pt", storage_dtype="float32")
    assert Translator.load(path, device="cpu", dtype="float32")(lines) == translator(lines)
    # float16 storage: what a package holds; saving what was loaded from it again changes nothing
    half = Translator.load(translator.save(tmp_path / "f16.pt"), device="cpu", dtype="float32")
    again = Translator.load(half.save(tmp_path / "again.pt"), device="cpu", dtype="float32")
    for a, b in zip(half.model.state_dict().values(), again.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert again(lines) == half(lines)
    assert again.config == translator.config  # the decoding defaults travel with the file (beam=2 here)
    assert torch.load(path, weights_only=True)["kind"] == "seq2seq"


def test_an_over_long_line_is_split_between_sentences_with_a_warning(translator, pairs):
    src, _ = pairs
    sentence = src[1]  # "Two dogs play in the snow."
    n = len(translator.task.src_tok.encode(sentence))
    long = " ".join([sentence] * 5)
    with pytest.warns(UserWarning, match=r"line 2 \(.* subwords, 5 pieces\)"):
        out = translator(["", long], max_input_subwords=n + 2)
    assert out[0] == ""
    # the pieces are the five sentences, decoded in one batch like five copies of the sentence
    assert out[1] == " ".join(translator([sentence] * 5))


def test_a_huge_line_needs_bounded_work(translator):
    words = ("a man walks his dog in the park ." * 2500).split()  # 20,000 words, one line
    with pytest.warns(UserWarning, match="split at word boundaries"):
        out = translator([" ".join(words)], beam=1, max_input_subwords=200)
    assert len(out) == 1 and "\n" not in out[0] and len(out[0]) > 0


def test_a_word_longer_than_the_limit_is_cut(translator):
    with pytest.warns(UserWarning, match="line 1"):
        out = translator(["x" * 5000], beam=1, max_input_subwords=16)
    assert len(out) == 1


def test_wrong_kind_of_checkpoint_is_a_clear_error(translator, tmp_path):
    seg = tmp_path / "segmenter.pt"
    torch.save({"model": {}, "model_config": {}, "task": {"kind": "segmenter"}}, seg)
    with pytest.raises(CheckpointError, match=r"segmenter\.pt: not a translation model: it holds a segmenter"):
        Translator.load(seg, device="cpu")
    parser = tmp_path / "parser.pt"
    torch.save({"model": {}, "model_config": {"num_rels": 3}, "task": {"kind": "parser", "vocab": {"rels": []}}},
               parser)
    with pytest.raises(CheckpointError, match=r"parser\.pt: not a translation model: it holds a parser"):
        Translator.load(parser, device="cpu")
    with pytest.raises(FileNotFoundError, match="not a shipped or installed translator"):
        Translator.load("no_such_model_here", device="cpu")


def test_bad_arguments_say_what_is_expected(translator):
    with pytest.raises(TypeError, match="a list of lines"):
        translator("A man sleeps .")
    with pytest.raises(TypeError, match="line 2: expected a str"):
        translator(["a", 3])
    with pytest.raises(ValueError, match="beam must be an integer >= 1"):
        translator(["a"], beam=0)
    with pytest.raises(TypeError, match="unknown translation option"):
        translator(["a"], beams=2)
    with pytest.raises(TypeError, match=r"unknown translation option\(s\) \['beams'\]"):
        Translator.load(translator.source, device="cpu", beams=2)
    with pytest.raises(ValueError, match="n_process"):
        list(translator.pipe(["a"], n_process=0))
    with pytest.raises(g2gt.Error, match="dtype must be"):
        Translator.load("x", dtype="int4")
    with pytest.raises(g2gt.Error, match="not a device"):
        Translator.load("x", device="gpu7")


def test_beam_default_is_one_value_for_python_and_the_cli():
    from g2gt.cli.main import build_parser

    args, _ = build_parser().parse_known_args(["translate", "--model", "m"])
    assert TranslateConfig().beam == DEFAULT_BEAM == args.beam == Seq2SeqConfig().final_beam
    assert args.batch_tokens == TranslateConfig().batch_tokens


def test_translate_file_and_cli_write_the_translator_lines(translator, folder, pairs, tmp_path):
    src, _ = pairs
    lines = [src[2], "", src[5]]
    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert translator.translate_file(inp, tmp_path / "py.txt") == 3
    expected = "".join(h + "\n" for h in translator(lines))
    assert (tmp_path / "py.txt").read_text(encoding="utf-8") == expected
    out = tmp_path / "cli.txt"
    assert cli_main(["translate", "--model", str(folder), "-i", str(inp), "-o", str(out), "--beam", "2",
                     "--dtype", "float32", "--device", "cpu", "--no-progress"]) == 0
    assert out.read_text(encoding="utf-8") == expected
    text = tmp_path / "text.txt"
    assert cli_main(["translate", "--model", str(folder), "--text", "\n".join(lines), "-o", str(text), "--beam",
                     "2", "--dtype", "float32", "--device", "cpu"]) == 0
    assert text.read_text(encoding="utf-8") == expected  # --text: the same lines as a file holding that text


def test_a_package_installs_offline_and_is_found_by_name(translator, tmp_path, monkeypatch, pairs):
    """build_translation_package -> the wheel its own backend builds -> unpacked on sys.path (what pip
    install does) -> Translator.load(NAME)."""
    card = {"license": "research and non-commercial use only", "description": "tiny test model"}
    pkg = build_translation_package(translator, "tiny_test_mt", tmp_path / "pkg", card=card)
    written = json.loads((pkg / "g2gt_model_tiny_test_mt" / "model" / "model.json").read_text(encoding="utf-8"))
    assert written["license"] == card["license"] and written["kind"] == "translator"
    assert "research and non-commercial use only" in (pkg / "README.md").read_text(encoding="utf-8")
    monkeypatch.syspath_prepend(str(pkg))
    import g2gt_model_build  # the package's own PEP 517 backend, standard library only

    wheel = g2gt_model_build.build_wheel(str(tmp_path / "dist"))
    site = tmp_path / "site"
    with zipfile.ZipFile(tmp_path / "dist" / wheel) as zf:
        zf.extractall(site)
    monkeypatch.syspath_prepend(str(site))
    loaded = Translator.load("tiny_test_mt", device="cpu", dtype="float32")
    assert loaded.card["license"] == card["license"]
    half = Translator.load(translator.save(tmp_path / "f16.pt"), device="cpu", dtype="float32")
    assert loaded(pairs[0][:5]) == half(pairs[0][:5])


def test_bfloat16_weights_translate(translator, folder, pairs):
    bf = Translator.load(folder, device="cpu", dtype="bfloat16", beam=1)
    assert bf.dtype == torch.bfloat16
    out = bf(pairs[0][:3])
    assert len(out) == 3 and all(isinstance(o, str) for o in out)


def test_translator_config_is_a_dataclass_checked_on_use():
    assert dataclasses.is_dataclass(TranslateConfig)
    with pytest.raises(ValueError, match="batch_tokens must be an integer >= 1"):
        TranslateConfig(batch_tokens=0).check()


def test_training_card_reads_size_recipe_and_final_scores(tmp_path):
    from g2gt.seq2seq import training_card

    assert training_card(tmp_path) == {}  # no files: no facts, no error
    (tmp_path / "config.json").write_text(json.dumps({
        "recipe": {"bpe_vocab": 6000}, "parameters": 7_079_680, "steps": 900,
        "model_config": {"d_model": 256, "num_encoder_layers": 3, "num_decoder_layers": 3, "num_heads": 4,
                         "ffn_dim": 1024, "decoder_max_distance": 16, "src_vocab_size": 6000},
        "data": {"train_pairs": 29000, "dev_pairs": 1014}}), encoding="utf-8")
    (tmp_path / "final.json").write_text(json.dumps({"bleu": 31.5, "chrf": 58.0, "beam": 5, "other": 1}),
                                         encoding="utf-8")
    card = training_card(tmp_path, "val")
    assert card["scores"] == {"val": {"bleu": 31.5, "chrf": 58.0, "beam": 5}}
    assert "7.1M parameters" in card["model"] and "3+3 layers" in card["model"]
    assert card["training"]["train_pairs"] == 29000 and card["training"]["steps"] == 900
