"""``g2gt serve`` over real HTTP (uvicorn on a free loopback port, the shipped model loaded once): UDPipe's
``/models`` and ``/process``, the JSON API, bad input, dynamic batching, a client that goes away."""

from __future__ import annotations

import json
import re
import socket
import threading
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote, urlencode

import pytest

from test_serve_harness import LiveServer, multipart, wait_for

from g2gt.ud.io import check_tree, parse_conllu_string
from g2gt.serve.adapter import LoadedModel, load_models
from g2gt.serve.app import ServeConfig, create_app

TEXT = "I don't think it will rain tomorrow. The dog that barked ran away."
MAX_WORDS = 40


@pytest.fixture(scope="module")
def models():
    loaded = load_models(["en_combined"])
    first = loaded["en_combined"]
    loaded["second"] = LoadedModel("second", first.nlp, {**first.card, "language": "xx"})  # same weights
    return loaded


@pytest.fixture(scope="module")
def server(models):
    config = ServeConfig(max_body_bytes=64 * 1024, max_sentence_words=MAX_WORDS, batch_wait_ms=5)
    with LiveServer(create_app(models, config)) as live:
        yield live


def process(server, fields: dict, how: str = "urlencoded") -> tuple[int, dict | str]:
    if how == "multipart":
        body, ctype = multipart(fields)
        status, data = server.request("POST", "/process", body, {"Content-Type": ctype})
    elif how == "get":
        status, data = server.request("GET", "/process?" + urlencode(fields))
    else:
        status, data = server.request("POST", "/process", urlencode(fields),
                                      {"Content-Type": "application/x-www-form-urlencoded"})
    text = data.decode("utf-8")
    return status, (json.loads(text) if status == 200 else text)


# --------------------------------------------------------------------------- UDPipe API
def test_models_lists_components_and_default(server):
    status, data = server.request("GET", "/models")
    assert status == 200
    info = json.loads(data)
    assert info["default_model"] == "en_combined"
    assert info["models"]["en_combined"] == ["tokenizer", "tagger", "parser"]
    assert set(info["models"]) == {"en_combined", "second"}


@pytest.mark.parametrize("how", ["urlencoded", "multipart", "get"])
def test_process_tokenize_tag_parse_matches_the_library(server, models, how):
    status, out = process(server, {"data": TEXT, "tokenizer": "", "tagger": "", "parser": ""}, how)
    assert status == 200, out
    assert out["model"] == "en_combined" and out["acknowledgements"]
    sents = parse_conllu_string(out["result"])
    direct = models["en_combined"].nlp(TEXT)
    assert [s.forms for s in sents] == [s.forms for s in direct]
    assert [s.heads for s in sents] == [s.heads for s in direct]  # one request = one batch: the same call
    assert [s.upos for s in sents] == [s.upos for s in direct]
    assert out["result"].startswith("# generator = g2gt")


def test_process_steps_are_optional_like_udpipe(server):
    _, tok_only = process(server, {"data": TEXT, "tokenizer": ""})
    sents = parse_conllu_string(tok_only["result"])
    assert len(sents) == 2 and all(h is None for s in sents for h in s.heads)
    assert all(u == "_" for s in sents for u in s.upos)
    _, tagged = process(server, {"data": TEXT, "tokenizer": "", "tagger": ""})
    sents = parse_conllu_string(tagged["result"])
    assert all(h is None for s in sents for h in s.heads) and "PRON" in sents[0].upos
    # CoNLL-U input (the default) with gold tags: parser only keeps them
    gold = ("1\tThe\tthe\tDET\tDT\t_\t_\t_\t_\t_\n2\tcats\tcat\tNOUN\tNNS\tNumber=Plur\t_\t_\t_\t_\n"
            "3\tsleep\tsleep\tVERB\tVBP\t_\t_\t_\t_\t_\n\n")
    _, parsed = process(server, {"data": gold, "parser": ""})
    (s,) = parse_conllu_string(parsed["result"])
    assert s.upos == ["DET", "NOUN", "VERB"] and s.lemmas == ["the", "cat", "sleep"]
    assert check_tree(s.heads) is None


