"""g2gt.core.pieces: an input cut at paragraph / line ends by a scan of its bytes, the same cuts whatever the
block sizes it is read in."""

from __future__ import annotations

import random
import re

import pytest

from g2gt.core import pieces as P
from g2gt.core.files import open_input
from g2gt.core.pieces import input_pieces, piece_text, scan_pieces


def _text(rng: random.Random, paragraphs: int = 400) -> bytes:
    out = []
    for _ in range(paragraphs):
        lines = [" ".join(rng.choice(["word", "Zoë", "日本", "a.", "b"]) for _ in range(rng.randint(1, 12)))
                 for _ in range(rng.randint(1, 4))]
        out.append("\n".join(lines) + rng.choice(["\n\n", "\n \n", "\r\n\r\n", "\n\n\n", "\n\t\n  \n", "\n"]))
    return "".join(out).encode("utf-8")


def _cuts(pieces) -> list[tuple[int, int, int]]:
    return [(p.offset, p.length, p.first_line) for p in pieces]


@pytest.mark.parametrize("unit", ["paragraph", "line"])
def test_pieces_cover_the_input_and_do_not_depend_on_block_sizes(unit):
    rng = random.Random(0)
    data = _text(rng)
    whole = list(scan_pieces([data], unit, 300))
    assert b"".join(p.data for p in whole) == data and len(whole) > 5
    assert [p.index for p in whole] == list(range(len(whole)))
    for size in (1, 2, 3, 17, 299, 300, 301, 4096):
        blocks = [data[i:i + size] for i in range(0, len(data), size)]
        assert _cuts(scan_pieces(blocks, unit, 300)) == _cuts(whole), size


def test_paragraph_pieces_end_after_a_whole_run_of_blank_lines():
    data = _text(random.Random(1))
    pieces = list(scan_pieces([data], "paragraph", 200))
    for p in pieces[:-1]:
        assert p.length >= 200
        assert re.search(rb"\n[ \t\r\f\v]*\n\Z", p.data)  # ends with a blank line
        nxt = data[p.offset + p.length:]
        assert not re.match(rb"[ \t\r\f\v]*\n", nxt)  # the next piece does not start with a blank line


def test_line_pieces_end_at_line_ends_and_count_lines():
    data = b"".join(f"line {k}\n".encode() for k in range(1, 1001))
    pieces = list(scan_pieces([data], "line", 100))
    for p in pieces:
        assert p.data.endswith(b"\n") and p.data.startswith(f"line {p.first_line}\n".encode())


def test_a_text_without_blank_lines_is_cut_at_a_line_end_after_the_maximum(monkeypatch):
    monkeypatch.setattr(P, "MAX_PIECE_BYTES", 1000)
    data = b"".join(b"a line without a paragraph end\n" for _ in range(200))
    pieces = list(scan_pieces([data], "paragraph", 100))
    assert len(pieces) > 3 and all(1000 <= p.length < 1040 for p in pieces[:-1])
    assert b"".join(p.data for p in pieces) == data


def test_a_plain_file_is_read_by_byte_range_and_stdin_like_streams_carry_their_bytes(tmp_path):
    import io

    data = "\ufeff" + "Zoë wrote.\n\n" * 3000
    path = tmp_path / "t.txt"
    path.write_text(data, encoding="utf-8")
    inp = open_input(str(path))
    pieces = list(input_pieces(inp, "paragraph", 1000))
    assert inp.path == str(path) and all(p.data is None for p in pieces)
    assert "".join(piece_text(p, inp.path, inp.name) for p in pieces) == data[1:]  # the byte-order mark dropped
    stream = open_input(io.BytesIO(data.encode("utf-8")))
    assert stream.path is None
    assert _cuts(input_pieces(stream, "paragraph", 1000)) == _cuts(pieces)


def test_bad_arguments_are_errors():
    with pytest.raises(ValueError, match="unit"):
        list(scan_pieces([b"x"], "sentence"))
    with pytest.raises(ValueError, match="target"):
        list(scan_pieces([b"x"], "line", 0))


def test_pieces_are_larger_on_a_gpu_and_conllu_pieces_hold_about_as_many_words_as_text_pieces():
    from g2gt.ud.scale.piecewise import GPU_PIECE_SCALE, piece_bytes

    from g2gt.data import EWT_SAMPLE_DEV
    from g2gt.ud.io.conllu import read_conllu

    assert piece_bytes("raw", "cuda:0") == GPU_PIECE_SCALE * piece_bytes("raw", "cpu")
    assert piece_bytes("lines") == piece_bytes("raw")
    sents = read_conllu(EWT_SAMPLE_DEV)
    words = sum(len(s.forms) for s in sents)
    conllu_bytes = EWT_SAMPLE_DEV.stat().st_size / words  # per word, comments included
    text_bytes = sum(len(s.metadata["text"].encode()) + 1 for s in sents) / words
    ratio = (piece_bytes("conllu") / conllu_bytes) / (piece_bytes("raw") / text_bytes)  # words a piece, CoNLL-U / text
    assert 0.5 <= ratio <= 2, ratio


def test_the_last_pieces_of_an_input_of_known_size_are_smaller():
    data = _text(random.Random(2), 2000)
    plain = list(scan_pieces([data], "paragraph", 4000))
    tapered = list(scan_pieces([data], "paragraph", 4000, total=len(data)))
    assert b"".join(p.data for p in tapered) == data and len(tapered) > len(plain)
    assert max(p.length for p in tapered[-3:]) < 2000 and all(p.length >= 500 for p in tapered[:-1])
    assert _cuts(tapered[:len(plain) // 2]) == _cuts(plain[:len(plain) // 2])  # far from the end: the same cuts
