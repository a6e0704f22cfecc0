"""Vocab, the fast file encoder (== read_parallel, token for token) and bucketed batches."""

import gzip

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aligners.data.corpus import ParallelCorpus, bucket_batches, encode_side
from aligners.data.parallel import read_parallel
from aligners.data.vocab import PAD_ID, UNK_ID, Vocab
from aligners.errors import AlignersInputError

MESSY_SRC = b"\xef\xbb\xbfThe  cat\tsat\r\n\r\n\xe3\x80\x80 A\xe3\x80\x80b \xc3\x89t\xc3\xa9\nlast"
MESSY_TGT = b"le chat\r\nvide\n\nx\xe2\x80\xa8y\n"


def test_vocab_frequency_cut_and_json(tmp_path):
    v = Vocab.build([["b", "a", "b"], ["c", "a", "b"]], min_count=2)
    assert v.itos == ["<pad>", "<unk>", "b", "a"] and v.counts == [0, 0, 3, 2]
    assert v.encode(["a", "c", "zz"]) == [3, UNK_ID, UNK_ID] and v.decode([2, 3]) == ["b", "a"]
    assert Vocab.build([["x", "y", "y"]], max_size=1).itos[2:] == ["y"]
    assert v.encode(["<pad>", "<unk>"]) == [UNK_ID, UNK_ID]  # text never encodes as PAD
    with pytest.raises(AlignersInputError, match="appears twice"):
        Vocab(["a", "b", "a"])
    p = tmp_path / "v.json"
    v.save(p)
    assert Vocab.load(p) == v
    (tmp_path / "bad.json").write_text('{"tokens": []}')
    with pytest.raises(AlignersInputError, match="aligners.vocab/1"):
        Vocab.load(tmp_path / "bad.json")
    with pytest.raises(AlignersInputError, match="outside the vocabulary"):
        v.decode([7])


def _pairs_via_corpus(c):
    return [c.pair_tokens(n) for n in range(len(c))]


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("ascii_split", [False, True])
def test_fast_build_equals_read_parallel(tmp_path, lowercase, ascii_split):
    s, t = tmp_path / "s.txt.gz", tmp_path / "t.txt"
    with gzip.open(s, "wb") as f:
        f.write(MESSY_SRC + b"\n")
    t.write_bytes(MESSY_TGT)
    opts = {"lowercase": lowercase, "ascii_split": ascii_split}
    want = list(read_parallel(s, t, **opts))
    fast = ParallelCorpus.build(s, t, **opts)
    slow = ParallelCorpus.from_pairs(read_parallel(s, t, **opts))
    assert _pairs_via_corpus(fast) == want
    for name in ("src_ids", "src_offsets", "tgt_ids", "tgt_offsets"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name))
    assert fast.src_vocab == slow.src_vocab and fast.tgt_vocab == slow.tgt_vocab
    assert list(fast.src_lengths) == [len(x) for x, _ in want]  # empty sentences kept
    # one-file form
    one = tmp_path / "st.txt"
    one.write_text("a b ||| x\n|||\n c|||d e \n")
    assert _pairs_via_corpus(ParallelCorpus.build(one, **opts)) == list(read_parallel(one, **opts))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(" ab\tÉ\u3000|\r", max_size=12),
                          st.text(" xy\u00a0z", max_size=8)), max_size=6))
def test_fast_build_property(tmp_path_factory, rows):
    rows = [(a.replace("\r", ""), b) for a, b in rows]
    d = tmp_path_factory.mktemp("p")
    (d / "s").write_text("".join(a + "\n" for a, _ in rows), encoding="utf-8")
    (d / "t").write_text("".join(b + "\n" for _, b in rows), encoding="utf-8")
    for ascii_split in (False, True):
        want = list(read_parallel(d / "s", d / "t", ascii_split=ascii_split))
        got = ParallelCorpus.build(d / "s", d / "t", ascii_split=ascii_split)
        assert _pairs_via_corpus(got) == want


def test_build_errors(tmp_path):
    s, t = tmp_path / "src.txt", tmp_path / "tgt.txt"
    s.write_text("a\nb\nc\n")
    t.write_text("x\ny\n")
    with pytest.raises(AlignersInputError, match=r"src.txt:3: different line counts: .*tgt.txt"):
        ParallelCorpus.build(s, t)
    t.write_bytes(b"x\ny\xfe\nz\n")
    with pytest.raises(AlignersInputError, match=r"tgt.txt:2: invalid UTF-8 byte 0xfe at byte "
                       r"offset 3 \(byte column 2\)"):
        ParallelCorpus.build(s, t)
    one = tmp_path / "one.txt"
    one.write_text("a ||| b\na b\n")
    with pytest.raises(AlignersInputError, match=r"one.txt:2: expected 'source \|\|\| target' "
                       r"\(no '\|\|\|' separator\)"):
        ParallelCorpus.build(one)
    one.write_text("a ||| b ||| c\n")
    with pytest.raises(AlignersInputError, match="one.txt:1: .*several"):
        ParallelCorpus.build(one)
    t.write_text("x\ny\x00\nz\n")
    with pytest.raises(AlignersInputError, match=r"tgt.txt:2: control character"):
        ParallelCorpus.build(s, t)