def test_process_input_and_output_formats(server):
    _, out = process(server, {"data": "The cat sat .\nIt slept .\n", "input": "horizontal", "tagger": "",
                              "parser": "", "output": "vertical"})
    assert out["result"] == "The\ncat\nsat\n.\n\nIt\nslept\n.\n\n"
    _, out = process(server, {"data": "The\ncat\nsat\n\nIt\nslept\n", "input": "vertical", "output": "horizontal"})
    assert out["result"] == "The cat sat\nIt slept\n"
    raw = "  Hello there.  How are\nyou?"
    _, out = process(server, {"data": raw, "tokenizer": "", "output": "plaintext"})
    assert out["result"].rstrip("\n") == raw  # the whitespace comes back exactly
    _, out = process(server, {"data": raw, "tokenizer": "", "output": "plaintext=normalized_spaces"})
    assert out["result"] == "Hello there.\nHow are you?\n"


def test_process_tokenizer_options(server):
    text = "I don't know. He left.\nA second line"
    _, out = process(server, {"data": text, "tokenizer": "presegmented;ranges"})
    sents = parse_conllu_string(out["result"])
    assert len(sents) == 2  # one sentence per line, however the splitter would cut them
    ranges = [(tok["form"], tok["misc"]["TokenRange"]) for s in sents for tok in s.rows
              if isinstance(tok["misc"], dict) and "TokenRange" in tok["misc"]]
    assert len(ranges) == 10  # I, don't, know, ., He, left, ., A, second, line
    for form, rng in ranges:
        a, b = map(int, rng.split(":"))
        assert text[a:b] == form
    status, msg = process(server, {"data": text, "tokenizer": "no_such_option"})
    assert status == 400 and "no_such_option" in msg


def test_process_picks_a_model_by_name_or_language(server):
    assert process(server, {"data": TEXT, "tokenizer": "", "model": "second"})[1]["model"] == "second"
    assert process(server, {"data": TEXT, "tokenizer": "", "model": "en"})[1]["model"] == "en_combined"
    status, msg = process(server, {"data": TEXT, "model": "cs_pdt"})
    assert status == 400 and "cs_pdt" in msg and "en_combined" in msg and "second" in msg


@pytest.mark.parametrize("fields, expect", [
    ({"tokenizer": ""}, "'data' is required"),
    ({"data": "x", "input": "docx"}, "unknown input format"),
    ({"data": "x", "tokenizer": "", "output": "xml"}, "unknown output format"),
    ({"data": "1\tThe\tthe\n"}, "data:1:"),
    ({"data": "1\tA\t_\t_\t_\t_\t0\troot\t_\t_\n3\tB\t_\t_\t_\t_\t1\tdep\t_\t_\n\n"}, "data:2:"),
])
def test_process_mistakes_are_400_with_a_message(server, fields, expect):
    status, msg = process(server, fields)
    assert status == 400 and expect in msg


