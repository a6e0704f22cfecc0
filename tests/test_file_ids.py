"""The compiled reader of two parallel files (`aligners.data.file_ids`) against the Python
reader (`read_parallel` + `build_index`'s stream encoder): the same ids, offsets and words,
or it declines (None) where only the Python reader reads the text right."""

import random

import numpy as np
import pytest
import torch

from aligners.data.bitext import _encode_stream, build_index
from aligners.data.file_ids import ParallelFiles, encode_bytes
from aligners.data.parallel import read_parallel
from aligners.data.vocab import WordIds


def _python_way(src, tgt):
    vocabs = (WordIds(), WordIds())
    return _encode_stream(read_parallel(src, tgt), vocabs), vocabs


def _files(tmp_path, src: bytes, tgt: bytes):
    paths = tmp_path / "a.src", tmp_path / "a.tgt"
    paths[0].write_bytes(src)
    paths[1].write_bytes(tgt)
    return str(paths[0]), str(paths[1])


def _same_as_python(tmp_path, src: bytes, tgt: bytes):
    s, t = _files(tmp_path, src, tgt)
    vocabs = (WordIds(), WordIds())
    fast = ParallelFiles([], s, t).encode(vocabs)
    assert fast is not None
    want, want_vocabs = _python_way(s, t)
    for (ids, off), (w_ids, w_off) in zip(fast, want, strict=True):
        assert ids.dtype == w_ids.dtype and np.array_equal(ids, w_ids)
        assert off.dtype == w_off.dtype and np.array_equal(off, w_off)
    assert [v.words for v in vocabs] == [v.words for v in want_vocabs]


def test_hand_worked_lines():
    """'a b a' / '' / ' b  c' -> ids 2 3 2 | - | 3 4 (0 NULL and 1 unknown are reserved)."""
    ids, off, words = encode_bytes(b"a b a\n\n b  c\n")
    assert ids.tolist() == [2, 3, 2, 3, 4]
    assert off.tolist() == [0, 3, 3, 5]
    assert words == ["a", "b", "c"]


@pytest.mark.parametrize("src,tgt", [
    (b"the house\nis small\n", b"la maison\nest petite\n"),
    (b"\xef\xbb\xbfBOM first\r\nCRLF ends\r\n", b"x\r\ny z\r\n"),  # BOM, CRLF
    (b"no final newline", b"pas de fin"),
    (b"\n\nempty\n\n", b"a\nb\nc\nd\n"),  # empty lines stay in place
    (b"tab\tvt\x0bff\x0cfs\x1cgs\x1drs\x1eus\x1f end\n", b"\t lead and trail \t\n"),
    ("na\u00efve caf\u00e9 \u4e2d\u6587 \u00e9\u00e9\n".encode(), "\u00fcber x\n".encode()),
    (b"x\rmid-line CR\n", b"y\n"),  # a CR inside a line is whitespace to str.split
])
def test_the_same_ids_as_the_python_reader(tmp_path, src, tgt):
    _same_as_python(tmp_path, src, tgt)


def test_many_words_grow_the_table(tmp_path):
    """Far more distinct words than the first table's 65,536 slots / 2 (it doubles), with
    repeats in a random order."""
    rng = random.Random(0)
    vocab = [f"w{k}" for k in range(60_000)]
    lines = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30))) for _ in range(5000)]
    text = ("\n".join(lines) + "\n").encode()
    _same_as_python(tmp_path, text, text)


@pytest.mark.parametrize("src", [
    "non\u00a0breaking space\n".encode(),  # str.split splits on U+00A0
    "ideographic\u3000space\n".encode(),
    "line\u2028separator\n".encode(),
    b"<s snum=1> wrapped </s>\n",  # the command strips the wrapper
    b"bad \xff byte\n",  # not UTF-8: the Python reader reports where
    b"",  # no line
])
def test_declines_what_only_the_python_reader_reads_right(tmp_path, src):
    s, t = _files(tmp_path, src, b"one line\n")
    vocabs = (WordIds(), WordIds())
    assert ParallelFiles([], s, t).encode(vocabs) is None
    assert [len(v) for v in vocabs] == [2, 2]  # untouched


def test_declines_other_line_counts_and_used_vocabularies(tmp_path):
    s, t = _files(tmp_path, b"a\nb\n", b"a\n")
    assert ParallelFiles([], s, t).encode((WordIds(), WordIds())) is None
    s, t = _files(tmp_path, b"a\n", b"b\n")
    used = WordIds(["x"])
    assert ParallelFiles([], s, t).encode((used, WordIds())) is None
    assert ParallelFiles([], s + ".gz", t).encode((WordIds(), WordIds())) is None


def test_build_index_gives_the_same_index(tmp_path):
    rng = random.Random(1)
    words = [f"v{k}" for k in range(300)]

    def text(n):
        return "".join(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) + "\n"
                       for _ in range(n)).encode()

    s, t = _files(tmp_path, text(400), text(400))
    pairs = list(read_parallel(s, t))
    plain_ids, fast_ids = (WordIds(), WordIds()), (WordIds(), WordIds())
    want = build_index(pairs, *plain_ids, cells=2000, threads=1)
    got = build_index(ParallelFiles(pairs, s, t), *fast_ids, cells=2000, threads=2)
    assert torch.equal(want.keys, got.keys) and len(want) == len(got)
    for k in range(len(want)):
        a, b = want.batch(k), got.batch(k)
        assert torch.equal(a.src, b.src) and torch.equal(a.tgt, b.tgt)
        assert torch.equal(a.pair_ids, b.pair_ids)
    assert [v.words for v in plain_ids] == [v.words for v in fast_ids]


def test_iterating_gives_the_python_readers_pairs(tmp_path):
    s, t = _files(tmp_path, b"a b\n", b"c\n")
    assert list(ParallelFiles(read_parallel(s, t), s, t)) == [(["a", "b"], ["c"])]
