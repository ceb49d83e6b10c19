"""The segmenter model, end to end: any Unicode in, exact text back, training smoke test, checkpoints."""

from __future__ import annotations

import json
import random
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g2gt.data import EWT_DEV, EWT_SAMPLE_DEV, EWT_SAMPLE_TRAIN, find_data
from g2gt.ud.io import parse_conllu_string, read_conllu, to_conllu_string
from g2gt.ud.limits import drop_control_characters
from g2gt.ud.tokenize import (
    CharVocab, MWTLexicon, SegmentDataConfig, Segmenter, SegmenterConfig, SegmenterModel, documents_from_sentences,
    render_document, text_from_sentences, train_segmenter,
)
from g2gt.ud.tokenize.data import STYLES
from g2gt.cli.main import main as g2gt_main
from g2gt.core.run_folder import run_commands
from g2gt.ud.tokenize.train import default_train_config, relearn_lexicon

TINY = dict(d_model=32, num_layers=2, num_heads=2, ffn_dim=64, window=48, context=8)


@pytest.fixture(scope="module")
def sample_docs():
    return documents_from_sentences(read_conllu(EWT_SAMPLE_DEV))


@pytest.fixture(scope="module")
def random_segmenter(sample_docs):
    """An untrained (random) model: it splits almost anywhere, the hardest case for the round trip."""
    torch.manual_seed(0)
    vocab = CharVocab.build((render_document(d).text for d in sample_docs), min_count=1)
    model = SegmenterModel(SegmenterConfig(vocab_size=len(vocab), **TINY))
    with torch.no_grad():
        model.classifier.bias.copy_(torch.tensor([0.0, 0.5, 0.3, 0.3, 0.2]))
    return Segmenter(model, vocab, MWTLexicon({"don't": ["do", "n't"]}), batch_tokens=4 * 48)


def test_model_shapes_and_padding_invariance():
    torch.manual_seed(0)
    m = SegmenterModel(SegmenterConfig(vocab_size=20, **TINY)).eval()
    x = torch.randint(2, 20, (2, 7))
    c = torch.randint(1, 18, (2, 7))
    g = torch.randint(0, 5, (2, 7))
    out = m(x, c, g, g)
    assert out.shape == (2, 7, 5)
    pad = torch.zeros(2, 3, dtype=torch.long)
    mask = torch.cat([torch.zeros(2, 7, dtype=torch.bool), torch.ones(2, 3, dtype=torch.bool)], 1)
    cat = lambda t: torch.cat([t, pad], 1)  # noqa: E731
    padded = m(cat(x), cat(c), cat(g), cat(g), mask)
    torch.testing.assert_close(padded[:, :7], out, atol=1e-5, rtol=1e-4)
    assert m.num_parameters() < 2_000_000
    assert SegmenterModel(SegmenterConfig(vocab_size=100)).num_parameters() < 200_000  # the default recipe


def test_empty_and_whitespace_input(random_segmenter):
    assert random_segmenter.segment("") == []
    assert random_segmenter.segment(" \n\t\u200b ") == []
    with pytest.raises(TypeError, match="expected str"):
        random_segmenter.segment(["a", "list"])  # type: ignore[list-item]