def test_bytes_that_are_not_utf8_name_their_offset(server):
    status, data = server.request("POST", "/process", b"tokenizer=&data=ab%FFc",
                                  {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 400 and b"byte 2" in data and b"'data'" in data
    body, ctype = multipart({"tokenizer": "", "data": b"caf\xc3\xa9 \xe9t\xe9"})
    status, data = server.request("POST", "/process", body, {"Content-Type": ctype})
    assert status == 400 and b"byte 6" in data
    status, data = server.request("POST", "/v1/parse", b'{"text": "ok \xff"}', {"Content-Type": "application/json"})
    assert status == 400 and b"byte 13" in data


def test_body_over_the_limit_is_413(server):
    status, data = server.request("POST", "/process", urlencode({"data": "word " * 20000}),
                                  {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 413 and b"limit" in data
    assert server.request("GET", "/models")[0] == 200  # the server is fine


def test_long_sentences_are_split_or_refused(server):
    words = [f"w{i}" for i in range(MAX_WORDS * 2 + 5)]
    status, out = server.json("/v1/parse", {"sentences": [words]})
    assert status == 200
    assert [len(s["words"]) for s in out["sentences"]] == [MAX_WORDS, MAX_WORDS, 5]
    status, out = server.json("/v1/parse", {"text": " ".join(words)})
    assert status == 200 and all(len(s["words"]) <= MAX_WORDS for s in out["sentences"])
    conllu = "".join(f"{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\n" for i, w in enumerate(words, 1)) + "\n"
    status, msg = server.json("/v1/parse", {"conllu": conllu})
    assert status == 400 and f"limit of {MAX_WORDS}" in msg
    assert server.json("/v1/parse", {"text": "Still fine."})[0] == 200  # no stuck worker


# --------------------------------------------------------------------------- JSON API
def test_v1_parse_text_gives_offsets_tags_and_trees(server):
    text = "  I don't know.\n\nHe left early."
    status, out = server.json("/v1/parse", {"text": text, "svg": True, "return_conllu": True})
    assert status == 200 and out["text"] == text
    assert len(out["sentences"]) == 2
    for s in out["sentences"]:
        assert text[s["start_char"]:s["end_char"]] == s["text"]
        assert check_tree([w["head"] for w in s["words"]]) is None
        for t in s["tokens"]:
            assert text[t["start_char"]:t["end_char"]] == t["text"]
        for w in s["words"]:
            assert w["upos"] and w["deprel"] and w["lemma"]
            assert text[w["start_char"]:w["end_char"]] in (w["text"], *(t["text"] for t in s["tokens"]))
        assert s["svg"].count('class="word"') == len(s["words"])
    mwt = out["sentences"][0]["tokens"][1]
    assert mwt["text"] == "don't" and mwt["words"] == [2, 3] and text[mwt["start_char"]:mwt["end_char"]] == "don't"
    assert parse_conllu_string(out["conllu"])[1].forms == ["He", "left", "early", "."]


def test_v1_parse_json_is_the_documents_and_the_clis(server, models, capsys):
    """One JSON for one text: the server's /v1/parse, g2gt.load()(text).to_json() and g2gt parse --format json."""
    from g2gt.cli.main import main

    text = "I don't think so.  Müller's café opened — in 2019!\n\nA new paragraph."
    status, served = server.json("/v1/parse", {"text": text})
    assert status == 200
    nlp = models["en_combined"].nlp
    doc = nlp(text)
    doc.model = "en_combined"  # the name the server gives the model
    assert served == json.loads(doc.to_json())
    assert main(["parse", "--model", "en_combined", "--text", text, "--format", "json", "--threads", "1"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli == {**served, "model": cli["model"]} and cli["model"] == nlp.name


def test_v1_parse_enhanced_edges_match_deps(server):
    status, out = server.json("/v1/parse", {"text": "The dog that barked ran away.", "enhanced": True})
    assert status == 200
    (s,) = out["sentences"]
    for w in s["words"]:
        mine = sorted(f"{e['head']}:{e['label']}" for e in s["enhanced"] if e["dependent"] == w["id"])
        assert mine == sorted(w["deps"].split("|"))
    assert any(e["head"] == 0 and e["label"] == "root" for e in s["enhanced"])


def test_v1_parse_tokens_and_conllu_input(server):
    status, out = server.json("/v1/parse", {"sentences": [["The", "cat", "sat", "."], ["Yes", "."]]})
    assert status == 200 and [len(s["words"]) for s in out["sentences"]] == [4, 2]
    assert out["text"] == "The cat sat . Yes ."  # pre-tokenized: the tokens joined by spaces
    assert out["sentences"][0]["words"][1]["start_char"] == 4 and out["sentences"][1]["start_char"] == 14
    conllu = "# text = Hi all\n1\tHi\t_\t_\t_\t_\t_\t_\t_\t_\n2\tall\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
    status, out = server.json("/v1/parse", {"conllu": conllu})
    assert status == 200 and [w["text"] for w in out["sentences"][0]["words"]] == ["Hi", "all"]


@pytest.mark.parametrize("payload, expect", [
    ({}, "exactly one of"),
    ({"text": "a", "sentences": [["a"]]}, "exactly one of"),
    ({"text": "a", "colour": "red"}, "colour"),
    ({"text": 3}, "text"),
    ({"text": "a", "model": "nope"}, "unknown model"),
    ({"sentences": [["fine"], ["a\tb"]]}, "sentences[1]"),
])
def test_v1_parse_mistakes_are_400(server, payload, expect):
    status, msg = server.json("/v1/parse", payload)
    assert status == 400 and expect in msg


def test_openapi_and_page_are_served(server):
    status, data = server.request("GET", "/openapi.json")
    assert status == 200 and "/v1/parse" in json.loads(data)["paths"]
    assert server.request("GET", "/docs")[0] == 200
    status, page = server.request("GET", "/")
    assert status == 200 and b"/static/app.js" in page
    links = re.findall(rb'(?:src|href)="([^"]*)"', page)
    assert links and all(link.startswith((b"/", b"#")) for link in links)  # nothing from outside: works offline
    assert server.request("GET", "/static/app.js")[0] == 200
    assert server.request("GET", "/static/" + quote("../app.py", safe=""))[0] == 404


# --------------------------------------------------------------------------- batching and slots
@contextmanager
def held_worker(server):
    """The batch worker blocked inside a batch of one request until the block ends (then that request gets
    its answer): meanwhile new requests can only queue."""
    batcher = server.app.state.batcher
    gate = threading.Event()
    run = batcher.run

    def gated(key, payloads):
        gate.wait(30)
        return run(key, payloads)

    batcher.run = gated
    running = batcher.stats["running"]
    holder = threading.Thread(target=lambda: server.json("/v1/parse", {"text": "Hold on."}))
    holder.start()
    try:
        assert wait_for(lambda: batcher.stats["running"] == running + 1, timeout=10)
        yield batcher
    finally:
        batcher.run = run
        gate.set()
        holder.join(30)


def test_concurrent_requests_share_one_batch(server):
    texts = [f"Request number {i} asks for a parse of its own sentence." for i in range(8)]
    with ThreadPoolExecutor(len(texts)) as pool:
        with held_worker(server) as batcher:
            batches = batcher.stats["batches"]
            futures = [pool.submit(server.json, "/v1/parse", {"text": t}) for t in texts]
            assert wait_for(lambda: batcher.pending == len(texts), timeout=10)
        results = [f.result() for f in futures]
    assert all(status == 200 for status, _ in results)
    for text, (_, out) in zip(texts, results):
        assert [w["text"] for w in out["sentences"][0]["words"]] == text[:-1].split() + ["."]
    assert batcher.stats["batches"] == batches + 1  # all eight in one batch (the held one was counted before)
    assert batcher.stats["max_batch_jobs"] >= len(texts)


def test_client_that_disconnects_frees_its_slot(server):
    with held_worker(server) as batcher:
        cancelled, batches = batcher.stats["cancelled"], batcher.stats["batches"]
        body = json.dumps({"text": "Nobody will read this answer."}).encode()
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(b"POST /v1/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert wait_for(lambda: batcher.pending == 1, timeout=10)
        sock.close()
        assert wait_for(lambda: batcher.pending == 0 and batcher.stats["cancelled"] == cancelled + 1, timeout=10)
    assert wait_for(lambda: batcher.stats["running"] == 0, timeout=30)
    assert batcher.stats["batches"] == batches  # the cancelled request never ran
    assert server.json("/v1/parse", {"text": "Next one."})[0] == 200


def test_two_workers_share_the_models(models):
    texts = [f"Worker test {i}: the {'big ' * (i % 4)}cat sat on mat number {i}." for i in range(12)]
    with LiveServer(create_app(models, ServeConfig(workers=2))) as live:
        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(lambda t: live.json("/v1/parse", {"text": t}), texts))
        assert live.app.state.batcher.stats["failed"] == 0
    nlp = models["en_combined"].nlp
    agree = total = 0
    for text, (status, out) in zip(texts, results):
        assert status == 200
        direct = nlp(text)
        assert [[w["text"] for w in s["words"]] for s in out["sentences"]] == [s.forms for s in direct]
        for s, d in zip(out["sentences"], direct):
            agree += sum(w["head"] == h for w, h in zip(s["words"], d.heads))
            total += len(d)
    assert agree == total  # batch-mates change padding, not the parse: padded keys get no weight


@pytest.mark.parametrize("layout", ["paragraphs", "one line", "presegmented", "word lists"])
def test_a_request_cut_into_pieces_is_answered_as_one(models, layout):
    from g2gt.data import EWT_SAMPLE_DEV
    from g2gt.serve.pieces import join_pieces, split_work
    from g2gt.serve.service import Options, ParseService, Work
    from g2gt.ud.io import read_conllu, sentence_from_words

    sents = read_conllu(EWT_SAMPLE_DEV)[:24]
    texts = [s.text for s in sents]
    work = {"paragraphs": Work(text="\n\n".join(" ".join(texts[i:i + 3]) for i in range(0, 24, 3)), id_prefix="s"),
            "one line": Work(text=" ".join(texts), id_prefix="s"),
            "presegmented": Work(text="\n".join(texts), presegmented=True, id_prefix="s"),
            "word lists": Work(sentences=[sentence_from_words(s.forms, sent_id=str(k))
                                          for k, s in enumerate(sents, 1)])}[layout]
    service = ParseService(models)
    whole = service.run(Options("en_combined"), [work])[0]
    pieces = split_work(work, 60)
    assert len(pieces) > 3
    joined = join_pieces(work, service.run(Options("en_combined"), pieces))
    assert joined.to_dict() == whole.to_dict()  # ids, offsets, white space in MISC, # newdoc / # newpar
