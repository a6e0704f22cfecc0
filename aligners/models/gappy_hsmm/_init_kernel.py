"""Tight 1-k / k-1 phrase pairs of grow-diag-final word-HMM Viterbi links (numba), per pair.

Used by `aligners.models.gappy_hsmm.init` (initial phrasal emissions, Bansal et al. 2011, sec.
7.1). Per pair: forward Viterbi f (J,) (source position of each target word, -1 NULL) and
backward b (I,) (target position of each source word, -1 NULL) are symmetrised with
grow-diag-final exactly as `aligners.symmetrize.symmetrize` (atools order: sweeps over the
not-yet-added union points in (i, j) order, added points count at once; then the forward
points, then the backward ones, in (i, j) order). Then every source word i whose links
span targets lo..hi (hi > lo) with no other source linked inside gives the key
src_word(i) * Ut + (listed target span unit ending at hi, length hi - lo + 1), when that
span is listed; likewise every target word j with a source span. Cost O(I J) per pair
(dense link matrices) plus O(U^2) for the sweeps (U union points); tested equal to the
Python reference in tests/test_phrasal_model.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["tight_phrase_keys", "hash_table", "gappy_occurrences", "key_positions"]


@njit(cache=True)
def _gdf(f, b, I, J):
    """(I, J) bool grow-diag-final links of forward f (J,) and backward b (I,)."""
    F = np.zeros((I, J), dtype=np.bool_)
    R = np.zeros((I, J), dtype=np.bool_)
    for j in range(J):
        if 0 <= f[j] < I:
            F[f[j], j] = True
    for i in range(I):
        if 0 <= b[i] < J:
            R[i, b[i]] = True
    res = F & R
    sa = np.zeros(I, dtype=np.bool_)
    ta = np.zeros(J, dtype=np.bool_)
    pi = np.empty(I + J, dtype=np.int64)  # F has at most J points, R at most I
    pj = np.empty(I + J, dtype=np.int64)
    n = 0
    for i in range(I):  # candidates in (i, j) order
        for j in range(J):
            if res[i, j]:
                sa[i] = True
                ta[j] = True
            elif F[i, j] or R[i, j]:
                pi[n] = i
                pj[n] = j
                n += 1
    while n > 0:
        m = 0
        added = False
        for c in range(n):
            i, j = pi[c], pj[c]
            ok = False
            if not sa[i] or not ta[j]:
                for di in range(-1, 2):
                    for dj in range(-1, 2):
                        if di == 0 and dj == 0:
                            continue
                        a, z = i + di, j + dj
                        if 0 <= a < I and 0 <= z < J and res[a, z]:
                            ok = True
            if ok:
                res[i, j] = True
                sa[i] = True
                ta[j] = True
                added = True
            else:
                pi[m] = i
                pj[m] = j
                m += 1
        if not added:
            break
        n = m
    for M in (F, R):  # final: forward points, then backward points, in (i, j) order
        for i in range(I):
            for j in range(J):
                if M[i, j] and not res[i, j] and (not sa[i] or not ta[j]):
                    res[i, j] = True
                    sa[i] = True
                    ta[j] = True
    return res


@njit(cache=True)
def _word_to_span(res, spans, words, Ut, word_first, out, k):
    """Append the keys of every row word r of res (R, C) whose links span columns lo..hi
    (hi > lo) with no other row linked inside, when spans[hi, hi - lo] is listed: words[r] *
    Ut + span if word_first, else span * Ut + words[r]. Returns the new fill k."""
    R, C = res.shape
    L = spans.shape[1]
    for r in range(R):
        lo, hi = C, -1
        for c in range(C):
            if res[r, c]:
                lo = min(lo, c)
                hi = max(hi, c)
        if hi > lo and hi - lo < L and spans[hi, hi - lo] >= 0:
            ok = True
            for c in range(lo, hi + 1):
                for a in range(R):
                    if a != r and res[a, c]:
                        ok = False
            if ok:
                span = spans[hi, hi - lo]
                out[k] = words[r] * Ut + span if word_first else span * Ut + words[r]
                k += 1
    return k


@njit(cache=True)
def _batch(f, b, sl, tl, ss, st, sw, tw, Ut):
    n = 0
    for r in range(f.shape[0]):
        n += sl[r] + tl[r]
    out = np.empty(n, dtype=np.int64)
    k = 0
    for r in range(f.shape[0]):
        res = _gdf(f[r], b[r], sl[r], tl[r])
        k = _word_to_span(res, st[r], sw[r], Ut, True, out, k)  # source word i -> target span
        k = _word_to_span(res.T, ss[r], tw[r], Ut, False, out, k)  # source span -> target word
    return out[:k]


def _array(x, dtype=np.int64) -> np.ndarray:
    """numpy or CPU torch -> a contiguous numpy array of `dtype` (default int64)."""
    return np.ascontiguousarray(x.numpy() if hasattr(x, "numpy") else x, dtype=dtype)


def tight_phrase_keys(f, b, sl, tl, ss, st, sw, tw, Ut: int) -> np.ndarray:
    """int64 keys (see the module docstring) of R pairs: f (R,J), b (R,I) Viterbi positions,
    sl, tl (R,) lengths, ss (R,I,L) / st (R,J,L) listed span units (-1 none), sw (R,I) /
    tw (R,J) word ids (numpy or CPU torch integer arrays)."""
    a = _array
    return _batch(a(f), a(b), a(sl), a(tl), a(ss), a(st), a(sw), a(tw), int(Ut))


_GOLD = np.uint64(11400714819323198485)  # 2^64 / golden ratio (multiplicative hashing)


@njit(cache=True)
def _slot(q, bits):
    return np.int64((np.uint64(q) * _GOLD) >> np.uint64(64 - bits)) & ((1 << bits) - 1)


@njit(cache=True)
def hash_table(keys):
    """Open-addressing table of distinct int64 keys: (slots (2^b,) int64 key index or -1,
    b) with 2^b >= 2 len(keys)."""
    bits = 1
    while (1 << bits) < 2 * keys.shape[0]:
        bits += 1
    mask = (1 << bits) - 1
    slots = np.full(1 << bits, -1, dtype=np.int64)
    for k in range(keys.shape[0]):
        h = _slot(keys[k], bits)
        while slots[h] >= 0:
            h = (h + 1) & mask
        slots[h] = k
    return slots, bits


@njit(cache=True)
def _find(x, keys, slots, bits):
    """The index of key x in a `hash_table` (slots, bits), or -1."""
    mask = (1 << bits) - 1
    h = _slot(x, bits)
    while slots[h] >= 0:
        if keys[slots[h]] == x:
            return slots[h]
        h = (h + 1) & mask
    return -1


@njit(cache=True)
def _gappy_count(words, lengths, keys, slots, bits, first_ok, last_ok, V, counts):
    for r in range(words.shape[0]):
        n = lengths[r]
        for a in range(n):
            wa = words[r, a]
            if not first_ok[wa]:
                continue
            for c in range(a + 2, n):
                wc = words[r, c]
                if not last_ok[wc]:
                    continue
                k = _find(wa * V + wc, keys, slots, bits)
                if k >= 0:
                    counts[k] += 1


def gappy_occurrences(words, lengths, keys: np.ndarray, table: tuple, first_ok: np.ndarray,
                      last_ok: np.ndarray, V: int, counts: np.ndarray) -> None:
    """Add to counts (G,) int64 the occurrences in words (B,N) (lengths (B,)) of the gappy
    pairs with distinct int64 keys w1 * V + w2 (G,): positions a < c - 1 of one sentence.
    table = hash_table(keys); first_ok / last_ok (V,) bool: the words that start / end a
    key (the others skipped). Cost O(B N^2) with O(1) expected per look-up."""
    _gappy_count(_array(words), _array(lengths), keys, table[0], table[1], first_ok,
                 last_ok, int(V), counts)


@njit(cache=True)
def _positions(q, valid, keys, slots, bits, out):
    for n in range(q.shape[0]):
        out[n] = _find(q[n], keys, slots, bits) if valid[n] else -1


def key_positions(q, valid, keys: np.ndarray, table: tuple) -> np.ndarray:
    """(N,) int64 index of each q (N,) int64 among the distinct keys (G,) (table =
    hash_table(keys)), -1 where absent or not valid (N,) bool (numpy or CPU torch). For
    sorted keys the same as a binary search's hits. Cost O(N) expected."""
    q = _array(q)
    v = _array(valid, np.bool_)
    out = np.empty(q.shape[0], dtype=np.int64)
    _positions(q, v, keys, table[0], table[1], out)
    return out
