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
    back = WordIds.from_json(v.words)
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


def _oracle_index(pairs, cells, keys=None, vocabs=None):
    """The index by the plainest means: per-token dict ids, the greedy cut loop in Python,
    np.unique over every real cell's key, np.searchsorted per cell. Returns (source words,
    target words, keys, [(rows, src, tgt, src_len, tgt_len, pair_ids)] numpy)."""
    from aligners.data.bitext import MAX_TOKENS

    dicts = vocabs or ({w: i for i, w in enumerate(WordIds.RESERVED)},
                       {w: i for i, w in enumerate(WordIds.RESERVED)})
    frozen = vocabs is not None
    enc = [[np.array([d.get(w, UNK) if frozen else d.setdefault(w, len(d)) for w in side],
                     dtype=np.int64) for d, side in zip(dicts, p, strict=True)] for p in pairs]
    sl = np.array([len(s) for s, _ in enc])
    tl = np.array([len(t) for _, t in enc])
    keep = np.flatnonzero((sl > 0) & (tl > 0) & (sl <= MAX_TOKENS) & (tl <= MAX_TOKENS))
    order = keep[np.lexsort((tl[keep], sl[keep], np.maximum(sl[keep], tl[keep])))]
    max_batch = max(4096, 4096 * cells // DEFAULT_CELLS)
    plans, start = [], 0
    while start < len(order):
        end, mi, mj = start + 1, sl[order[start]], tl[order[start]]
        while end < len(order) and end - start < max_batch:
            ni, nj = max(mi, sl[order[end]]), max(mj, tl[order[end]])
            n = end - start + 1
            if n * ni * nj > cells or n * max(ni, nj) ** 2 > 4 * cells:
                break
            mi, mj, end = ni, nj, end + 1
        plans.append(order[start:end])
        start = end
    vt = len(dicts[1])
    if keys is None:
        cell_keys = [(s[:, None] * vt + t[None, :]).ravel() for s, t in (enc[r] for r in order)]
        keys = np.unique(np.concatenate(cell_keys)) if cell_keys else np.zeros(0, np.int64)
    P = len(keys)
    batches = []
    for rows in plans:
        I, J = sl[rows].max(), tl[rows].max()
        s = np.zeros((len(rows), I), np.int64)
        t = np.zeros((len(rows), J), np.int64)
        ids = np.full((len(rows), I, J), P, np.int32)
        for b, r in enumerate(rows):
            s[b, :sl[r]], t[b, :tl[r]] = enc[r]
            k = enc[r][0][:, None] * vt + enc[r][1][None, :]
            pos = np.minimum(np.searchsorted(keys, k), max(P - 1, 0))
            hit = keys[pos] == k if P else np.zeros(k.shape, bool)
            ids[b, :sl[r], :tl[r]] = np.where(hit, pos, P)
        batches.append((rows, s, t, sl[rows], tl[rows], ids))
    return list(dicts[0]), list(dicts[1]), keys, batches, dicts


def _assert_index_equals(index, si, ti, want):
    words_s, words_t, keys, batches, _ = want
    assert si.words == words_s and ti.words == words_t
    assert index.keys.dtype == torch.int64 and np.array_equal(index.keys.numpy(), keys)
    assert len(index) == len(batches)
    names = ("rows", "src", "tgt", "src_lengths", "tgt_lengths", "pair_ids")
    for got, exp in zip(index, batches, strict=True):
        for name, e in zip(names, exp, strict=True):
            g = getattr(got, name).numpy()
            assert g.dtype == e.dtype and g.shape == e.shape and np.array_equal(g, e), name


def _check_against_oracle(pairs, cells, tmp_path, frozen_pairs, monkeypatch):
    """The numba kernels (1 or 2 threads, heap or mapped store, disk cache) and the torch
    path that a GPU takes (`device`, run here on the CPU) against the oracle."""
    from aligners.data import _pairtable, bitext

    want = _oracle_index(pairs, cells)
    for threads, cache, mapped, device in ((1, None, False, None), (2, None, True, None),
                                           (2, str(tmp_path), False, None),
                                           (1, None, False, "cpu")):
        with monkeypatch.context() as m:
            if mapped:  # the store mapped with MAP_POPULATE whatever its size
                m.setattr(bitext, "_POPULATE_MIN", 0)
            m.setattr(_pairtable, "_MERGE_KEYS", 500)  # the device path merges often
            index, si, ti = _index(*zip(*pairs, strict=True), cells=cells, threads=threads,
                                   cache_dir=cache, device=device)
        _assert_index_equals(index, si, ti, want)
    # a frozen vocabulary and a fixed pair table (every other key): unseen -> UNK / P
    si.frozen = ti.frozen = True
    keys = index.keys[::2].clone()
    want_f = _oracle_index(frozen_pairs, cells, keys=keys.numpy(), vocabs=want[4])
    for device in (None, "cpu"):
        fixed = build_index(iter(frozen_pairs), si, ti, keys=keys, cells=cells, device=device)
        _assert_index_equals(fixed, si, ti, want_f[:2] + want_f[2:])
        assert any((b.pair_ids[b.mask] < fixed.n_pairs).any() for b in fixed)
    return index


def test_index_equals_the_plain_oracle_on_a_random_corpus(tmp_path, monkeypatch):
    """Repeated words within and across sentences, empty and over-long sides, many batches
    (the corpus fits no single budget): vocabularies, keys, batch order and every tensor
    are equal to the oracle's, with 1 or 2 threads, in memory (heap or mapped store) or
    with a disk cache."""
    from aligners.data.bitext import MAX_TOKENS

    rng = np.random.default_rng(7)
    pairs = []
    for _ in range(300):
        ls, lt = rng.integers(0, 25, 2)
        pairs.append(([f"s{w}" for w in rng.zipf(1.3, ls) % 400],
                      [f"t{w}" for w in rng.zipf(1.3, lt) % 500]))
    pairs[4] = (["s1"] * (MAX_TOKENS + 1), ["t1"])
    frozen = [(["s1", "new", "s2"], ["t1", "t9", "t2", "unseen"]), *pairs[:40]]
    index = _check_against_oracle(pairs, 3_000, tmp_path, frozen, monkeypatch)
    assert len(index) > 10 and index.too_long.tolist() == [4]


def test_index_equals_the_plain_oracle_on_hansards(tmp_path, monkeypatch):
    """The first 2,000 Hansards training pairs (lowercased) and the test set under the
    frozen vocabulary: the real word distribution (long rows for frequent words)."""
    import itertools

    from tests.conftest import shared_path

    root = shared_path("data", "hansards-enfr-naacl2003")
    pairs = list(itertools.islice(read_parallel(root / "train" / "hansards.train200k.e.gz",
                                                root / "train" / "hansards.train200k.f.gz",
                                                lowercase=True), 2000))
    test = list(read_parallel(root / "test" / "test.e", root / "test" / "test.f",
                              lowercase=True))
    _check_against_oracle(pairs, 200_000, tmp_path, test, monkeypatch)


def test_corpora_with_nothing_to_batch(tmp_path):
    """No pairs, or only pairs with an empty side: no batches, no pairs, N kept."""
    for pairs in ([], [([], ["a"])], [(["a"], []), ([], [])]):
        for cache in (None, str(tmp_path)):
            index = build_index(pairs, WordIds(), WordIds(), cache_dir=cache)
            assert (len(index), index.n_pairs, index.n_sentences) == (0, 0, len(pairs))
            assert list(index) == [] and index.keys.dtype == torch.int64
    assert plan_batches(np.zeros(0, int), np.zeros(0, int), cells=10, max_batch=5) == []
