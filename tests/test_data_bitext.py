"""The one bitext path: WordIds, length bucketing, the pair-id index and its disk cache.

Expected values are written out by hand (ids in order of first sight, pair keys
`src * Vt + tgt`), not produced by the code under test.
"""

import gzip
import os

import numpy as np
import pytest
import torch
from word_toy import toy_corpus

from aligners.data.bitext import (
    DEFAULT_CELLS,
    PairIndex,
    build_index,
    plan_batches,
)
from aligners.data.parallel import read_parallel
from aligners.data.vocab import NULL, UNK, WordIds
from aligners.errors import AlignersInputError


def _index(src, tgt, **kw):
    si, ti = WordIds(), WordIds()
    return build_index(zip(src, tgt, strict=True), si, ti, **kw), si, ti


def test_word_ids_first_sight_order_frozen_and_json():
    v = WordIds()
    assert (NULL, UNK) == (0, 1) and len(v) == 2
    assert v.encode(["b", "a", "b"]).tolist() == [2, 3, 2]
    assert v.encode(["c"]).dtype == np.int32 and v.words[2:] == ["b", "a", "c"]
    back = WordIds.from_json(v.to_json())
    assert back.frozen and back.words == v.words
    assert back.encode(["a", "zz", " <null>"]).tolist() == [3, UNK, 0]  # reserved names
    assert len(back) == 5  # frozen: unseen words are not added
    with pytest.raises(AlignersInputError, match="reserved"):
        WordIds.from_json(["a", "b"], path="vocab.json")
    with pytest.raises(AlignersInputError, match="twice"):
        WordIds.from_json([*WordIds.RESERVED, "a", "a"])


def test_plan_batches_cover_once_sorted_and_respect_the_cell_budget():
    rng = np.random.default_rng(0)
    slen, tlen = rng.integers(0, 30, 500), rng.integers(0, 30, 500)
    for cells, max_batch in ((2000, 4096), (500, 7), (1, 4096)):
        plans = plan_batches(slen, tlen, cells=cells, max_batch=max_batch)
        flat = np.concatenate(plans)
        nonempty = np.flatnonzero((slen > 0) & (tlen > 0))
        assert sorted(flat.tolist()) == nonempty.tolist()  # every non-empty pair once
        for b in plans:
            assert len(b) <= max_batch
            assert len(b) * slen[b].max() * tlen[b].max() <= cells or len(b) == 1
        longest = np.maximum(slen[flat], tlen[flat])
        assert (np.diff(longest) >= 0).all()  # sorted by the longer side
    # hand-checked: lengths (I, J) = (1,1) (2,2) (2,2) (3,1); budget 8 cells
    plans = plan_batches(np.array([3, 2, 1, 2]), np.array([1, 2, 1, 2]), cells=8, max_batch=9)
    got = [p.tolist() for p in plans]
    # order (1,1) (2,2) (2,2) (3,1); (1,1) + (2,2): 2*2*2 = 8 fits; + the other (2,2):
    # 3*2*2 = 12 > 8; then (2,2) + (3,1): 2*3*2 = 12 > 8 -> each alone
    assert got == [[2, 1], [3], [0]]


def test_pair_ids_hand_checked():
    src = [["a", "b"], ["b"], [], ["a"]]
    tgt = [["x"], ["y", "x"], ["x"], []]
    index, si, ti = _index(src, tgt, cells=DEFAULT_CELLS)
    # ids: a=2 b=3 / x=2 y=3; Vt = 4; cells (a,x)=10 (b,x)=14 (b,y)=15
    assert index.keys.tolist() == [10, 14, 15] and index.n_pairs == 3
    assert (index.n_src_words, index.n_tgt_words, index.n_sentences) == (4, 4, 4)
    batches = list(index)
    rows = sorted(r for b in batches for r in b.rows.tolist())
    assert rows == [0, 1]  # empty sides are never batched
    for b in batches:
        for k, r in enumerate(b.rows.tolist()):
            want = {0: [[0], [1]], 1: [[2, 1]]}[r]  # pair ids per (i, j)
            I, J = len(src[r]), len(tgt[r])
            assert b.pair_ids[k, :I, :J].tolist() == want
            assert bool((b.pair_ids[k][~b.mask[k]] == 3).all())  # padding -> slot P
    # a fixed pair table (a loaded model's): unseen pairs get id P
    si.frozen = ti.frozen = True
    new = build_index([(["a", "c"], ["y", "x"])], si, ti, keys=index.keys)
    b = new.batch(0)
    assert b.src.tolist() == [[2, UNK]] and b.pair_ids.tolist() == [[[3, 0], [3, 3]]]
    with pytest.raises(AlignersInputError, match="sentences"):
        PairIndex([np.array([2])], [], n_src_words=3, n_tgt_words=3)


