"""The co-occurrence pair table of the Bayesian aligner's encoded bitext (`corpus.py`):
every cell's word pair (s, t) numbered by an open-addressing hash of the int64 key
s * n_tgt_words + t, built on two threads over halves of the cells and merged, then
renumbered by decreasing number of cells (`_frequency_ids`: the shared pairs first), the
keys rebuilt from the ids (`_keys_from_ids`), and the single-cell pairs folded into one id
(`_fold`). numba kernels; the ids are split in 16-bit low / 8-or-16-bit high halves.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from aligners.errors import AlignersInputError

SINGLE = (1 << 24) - 1  # the id of every single-cell pair's cell once folded (fold_singles)

_MULT = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing of the int64 pair keys


@njit(inline="always", cache=True)
def _slot_of(key, bits):
    return np.int64((np.uint64(key) * _MULT) >> np.uint64(64 - bits))


@njit(inline="always", cache=True)
def _probe(table, keys, key, bits):
    """(slot h of key in the open-addressing table, its id or -1 when absent): linear probing
    from _slot_of(key, bits) to the key or the first free slot."""
    mask = (np.int64(1) << bits) - 1
    h = _slot_of(key, bits)
    while True:
        slot = table[h]
        if slot < 0 or keys[slot] == key:
            return h, slot
        h = (h + 1) & mask


@njit(nogil=True, cache=True)
def _pair_ids(src, src_off, tgt, tgt_off, n_tgt_words, lo, hi):
    """Fill the pair ids of every cell, numbered in order of first occurrence (corpus order),
    as lo (cells,) uint16 low bits and hi (cells,) uint8/uint16 high bits; returns (buffer,
    P, table, bits): keys = buffer[:P] int64 = s * n_tgt_words + t by id (P = -1 when an id
    does not fit) and the hash table (2^bits,) int32 of ids.

    One pass with an open-addressing hash table (key -> id, linear probing; the table
    doubles at load 0.7, the key buffer grows by 1.25x). Cost O(cells) expected time; extra
    memory 4 bytes per table slot (1.4-2.9 per pair) + 8-10 bytes per pair. First-occurrence
    ids keep frequent pairs (seen early) together and a sentence's rare pairs near each
    other: better cache locality in the sampler.
    """
    limit = np.int64(1) << (16 + 8 * hi.itemsize)
    bits = 16
    table = np.full(1 << bits, -1, np.int32)
    keys = np.empty(1 << 15, np.int64)
    n = 0
    c = 0
    for k in range(len(src_off) - 1):
        for i in range(src_off[k], src_off[k + 1]):
            s = np.int64(src[i]) * n_tgt_words
            for j in range(tgt_off[k], tgt_off[k + 1]):
                key = s + tgt[j]
                h, slot = _probe(table, keys, key, bits)
                if slot < 0:
                    if n == limit:
                        return keys, np.int64(-1), table, bits
                    if n == len(keys):
                        bigger = np.empty(len(keys) + len(keys) // 4, np.int64)
                        bigger[:n] = keys[:n]
                        keys = bigger
                    if 10 * (n + 1) > 7 * (1 << bits):  # load 0.7: double and rehash
                        bits += 1  # (every key is new to the table: _probe finds a free slot)
                        table = np.full(1 << bits, -1, np.int32)
                        for q in range(n):
                            table[_probe(table, keys, keys[q], bits)[0]] = q
                        h = _probe(table, keys, key, bits)[0]
                    table[h] = n
                    keys[n] = key
                    slot = n
                    n += 1
                lo[c] = slot & 0xFFFF
                hi[c] = slot >> 16
                c += 1
    return keys, np.int64(n), table, bits


@njit(nogil=True, cache=True)
def _merge_ids(keys_a, n_a, table_a, bits_a, keys_b, n_b):
    """Global ids of a later part's local ids (first occurrence over both parts): a key of
    part b found in part a's hash table keeps part a's id, the others are numbered n_a, n_a
    + 1, ... in part b's order. Returns ((n_b,) int32 map, P). Cost O(n_b) expected."""
    out = np.empty(n_b, np.int32)
    m = n_a
    for q in range(n_b):
        _, slot = _probe(table_a, keys_a, keys_b[q], bits_a)
        if slot >= 0:
            out[q] = slot
        else:
            out[q] = m
            m += 1
    return out, m


