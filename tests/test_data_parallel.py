"""Parallel-text and Pharaoh readers/writers: round trips and every bad-input message."""

import gzip
import io
import sys

import pytest

from aligners.data.parallel import read_lines, read_parallel, write_lines
from aligners.data.pharaoh import (
    OutOfRangeLinksWarning,
    parse_pharaoh_line,
    read_pharaoh,
    write_pharaoh,
)
from aligners.data.types import Alignment
from aligners.errors import AlignersInputError

PAIRS = [(["a", "b"], ["x"]), ([], ["y", "z"]), (["c"], []), ([], []), (["é", "ß"], ["ü"])]


def write_parallel(pairs, src, tgt=None) -> int:
    """`pairs` as one `src ||| tgt` file (`tgt=None`) or as two files; returns the count."""
    if tgt is None:
        return write_lines(src, (f"{' '.join(s)} ||| {' '.join(t)}" for s, t in pairs))
    write_lines(tgt, (" ".join(t) for _, t in pairs))
    return write_lines(src, (" ".join(s) for s, _ in pairs))


def test_two_file_round_trip(tmp_path):
    s, t = tmp_path / "s.txt", tmp_path / "t.txt"
    assert write_parallel(PAIRS, s, t) == len(PAIRS)
    assert list(read_parallel(s, t)) == PAIRS


def test_one_file_round_trip_and_gz(tmp_path):
    p = tmp_path / "st.txt.gz"
    write_parallel(PAIRS, p)
    with gzip.open(p, "rt", encoding="utf-8") as f:
        assert f.readline() == "a b ||| x\n"
    assert list(read_parallel(p)) == PAIRS


def test_bom_crlf_empty_lines_kept(tmp_path):
    s, t = tmp_path / "s", tmp_path / "t"
    s.write_bytes(b"\xef\xbb\xbfHello World\r\n\r\nlast")
    t.write_bytes(b"a\r\nb\r\n\r\n")
    assert list(read_parallel(s, t)) == [(["Hello", "World"], ["a"]), ([], ["b"]), (["last"], [])]
    assert list(read_parallel(s, t, lowercase=True))[0] == (["hello", "world"], ["a"])


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a b ||| c\n ||| \n")))
    assert list(read_parallel("-")) == [(["a", "b"], ["c"]), ([], [])]


def test_non_utf8_names_file_line_and_byte_offset(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"ok\r\nab\xffc\n")
    with pytest.raises(AlignersInputError) as err:
        list(read_lines(p))
    msg = str(err.value)
    assert f"{p}:2:" in msg and "byte offset 6" in msg and "0xff" in msg
    assert err.value.line == 2


def test_non_utf8_after_bom_offset(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"\xef\xbb\xbf\xc3")
    with pytest.raises(AlignersInputError, match="byte offset 3"):
        list(read_lines(p))


def test_line_count_mismatch_names_both_files(tmp_path):
    s, t = tmp_path / "src.txt", tmp_path / "tgt.txt"
    s.write_text("a\nb\nc\n")
    t.write_text("x\ny\n")
    with pytest.raises(AlignersInputError) as err:
        list(read_parallel(s, t))
    msg = str(err.value)
    assert str(s) in msg and str(t) in msg and ":3:" in msg
    with pytest.raises(AlignersInputError, match="tgt.txt has 2 lines"):
        list(read_parallel(s, t))
    t.write_text("x\ny\nz\nw\n")
    with pytest.raises(AlignersInputError, match="src.txt has 3 .*tgt.txt continues at line 4"):
        list(read_parallel(s, t))


def test_missing_separator(tmp_path):
    p = tmp_path / "st.txt"
    p.write_text("a ||| b\nno separator\n")
    with pytest.raises(AlignersInputError, match=r"st.txt:2: expected 'source \|\|\| target'"):
        list(read_parallel(p))


def test_missing_file(tmp_path):
    with pytest.raises(AlignersInputError, match="file not found"):
        list(read_parallel(tmp_path / "nope"))


def test_parse_pharaoh_line_notations():
    al = parse_pharaoh_line("0-1 2?3 4p5 1-1:0.25 6?7:1")
    assert al.sure == {(0, 1), (1, 1)}
    assert al.possible == {(0, 1), (1, 1), (2, 3), (4, 5), (6, 7)}
    assert al.posteriors == {(1, 1): 0.25, (6, 7): 1.0}
    assert parse_pharaoh_line("") == Alignment()
    assert parse_pharaoh_line("0-0 0?0").sure == {(0, 0)}


@pytest.mark.parametrize(
    "bad", ["0-", "a-1", "1--2", "-1-2", "1-2:x", "1-2:1.5", "1-2:nan", "1-2:-0.1", "1_2"]
)
def test_malformed_token_message(bad):
    with pytest.raises(AlignersInputError) as err:
        parse_pharaoh_line(f"0-0 {bad}", path="f.al", line=7)
    assert str(err.value).startswith("f.al:7: malformed")
    assert repr(bad) in str(err.value) and "token 2" in str(err.value)


def test_pharaoh_round_trip(tmp_path):
    als = [
        Alignment(frozenset({(0, 1), (2, 2)}), frozenset({(1, 0)})),
        Alignment(),
        Alignment(frozenset({(3, 4)}), frozenset(), {(3, 4): 0.5}),
    ]
    p = tmp_path / "a.pharaoh"
    assert write_pharaoh(als, p, posteriors=True) == 3
    assert p.read_text() == "0-1 1?0 2-2\n\n3-4:0.5\n"
    back = read_pharaoh(p)
    assert back == als and back[2].posteriors == {(3, 4): 0.5}
    assert read_pharaoh(p, src_lengths=[3, 0, 4], tgt_lengths=[3, 0, 5]) == als


def test_out_of_range_error_and_lenient(tmp_path):
    p = tmp_path / "a.pharaoh"
    p.write_text("0-0 1-1\n0-0 2-0 0?5\n")
    with pytest.raises(AlignersInputError) as err:
        read_pharaoh(p, src_lengths=[2, 2], tgt_lengths=[2, 2])
    assert f"{p}:2:" in str(err.value) and "outside the sentence" in str(err.value)
    with pytest.warns(OutOfRangeLinksWarning, match="dropped 2 link") as rec:
        als = read_pharaoh(p, lenient=True, src_lengths=[2, 2], tgt_lengths=[2, 2])
    assert rec[0].message.dropped == 2
    assert als[1] == Alignment(frozenset({(0, 0)}))
    with pytest.raises(AlignersInputError, match="2 alignments but 3 source"):
        read_pharaoh(p, src_lengths=[2, 2, 2])


@pytest.mark.parametrize("block", [1, 3, 7, 64])
def test_line_blocks_any_block_size(tmp_path, block):
    from aligners.data.parallel import read_line_blocks

    data = b"\xef\xbb\xbfa b\r\n\r\nc\rd\n\xc3\xa9\nlast"
    p = tmp_path / "x.txt"
    p.write_bytes(data)
    lines = [x for blk in read_line_blocks(p, block_bytes=block) for x in blk]
    assert lines == ["a b", "", "c\rd", "é", "last"]
    p.write_bytes(b"ok\nfine\nab\x80\n")
    with pytest.raises(AlignersInputError, match=r"x.txt:3: .*byte offset 10 \(byte column 3\)"):
        list(read_line_blocks(p, block_bytes=block))