def test_index_batches_cover_every_nonempty_pair_once_with_correct_keys():
    src, tgt = toy_corpus(40, seed=2)
    src[3], tgt[5] = [], []
    index, si, ti = _index(src, tgt, cells=100)
    rows = sorted(r for b in index for r in b.rows.tolist())
    assert rows == [r for r in range(40) if r not in (3, 5)]
    for b in index:
        assert b.src.shape[0] * b.src.shape[1] * b.tgt.shape[1] <= 100 or b.src.shape[0] == 1
        keys = index.keys[b.pair_ids.long().clamp(max=index.n_pairs - 1)]
        expect = b.src[:, :, None] * index.n_tgt_words + b.tgt[:, None, :]
        assert bool((keys[b.mask] == expect[b.mask]).all())
        assert bool((b.pair_ids[~b.mask] == index.n_pairs).all())


def test_disk_cache_gives_the_same_batches_and_is_removed_with_the_index(tmp_path):
    src, tgt = toy_corpus(60, seed=4)
    mem, _, _ = _index(src, tgt, cells=150)
    disk, _, _ = _index(src, tgt, cells=150, cache_dir=str(tmp_path))
    (sub,) = list(tmp_path.iterdir())
    assert len(list(sub.glob("*.npy"))) == len(disk) == len(mem) > 3
    for a, b in zip(mem, disk, strict=True):
        for name in ("rows", "src", "tgt", "src_lengths", "tgt_lengths", "pair_ids"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
    del disk
    import gc

    gc.collect()
    assert not os.path.exists(sub)


def test_build_index_reads_the_tokens_that_read_parallel_yields(tmp_path):
    s, t = tmp_path / "s.txt.gz", tmp_path / "t.txt"
    with gzip.open(s, "wb") as f:
        f.write(b"\xef\xbb\xbfThe  cat\tsat\r\n\r\nA b \xc3\x89t\xc3\xa9\n")
    t.write_bytes(b"le chat\r\nvide\nx y\n")
    index, si, ti = _index(*zip(*read_parallel(s, t, lowercase=True), strict=True))
    assert si.words[2:] == ["the", "cat", "sat", "a", "b", "\u00e9t\u00e9"]
    assert ti.words[2:] == ["le", "chat", "vide", "x", "y"]
    assert index.src_lengths.tolist() == [3, 0, 3] and index.tgt_lengths.tolist() == [2, 1, 2]


def test_batches_are_bounded_whatever_the_lengths():
    """No batch exceeds `cells` cells B*I*J nor 4*cells cells B*max(I,J)^2; pairs over
    MAX_TOKENS are left out (like empty ones)."""
    import numpy as np

    from aligners.data.bitext import MAX_TOKENS, plan_batches

    rng = np.random.default_rng(0)
    sl = rng.integers(1, 60, 500)
    tl = rng.integers(1, 60, 500)
    sl[:20] = 1
    tl[:20] = 400  # very unequal pairs: B*I*J small, B*J^2 large
    sl[20], tl[30] = MAX_TOKENS + 1, 100_000
    cells = 20_000
    plans = plan_batches(sl, tl, cells=cells, max_batch=4096)
    seen = np.concatenate(plans)
    assert 20 not in seen and 30 not in seen and len(seen) == 498
    for rows in plans:
        mi, mj = sl[rows].max(), tl[rows].max()
        if len(rows) > 1:
            assert len(rows) * mi * mj <= cells
            assert len(rows) * max(mi, mj) ** 2 <= 4 * cells
