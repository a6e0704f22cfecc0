"""The co-occurrence pair table of the Bayesian aligner's encoded bitext (`corpus.py`):
the sorted table of distinct keys s * n_tgt_words + t and every cell's position in it come
from the bitext index's kernels (`aligners.data._pairtable`); the cells are then numbered by
first occurrence (`_first_seen`), renumbered by decreasing number of cells
(`_frequency_ids`: the shared pairs first), and the single-cell pairs can be folded into one
id (`_fold`). numba kernels; the ids are split in 16-bit low / 8-or-16-bit high halves.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligners.data._pairtable import distinct_keys, fill_pair_ids, in_threads, spans
from aligners.errors import AlignersInputError

SINGLE = (1 << 24) - 1  # the id of every single-cell pair's cell once folded (fold_singles)
_CHUNK_CELLS = 1 << 24  # cells whose sorted-table ids are held at once (4 bytes each)

_COUNT_CAP = 0xFFFF  # pairs with more cells than this share the first rank class


@njit(nogil=True, cache=True)
def _first_seen(ids, rank, n, cnt, lo, hi):
    """Number consecutive cells' sorted-table ids `ids` (cells,) int32 in order of first
    occurrence: rank (P,) int32 (-1: not seen yet) gets n, n + 1, ... for each new id; lo /
    hi get every cell's number and cnt (P,) uint16 counts the cells of each number
    (saturating at _COUNT_CAP). Returns the next number. Cost O(cells)."""
    for c in range(len(ids)):
        p = ids[c]
        if rank[p] < 0:
            rank[p] = n
            n += 1
        q = rank[p]
        lo[c] = q & 0xFFFF
        hi[c] = q >> 16
        if cnt[q] < _COUNT_CAP:
            cnt[q] += 1
    return n


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


def build_pairs(src, src_off, tgt, tgt_off, cell_off, n_src_words: int, n_tgt_words: int,
                threads: int = 2):
    """Every cell's pair id, numbered by decreasing number of cells, ties in order of first
    occurrence (`_frequency_ids`); returns (lo (cells,) uint16, hi (cells,) uint8, or uint16
    from 2^24 pairs on, keys (P,) int64 by id, n_shared).

    The sorted distinct keys and each cell's position among them come from the bitext
    index's kernels (`distinct_keys`, `fill_pair_ids`: source word by source word, no hash
    table; `threads` word ranges at once), _CHUNK_CELLS cells at a time; `_first_seen` then
    numbers them in corpus order and counts their cells. The sampler reads the (P,) count
    array at every cell's id: with the most frequent pairs first, the reads concentrate on a
    small, cache-resident prefix of that array (ids are names only: counts, conditionals
    and links do not change). Cost O(cells + P log P); memory 3 bytes per cell, 26 per
    source token, about 26 per pair and 4 * _CHUNK_CELLS.
    """
    rows = np.arange(len(src_off) - 1, dtype=np.int64)
    sorted_keys = distinct_keys(src, src_off, tgt, tgt_off, rows, n_src_words, n_tgt_words,
                                threads=threads)
    n = len(sorted_keys)
    if n > np.iinfo(np.int32).max:
        raise AlignersInputError(f"{n} distinct word pairs: more than the 2^31 - 1 supported")
    lo = np.empty(int(cell_off[-1]), np.uint16)
    hi = np.empty(int(cell_off[-1]), np.uint8 if n <= 1 << 24 else np.uint16)
    rank, cnt, m = np.full(n, -1, np.int32), np.zeros(n, np.uint16), 0
    width = np.diff(tgt_off)
    for k0, k1 in spans(cell_off, _CHUNK_CELLS):
        c0, c1 = int(cell_off[k0]), int(cell_off[k1])
        ids = np.empty(c1 - c0, np.int32)
        fill_pair_ids(sorted_keys, src, src_off, tgt, tgt_off, rows[k0:k1],
                      cell_off[k0:k1] - c0, width[k0:k1], n_src_words, n_tgt_words, ids,
                      threads=threads)
        m = _first_seen(ids, rank, m, cnt, lo[c0:c1], hi[c0:c1])
    del ids
    new_id, n_shared = _frequency_ids(cnt)
    del cnt
    half = len(lo) // 2
    in_threads(lambda c0, c1: _renumber(lo[c0:c1], hi[c0:c1], new_id),
               [(0, half), (half, len(lo))] if threads >= 2 else [(0, len(lo))], threads)
    keys = np.empty(n, np.int64)
    keys[new_id[rank]] = sorted_keys
    return lo, hi, keys, int(n_shared)


@njit(nogil=True, cache=True)
def _keys_from_ids(src, src_off, tgt, tgt_off, n_tgt_words, lo, hi, keys, n_shared=-1,
                   first_single=0):
    """keys[id] = s * n_tgt_words + t for every cell's pair id (the inverse of build_pairs).
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