_COUNT_CAP = 0xFFFF  # pairs with more cells than this share the first rank class


@njit(nogil=True, cache=True)
def _count_cells(lo, hi, cnt):
    """cnt[p] += number of cells with pair id p, saturating at _COUNT_CAP. Cost O(cells)."""
    for c in range(len(lo)):
        p = np.int64(lo[c]) | (np.int64(hi[c]) << 16)
        if cnt[p] < _COUNT_CAP:
            cnt[p] += 1


@njit(nogil=True, cache=True)
def _add_counts_sat(cnt, other):
    """cnt += other, saturating at _COUNT_CAP (uint16 arrays). Cost O(P)."""
    for p in range(len(cnt)):
        cnt[p] = min(np.int64(cnt[p]) + np.int64(other[p]), _COUNT_CAP)


@njit(nogil=True, cache=True)
def _frequency_ids(cnt):
    """((P,) int32 new id of every pair id, n_shared) from cnt (P,) uint16 cells per id
    (saturated at _COUNT_CAP): ids by decreasing count (pairs at the cap rank first), ties
    kept in the current id order; the n_shared pairs seen in two cells or more come first,
    the pairs of a single cell after them.

    A stable counting sort over a (_COUNT_CAP + 2,) histogram. Cost O(P) time, 4 bytes per
    pair (the new ids).
    """
    n_pairs = len(cnt)
    start = np.zeros(_COUNT_CAP + 2, np.int64)
    for p in range(n_pairs):
        start[_COUNT_CAP - np.int64(cnt[p]) + 1] += 1
    for v in range(1, _COUNT_CAP + 2):
        start[v] += start[v - 1]
    new_id = np.empty(n_pairs, np.int32)
    n_shared = 0
    for p in range(n_pairs):
        v = _COUNT_CAP - np.int64(cnt[p])
        new_id[p] = start[v]
        start[v] += 1
        if cnt[p] >= 2:
            n_shared += 1
    return new_id, n_shared


@njit(nogil=True, cache=True)
def _renumber(lo, hi, new_id):
    """Replace every cell's pair id p by new_id[p] (in place). Cost O(cells)."""
    for c in range(len(lo)):
        q = new_id[np.int64(lo[c]) | (np.int64(hi[c]) << 16)]
        lo[c] = q & 0xFFFF
        hi[c] = q >> 16


