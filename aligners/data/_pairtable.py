"""numba kernels of the bitext index (`aligners.data.bitext`): batch cuts, the sorted table of
distinct word-pair keys, and the per-cell pair ids.

A pair key is `s * n_tgt_words + t` (int64; 0 <= s < Vs, 0 <= t < Vt), so the keys of
source word s are one run [s * Vt, (s + 1) * Vt) of the sorted key table. Sentences live in
flat int32 token arrays with int64 offsets (`off[k]:off[k + 1]` = sentence k). Both passes
go source word by source word (a counting sort of the source tokens), so that their random
reads stay in a (Vt,) array that fits in cache: no hash table, no per-cell binary search.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cut_batches", "distinct_keys", "fill_pair_ids"]

@njit(cache=True)
def cut_batches(li, lj, max_batch, cells):
    """Greedy cuts of pairs already in batch order: li, lj (n,) int64 lengths -> ends (n_b,)
    int64, batch b = [ends[b - 1], ends[b]). A batch grows while it has at most `max_batch`
    pairs, B * max I * max J <= cells and B * max(max I, max J)^2 <= 4 * cells; a single
    pair always forms a batch. O(n)."""
    n = len(li)
    ends = np.empty(n, np.int64)
    nb = 0
    start = 0
    while start < n:
        end = start + 1
        mi, mj = li[start], lj[start]
        while end < n and end - start < max_batch:
            ni = max(mi, li[end])
            nj = max(mj, lj[end])
            size = end - start + 1
            if size * ni * nj > cells or size * max(ni, nj) ** 2 > 4 * cells:
                break
            mi, mj, end = ni, nj, end + 1
        ends[nb] = end
        nb += 1
        start = end
    return ends[:nb]


@njit(cache=True)
def _occurrences(src, src_off, rows, n_src_words):
    """The source tokens of sentences `rows` grouped by word (a counting sort): start
    (V + 1,) int64, and per occurrence, ordered by word then sentence, sent (n,) int64 (an
    index into rows) and pos (n,) int64 (the token's position in its sentence)."""
    start = np.zeros(n_src_words + 1, np.int64)
    for q in range(len(rows)):
        for p in range(src_off[rows[q]], src_off[rows[q] + 1]):
            start[src[p] + 1] += 1
    for v in range(n_src_words):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    sent = np.empty(start[-1], np.int64)
    pos = np.empty(start[-1], np.int64)
    for q in range(len(rows)):
        r0 = src_off[rows[q]]
        for p in range(r0, src_off[rows[q] + 1]):
            o = fill[src[p]]
            sent[o] = q
            pos[o] = p - r0
            fill[src[p]] += 1
    return start, sent, pos


@njit(cache=True)
def distinct_keys(src, src_off, tgt, tgt_off, rows, n_src_words, n_tgt_words):
    """Sorted distinct keys (P,) int64 of every cell (i, j) of the sentences `rows`.

    Word by word over the source vocabulary: the targets of the sentences holding source
    word s, de-duplicated with a (Vt,) stamp array and sorted, are the keys of row s (keys
    come out sorted: no global sort, no hash table). Cost O(cells + P log P) time, cache
    friendly (the stamps and the row fit in cache); memory 16 bytes per source token + 8
    per key + O(Vt).
    """
    start, sent, _ = _occurrences(src, src_off, rows, n_src_words)
    stamp = np.full(n_tgt_words, -1, np.int64)
    row = np.empty(n_tgt_words, np.int64)
    out = np.empty(max(16, len(tgt)), np.int64)
    n = 0
    for s in range(n_src_words):
        m = 0
        for o in range(start[s], start[s + 1]):
            r = rows[sent[o]]
            for j in range(tgt_off[r], tgt_off[r + 1]):
                t = tgt[j]
                if stamp[t] != s:
                    stamp[t] = s
                    row[m] = t
                    m += 1
        if m == 0:
            continue
        if n + m > len(out):
            bigger = np.empty(max(n + m, len(out) + len(out) // 2), np.int64)
            bigger[:n] = out[:n]
            out = bigger
        out[n:n + m] = np.sort(row[:m]) + np.int64(s) * n_tgt_words
        n += m
    return out[:n].copy()


@njit(cache=True)
def fill_pair_ids(keys, src, src_off, tgt, tgt_off, rows, base, width, n_src_words,
                  n_tgt_words, out):
    """Pair ids of the real cells of sentences `rows`: cell (i, j) of rows[q] gets
    out[base[q] + i * width[q] + j] = the position of key s_i * Vt + t_j in `keys` (sorted
    int64 (P,); the first of equal keys), or P when absent. Other entries of `out` are not
    touched. Word by word: source word s's keys are copied into a (Vt,) scratch array, then
    every occurrence of s reads its sentence's targets there. Cost O(cells + P), cache
    friendly; memory 16 bytes per source token + 4 * Vt."""
    P = len(keys)
    start, sent, pos = _occurrences(src, src_off, rows, n_src_words)
    scratch = np.full(n_tgt_words, P, np.int32)
    for s in range(n_src_words):
        if start[s] == start[s + 1]:
            continue
        lo_key = np.int64(s) * n_tgt_words
        lo = np.searchsorted(keys, lo_key)
        hi = np.searchsorted(keys, lo_key + n_tgt_words)
        for q in range(hi - 1, lo - 1, -1):
            scratch[keys[q] - lo_key] = q
        for o in range(start[s], start[s + 1]):
            q = sent[o]
            r = rows[q]
            dst = base[q] + pos[o] * width[q] - tgt_off[r]
            for j in range(tgt_off[r], tgt_off[r + 1]):
                out[dst + j] = scratch[tgt[j]]
        for q in range(lo, hi):
            scratch[keys[q] - lo_key] = P