def test_save_load_mmap_and_given_vocab(tmp_path):
    pairs = [(["a", "b"], ["x"]), ([], ["y", "x"]), (["b"], [])]
    c = ParallelCorpus.from_pairs(pairs, meta={"lowercase": False})
    c.save(tmp_path / "c")
    back = ParallelCorpus.load(tmp_path / "c")
    assert isinstance(back.src_ids, np.memmap) and back.meta["lowercase"] is False
    assert _pairs_via_corpus(back) == pairs and len(back) == 3
    ids, offs, voc = encode_side([["b", "q"]], vocab=c.src_vocab)
    assert list(ids) == [c.src_vocab.id("b"), UNK_ID] and list(offs) == [0, 2]
    with pytest.raises(AlignersInputError, match="missing"):
        ParallelCorpus.load(tmp_path)


def test_collate_padding_and_masks():
    pairs = [(["a", "b", "c"], ["x"]), ([], ["y", "x"]), (["b"], [])]
    c = ParallelCorpus.from_pairs(pairs)
    b = c.collate([0, 1, 2])
    assert b.src.shape == (3, 3) and b.tgt.shape == (3, 2) and b.src.dtype == torch.long
    assert b.src_mask.tolist() == [[True] * 3, [False] * 3, [True, False, False]]
    assert b.tgt_lengths.tolist() == [1, 2, 0]
    assert (b.src[~b.src_mask] == PAD_ID).all() and (b.src[b.src_mask] != PAD_ID).all()
    assert c.src_vocab.decode(b.src[0].tolist()) == ["a", "b", "c"]
    empty = ParallelCorpus.from_pairs([([], [])]).collate([0])
    assert empty.src.shape == (1, 0)


def test_bucket_batches_cover_once_and_respect_limits():
    rng = np.random.default_rng(0)
    slen, tlen = rng.integers(0, 30, 500), rng.integers(0, 30, 500)
    for kw in ({"batch_size": 16}, {"max_tokens": 200}, {"batch_size": 8, "max_tokens": 100}):
        for shuffle in (False, True):
            gen = torch.Generator().manual_seed(1)
            batches = bucket_batches(slen, tlen, shuffle=shuffle, generator=gen, **kw)
            flat = np.concatenate(batches)
            assert sorted(flat.tolist()) == list(range(500))
            for b in batches:
                assert len(b) <= kw.get("batch_size", 500)
                cells = len(b) * max(slen[b].max(), tlen[b].max())
                assert "max_tokens" not in kw or cells <= kw["max_tokens"] or len(b) == 1
    a = bucket_batches(slen, tlen, batch_size=16, shuffle=True,
                       generator=torch.Generator().manual_seed(3))
    b = bucket_batches(slen, tlen, batch_size=16, shuffle=True,
                       generator=torch.Generator().manual_seed(3))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))  # reproducible from the seed
    with pytest.raises(AlignersInputError, match="batch_size, max_tokens"):
        bucket_batches(slen, tlen)


def test_batches_through_dataloader():
    pairs = [(["w"] * (n % 5), ["v"] * (n % 3)) for n in range(40)]
    c = ParallelCorpus.from_pairs(pairs)
    sampler = bucket_batches(c.src_lengths, c.tgt_lengths, batch_size=7)
    loader = torch.utils.data.DataLoader(range(len(c)), batch_sampler=sampler,
                                         collate_fn=c.collate)
    seen = torch.cat([b.index for b in loader])
    assert sorted(seen.tolist()) == list(range(40))
    assert sum(int(b.src_mask.sum()) for b in c.batches(max_tokens=20)) == len(c.src_ids)


def test_build_with_extra_pairs_shares_vocab(tmp_path):
    s, t = tmp_path / "s", tmp_path / "t"
    s.write_text("A b\nc\n")
    t.write_text("x\n\n")
    extra = [(["B", "new"], ["x", "y"]), ([], [])]
    c = ParallelCorpus.build(s, t, lowercase=True, extra_pairs=iter(extra))
    assert len(c) == 4
    assert [c.pair_tokens(n) for n in range(4)] == [
        (["a", "b"], ["x"]), (["c"], []), (["b", "new"], ["x", "y"]), ([], [])
    ]
    assert c.src_vocab.counts[c.src_vocab.id("b")] == 2