UNICODE = st.lists(st.one_of(
    st.characters(exclude_categories=("Cs",)),
    st.sampled_from(list(" \n\r\t\u200b\u200d\ufeff\u0301\x00\x1b👍🏽中文שלום.'\"") + ["\r\n", "👩\u200d💻", "don't"]),
), max_size=80).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(UNICODE)
def test_any_unicode_gives_tokens_and_the_text_back(random_segmenter, text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sents = random_segmenter.segment(text)
        text = drop_control_characters(text)  # what the segmenter reads: UD allows no control characters
    if not sents:
        _, _, is_space, is_glue = CharVocab([]).lookup(text)
        assert (is_space | is_glue).all()  # nothing but whitespace and zero-width / combining characters
        return
    assert text_from_sentences(sents) == text
    assert text_from_sentences(parse_conllu_string(to_conllu_string(sents))) == text
    for s in sents:
        for f in s.forms:
            assert f.strip() == f and f not in ("\u200b", "\u200d", "\ufeff")


def test_sample_documents_round_trip(random_segmenter, sample_docs):
    texts = [render_document(d, STYLES[i % len(STYLES)], random.Random(i)).text for i, d in enumerate(sample_docs)]
    for text, sents in zip(texts, random_segmenter.segment_many(texts)):
        assert text_from_sentences(sents) == text


def test_long_text_uses_bounded_windows(random_segmenter):
    text = "Word, more words. " * 400  # 7,200 characters, 150 windows of 48
    seen = []
    model = random_segmenter.model
    hook = model.register_forward_pre_hook(lambda mod, args: seen.append(tuple(args[0].shape)))
    try:
        sents = random_segmenter.segment(text)
    finally:
        hook.remove()
    assert text_from_sentences(sents) == text
    assert max(b for b, _ in seen) <= random_segmenter.batch_windows and max(n for _, n in seen) <= 48


def test_training_smoke_and_checkpoint_round_trip(tmp_path):
    train = read_conllu(EWT_SAMPLE_TRAIN)[:400]
    dev = read_conllu(EWT_SAMPLE_DEV)[:60]
    cfg = SegmenterConfig(**TINY)
    tc = default_train_config(max_steps=40, eval_every=20, log_every=5, progress=False, warmup=0.1)
    seg = train_segmenter(train, dev, tmp_path, cfg, tc, data_config=SegmentDataConfig(batch_tokens=16 * 48))
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    losses = [e["loss"] for e in log if e["kind"] == "train"]
    assert losses[-1] < 0.6 * losses[0]
    evals = [e for e in log if e["kind"] == "eval"]
    assert len(evals) == 2 and all(0 <= e["tokens_f1"] <= 100 for e in evals)
    state = torch.load(tmp_path / "best.pt", weights_only=True)
    assert state["task"]["kind"] == "segmenter"
    model = SegmenterModel(SegmenterConfig.from_dict(state["model_config"]))
    model.load_state_dict(state["model"], strict=True)
    again = Segmenter(model, CharVocab.from_list(state["task"]["vocab"]),
                      MWTLexicon(state["task"]["mwt"], state["task"]["mwt_always"]))
    text = "I don't know. He sat. Then he left.\n"
    assert [s.forms for s in seg(text)] == [s.forms for s in again(text)]
    assert text_from_sentences(seg(text)) == text
    # resume continues the same run to a larger budget
    tc2 = default_train_config(max_steps=45, eval_every=20, log_every=5, progress=False, warmup=0.1)
    train_segmenter(train, dev, tmp_path, cfg, tc2, resume=True, data_config=SegmentDataConfig(batch_tokens=16 * 48))
    last = torch.load(tmp_path / "last.pt", weights_only=True)
    assert last["step"] == 45


def test_bad_metric_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a segmenter metric"):
        train_segmenter([], [], tmp_path, train_config=default_train_config(metric="las"))


def test_load_refuses_other_checkpoints(tmp_path):
    torch.save({"model": {}, "model_config": {}, "task": {"kind": "parser"}}, tmp_path / "best.pt")
    with pytest.raises(ValueError, match="not a segmenter checkpoint"):
        Segmenter.load(tmp_path)


@pytest.mark.slow
def test_ewt_dev_documents_round_trip(random_segmenter):
    path = find_data(EWT_DEV)
    if path is None:
        pytest.skip("UD English EWT dev is not available (set $G2GT_DATA to a data folder)")
    docs = documents_from_sentences(read_conllu(path))
    for style in STYLES:
        texts = [render_document(d, style, random.Random(i)).text for i, d in enumerate(docs)]
        whole = "\n\n".join(texts)
        for text, sents in zip(texts + [whole], random_segmenter.segment_many(texts + [whole])):
            assert text_from_sentences(sents) == text
            assert text_from_sentences(parse_conllu_string(to_conllu_string(sents))) == text


def test_relearn_lexicon_upgrades_an_old_checkpoint_and_keeps_the_weights(tmp_path):
    train = read_conllu(EWT_SAMPLE_TRAIN)[:400]
    tc = default_train_config(max_steps=2, eval_every=0, log_every=1, progress=False)
    train_segmenter(train, read_conllu(EWT_SAMPLE_DEV)[:20], tmp_path / "run", SegmenterConfig(**TINY), tc,
                    data_config=SegmentDataConfig(batch_tokens=8 * 48))
    state = torch.load(tmp_path / "run" / "last.pt", weights_only=True)
    old = {**state, "task": {k: v for k, v in state["task"].items() if k != "mwt_always"}}
    torch.save(old, tmp_path / "old.pt")  # as saved before the always-split set existed
    assert Segmenter.load(tmp_path / "old.pt").lexicon.always == frozenset()
    assert g2gt_main(["train", "segmenter", "--train", str(EWT_SAMPLE_TRAIN), "--relearn-lexicon",
                      str(tmp_path / "old.pt"), "--out", str(tmp_path / "new.pt")]) == 0
    new = torch.load(tmp_path / "new.pt", weights_only=True)
    assert new["task"]["mwt_always"] and "don't" in new["task"]["mwt_always"]
    assert all(torch.equal(new["model"][k], v) for k, v in state["model"].items())
    assert Segmenter.load(tmp_path / "new.pt").lexicon.always == frozenset(new["task"]["mwt_always"])
    with pytest.raises(ValueError, match="not a segmenter checkpoint"):
        relearn_lexicon(_parser_like(tmp_path), train, tmp_path / "x.pt")
    # into a folder: best.pt, and the commands that made the source (here none recorded) then this one
    assert g2gt_main(["train", "segmenter", "--train", str(EWT_SAMPLE_TRAIN), "--relearn-lexicon",
                      str(tmp_path / "run"), "--out", str(tmp_path / "relexed")]) == 0
    assert (tmp_path / "relexed" / "best.pt").is_file()
    commands = run_commands(tmp_path / "relexed")
    assert len(commands) == 1 and "--relearn-lexicon" in commands[0]
    again = ["train", "segmenter", "--train", str(EWT_SAMPLE_TRAIN), "--relearn-lexicon", str(tmp_path / "run"),
             "--out", str(tmp_path / "run")]  # a folder that holds a run is not overwritten
    assert g2gt_main(again) == 2 and torch.load(tmp_path / "run" / "last.pt", weights_only=True)["step"] == 2


def test_lexicon_always_splits_a_surface_seen_once_as_a_multiword_token():
    lex = MWTLexicon.learn([("vardı", ["var", "dı"]), ("evde", ["evde"]), ("its", ["it", "s"]), ("its", ["its"])])
    assert lex.always == frozenset({"vardı"})  # "its" was split once of twice: the model decides


def _parser_like(tmp_path):
    torch.save({"model": {}, "model_config": {}, "task": {"kind": "parser"}}, tmp_path / "p.pt")
    return tmp_path / "p.pt"