def _halves(cell_off: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Sentence ranges [k0, k1) splitting the cells into `parts` about equal parts."""
    n = len(cell_off) - 1
    cuts = [0] + [int(np.searchsorted(cell_off, cell_off[-1] * q // parts)) for q in
                  range(1, parts)] + [n]
    cuts = sorted(set(min(max(c, 0), n) for c in cuts))
    return [(k0, k1) for k0, k1 in zip(cuts, cuts[1:], strict=False) if k1 > k0]


def _build_pairs(src, src_off, tgt, tgt_off, cell_off, n_tgt_words, lo, hi, threads=2):
    """The pair ids of every cell into lo / hi, renumbered by decreasing frequency
    (`_frequency_ids`); returns ((P,) keys by id, n_shared), or None when an id does not
    fit hi.

    With 2 threads the hashing pass runs on the two halves of the corpus at once and the
    second half's ids are merged into the first's (`_merge_ids`: the same first-occurrence
    numbering as one pass); counting, renumbering and the key rebuild run on both halves
    too. The sampler reads the (P,) count array at every cell's id: with the most frequent
    pairs first, the reads concentrate on a small, cache-resident prefix of that array (ids
    are names only: counts, conditionals and links do not change). The key buffers are
    freed before renumbering and the keys are rebuilt from the new ids.
    """
    parts = _halves(cell_off, 2 if threads >= 2 else 1)
    ids = [(lo[cell_off[k0]:cell_off[k1]], hi[cell_off[k0]:cell_off[k1]]) for k0, k1 in parts]
    offs = [(src_off[k0:k1 + 1], tgt_off[k0:k1 + 1]) for k0, k1 in parts]
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        def each(fn):  # fn(part index) on every part at once
            return list(pool.map(fn, range(len(parts))))

        hashed = each(lambda q: _pair_ids(src, offs[q][0], tgt, offs[q][1], n_tgt_words,
                                          *ids[q]))
        if any(h[1] < 0 for h in hashed):
            return None
        n = int(hashed[0][1])
        if len(parts) == 2:
            (keys_a, n_a, table_a, bits_a), (keys_b, n_b) = hashed[0], hashed[1][:2]
            hashed = None
            mapped, n = _merge_ids(keys_a, n_a, table_a, bits_a, keys_b, n_b)
            del keys_a, table_a, keys_b
            if n > np.int64(1) << (16 + 8 * hi.itemsize):
                return None
            _renumber(*ids[1], mapped)
            del mapped
        hashed = None
        if n > np.iinfo(np.int32).max:
            raise AlignersInputError(f"{n} distinct word pairs: more than the 2^31 - 1 "
                                     "supported")
        counts = [np.zeros(n, np.uint16) for _ in parts]
        each(lambda q: _count_cells(*ids[q], counts[q]))
        for other in counts[1:]:
            _add_counts_sat(counts[0], other)
        new_id, n_shared = _frequency_ids(counts[0])
        counts = None
        each(lambda q: _renumber(*ids[q], new_id))
        new_id = None
        keys = np.empty(n, np.int64)  # (two parts may write the same id: the same value)
        each(lambda q: _keys_from_ids(src, offs[q][0], tgt, offs[q][1], n_tgt_words, *ids[q],
                                      keys))
    return keys, int(n_shared)


@njit(nogil=True, cache=True)
def _keys_from_ids(src, src_off, tgt, tgt_off, n_tgt_words, lo, hi, keys, n_shared=-1,
                   first_single=0):
    """keys[id] = s * n_tgt_words + t for every cell's pair id (the inverse of _pair_ids).
    n_shared >= 0: the ids are folded (`EncodedBitext.fold_singles`) and the first SINGLE
    cell here is single-cell pair n_shared + first_single, the next one the next id."""
    c = 0
    nxt = n_shared + first_single
    for k in range(len(src_off) - 1):
        for i in range(src_off[k], src_off[k + 1]):
            s = np.int64(src[i]) * n_tgt_words
            for j in range(tgt_off[k], tgt_off[k + 1]):
                p = np.int64(lo[c]) | (np.int64(hi[c]) << 16)
                if n_shared >= 0 and p == SINGLE:
                    p = nxt
                    nxt += 1
                keys[p] = s + tgt[j]
                c += 1


@njit(nogil=True, cache=True)
def _fold(lo, hi, out, n_shared, cell_off, single_off):
    """out[c] = the high byte of cell c's id, lo[c] / out[c] = SINGLE for a single-cell
    pair (id >= n_shared); single_off[k + 1] = folded cells before sentence k + 1. out may
    be hi itself, or the first len(hi) bytes of a 2-byte hi's buffer (byte c is written
    after value c, and only values before c, already read, share its bytes)."""
    for k in range(len(cell_off) - 1):
        m = 0
        for c in range(cell_off[k], cell_off[k + 1]):
            h = np.int64(hi[c])
            if (np.int64(lo[c]) | (h << 16)) >= n_shared:
                lo[c] = 0xFFFF
                out[c] = 0xFF
                m += 1
            else:
                out[c] = h
        single_off[k + 1] = single_off[k] + m
