"""The torch-free parts of the bitext index (`aligners.data.bitext`; the Bayesian aligner's
pair table uses them too): token pairs encoded into flat arrays (`_encode_stream`), and
numba kernels: batch cuts, the sorted table of distinct word-pair keys, and the per-cell
pair ids; and the same table and ids found with torch on a GPU (`device_pair_ids`, which
imports torch when called).

A pair key is `s * n_tgt_words + t` (int64; 0 <= s < Vs, 0 <= t < Vt), so the keys of
source word s are one run [s * Vt, (s + 1) * Vt) of the sorted key table. Sentences live in
flat int32 token arrays with int64 offsets (`off[k]:off[k + 1]` = sentence k). Both passes
go source word by source word (a counting sort of the source tokens), so that their random
reads stay in a (Vt,) array that fits in cache: no hash table, no per-cell binary search.
"""

from __future__ import annotations

from array import array
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from aligners.data.vocab import WordIds

__all__ = ["cut_batches", "device_pair_ids", "distinct_keys", "fill_pair_ids", "in_threads",
           "pad_ids", "spans"]

_ENCODE_TOKENS = 1 << 20  # tokens (both sides) encoded at once by _encode_stream
_MERGE_KEYS = 1 << 26  # on a device: batches' distinct keys merged into the table from this
# many on (or the table's size, if larger: the merges' cost stays O(P log) however large)


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


@njit(nogil=True, cache=True)
def _occurrences(src, src_off, tgt_off, rows, base, width, n_src_words):
    """The source tokens of sentences `rows` grouped by word (a counting sort, stable in
    `rows` order): start (V + 1,) int64 and per occurrence t0 (n,) int64, tn (n,) int16 (its
    sentence's target span) and, when `base` is not empty, dst (n,) int64 = base[q] + i *
    width[q] (where the pair ids of its source position i in sentence rows[q] start)."""
    start = np.zeros(n_src_words + 1, np.int64)
    for q in range(len(rows)):
        for p in range(src_off[rows[q]], src_off[rows[q] + 1]):
            start[src[p] + 1] += 1
    for v in range(n_src_words):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    n = start[-1]
    t0 = np.empty(n, np.int64)
    tn = np.empty(n, np.int16)
    dst = np.empty(n if len(base) else 0, np.int64)
    for q in range(len(rows)):
        r = rows[q]
        for p in range(src_off[r], src_off[r + 1]):
            o = fill[src[p]]
            fill[src[p]] += 1
            t0[o] = tgt_off[r]
            tn[o] = tgt_off[r + 1] - tgt_off[r]
            if len(base):
                dst[o] = base[q] + (p - src_off[r]) * width[q]
    return start, t0, tn, dst


@njit(nogil=True, cache=True)
def _row_targets(start, t0, tn, tgt, s, stamp, row, n_tgt_words):
    """The distinct targets of the sentences holding source word s, sorted, into row[:m];
    returns m. `stamp` (Vt,) int32 holds no s before the call (a word's number marks its
    targets). Branch-free stamping; a frequent word's targets are read off the stamps in
    order (O(Vt)) instead of sorted (O(m log m))."""
    m = 0
    for o in range(start[s], start[s + 1]):
        for j in range(t0[o], t0[o] + tn[o]):
            t = tgt[j]
            row[m] = t
            m += stamp[t] != s
            stamp[t] = s
    if 128 * m > n_tgt_words:
        m = 0
        for t in range(n_tgt_words):
            if stamp[t] == s:
                row[m] = t
                m += 1
    else:
        row[:m].sort()
    return m


@njit(nogil=True, cache=True)
def _fill_words(keys, start, t0, tn, dst, tgt, s0, s1, n_tgt_words, out):
    """out[dst[o] + j] = id of (s, t_j) for the occurrences o of source words s in [s0, s1):
    the position of the key in `keys` (the first of equal keys), or P = len(keys)."""
    P = len(keys)
    scratch = np.full(n_tgt_words, P, np.int32)
    for s in range(s0, s1):
        if start[s] == start[s + 1]:
            continue
        lo_key = np.int64(s) * n_tgt_words
        lo = np.searchsorted(keys, lo_key)
        hi = np.searchsorted(keys, lo_key + n_tgt_words)
        for q in range(hi - 1, lo - 1, -1):
            scratch[keys[q] - lo_key] = q
        for o in range(start[s], start[s + 1]):
            d = dst[o] - t0[o]
            for j in range(t0[o], t0[o] + tn[o]):
                out[d + j] = scratch[tgt[j]]
        for q in range(lo, hi):
            scratch[keys[q] - lo_key] = P


@njit(nogil=True, cache=True)
def _word_keys(start, t0, tn, tgt, s0, s1, n_tgt_words):
    """The sorted distinct keys (m,) int64 of the cells whose source word is in [s0, s1):
    each word's distinct targets found with stamps and sorted (`_row_targets`)."""
    stamp = np.full(n_tgt_words, -1, np.int32)
    row = np.empty(n_tgt_words + 1, np.int32)  # (+1: _row_targets writes one past)
    keys = np.empty(16, np.int64)
    n = 0
    for s in range(s0, s1):
        m = _row_targets(start, t0, tn, tgt, s, stamp, row, n_tgt_words)
        if n + m > len(keys):
            bigger = np.empty(max(n + m, 2 * len(keys)), np.int64)
            bigger[:n] = keys[:n]
            keys = bigger
        for q in range(m):
            keys[n + q] = np.int64(s) * n_tgt_words + row[q]
        n += m
    return keys[:n].copy()


@njit(nogil=True, cache=True)
def pad_ids(base, width, height, li, lj, value, out):
    """out[padding cells] = value: of the (height[q], width[q]) block at base[q] of each row
    q, every cell (i, j) outside i < li[q], j < lj[q]. O(padding cells)."""
    for q in range(len(base)):
        for i in range(height[q]):
            lo = base[q] + i * width[q]
            out[lo + (lj[q] if i < li[q] else 0):lo + width[q]] = value


def _word_ranges(start: np.ndarray, t0n: np.ndarray, threads: int) -> list[tuple[int, int]]:
    """[s0, s1) source word ranges of about equal cells (tn summed over occurrences): one
    with one thread, else 8 per thread, which the threads take in turn (a rare word's cell
    costs more than a frequent one's, so equal cells are not equal time)."""
    V = len(start) - 1
    parts = 8 * threads if threads > 1 else 1
    if parts <= 1 or len(t0n) == 0:
        return [(0, V)]
    cum = np.cumsum(t0n, dtype=np.int64)
    cuts = [0]
    for q in range(1, parts):
        o = int(np.searchsorted(cum, cum[-1] * q // parts))
        cuts.append(max(cuts[-1], int(np.searchsorted(start, o, side="right")) - 1))
    cuts.append(V)
    return [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def spans(off: np.ndarray, size: int) -> list[tuple[int, int]]:
    """[k0, k1) ranges that cut the items of cumulative sizes `off` (n + 1,) into runs of
    the most consecutive items whose sizes sum to at most `size` (at least one item each)."""
    out, k0 = [], 0
    while k0 < len(off) - 1:
        k1 = max(k0 + 1, int(np.searchsorted(off, off[k0] + size, side="right")) - 1)
        out.append((k0, k1))
        k0 = k1
    return out


def in_threads(fn, ranges, threads: int) -> list:
    """[fn(*r) for r in ranges], on `threads` threads when there are several ranges."""
    if len(ranges) == 1:
        return [fn(*ranges[0])]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(lambda r: fn(*r), ranges))


_EMPTY = np.zeros(0, np.int64)


def distinct_keys(src, src_off, tgt, tgt_off, rows, n_src_words: int, n_tgt_words: int, *,
                  threads: int = 1) -> np.ndarray:
    """Sorted distinct keys (P,) int64 of every cell (i, j) of the sentences `rows` (int64).

    Source word by source word (`threads` word ranges at once): the targets of the
    sentences holding word s, de-duplicated with a (Vt,) stamp array and sorted, are the
    keys of row s; rows come out in order (no global sort, no hash table). Cost O(cells + P
    log P) time, cache friendly; memory 18 bytes per source token + 8 per key + O(Vt).
    """
    start, t0, tn, _ = _occurrences(src, src_off, tgt_off, np.sort(rows), _EMPTY, _EMPTY,
                                    np.int64(n_src_words))
    ranges = _word_ranges(start, tn, threads)
    parts = in_threads(lambda s0, s1: _word_keys(start, t0, tn, tgt, s0, s1,
                                           np.int64(n_tgt_words)), ranges, threads)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def fill_pair_ids(keys, src, src_off, tgt, tgt_off, rows, base, width, n_src_words: int,
                  n_tgt_words: int, out, *, threads: int = 1) -> None:
    """Pair ids of the real cells of sentences `rows`: cell (i, j) of rows[q] gets
    out[base[q] + i * width[q] + j] = the position of key s_i * Vt + t_j in `keys` (sorted
    int64 (P,); the first of equal keys), or P when absent. Other entries of `out` are not
    touched. Source word by source word (`threads` word ranges at once): word s's keys are
    copied into a (Vt,) scratch array, then every occurrence of s reads its sentence's
    targets there. Cost O(cells + P), cache friendly; memory 26 bytes per source token +
    4 * Vt per thread."""
    order = np.argsort(rows, kind="stable")  # corpus order: the token reads go forward
    start, t0, tn, dst = _occurrences(src, src_off, tgt_off, rows[order], base[order],
                                      width[order], np.int64(n_src_words))
    ranges = _word_ranges(start, tn, threads)
    in_threads(lambda s0, s1: _fill_words(keys, start, t0, tn, dst, tgt, s0, s1,
                                    np.int64(n_tgt_words), out), ranges, threads)


def device_pair_ids(words: list, n_tgt_words: int, keys):
    """Every batch's (B, I, J) int32 pair ids computed where the batches `words` (rows,
    src, tgt, src_lengths, tgt_lengths) are (a GPU), and the table (P,) int64 on the CPU:
    the sorted distinct keys of the real cells (torch.unique per batch, merged into the
    table once they are `_MERGE_KEYS` or as many as it holds), or `keys` when given; an
    id = the key's position (searchsorted), P on padding and for pairs outside a given
    table. The same table and ids as the CPU kernels. A fixed number of ops per batch
    (about 40 aten ops, none per sentence); device memory 24 bytes per cell of one batch
    and 8 per distinct pair (about 4 times that while merging)."""
    import torch

    def cell_keys(words) -> tuple[torch.Tensor, torch.Tensor]:
        """A batch's (B, I, J) int64 keys src * Vt + tgt and its real cells (bool)."""
        _, s, t, sl, tl = words
        i = torch.arange(s.shape[1], device=s.device)
        j = torch.arange(t.shape[1], device=s.device)
        return (s[:, :, None] * n_tgt_words + t[:, None, :],
                (i[None, :, None] < sl[:, None, None]) & (j[None, None, :] < tl[:, None, None]))

    device = words[0][1].device
    if keys is None:
        table, parts, n = torch.zeros(0, dtype=torch.int64, device=device), [], 0
        for k, w in enumerate(words):
            key, real = cell_keys(w)
            parts.append(torch.unique(key[real]))
            n += parts[-1].numel()
            if n >= max(_MERGE_KEYS, table.numel()) or k == len(words) - 1:
                table, parts, n = torch.unique(torch.cat([table, *parts])), [], 0
    else:
        table = keys.to(device=device, dtype=torch.int64)
    P = table.numel()
    out = []
    for w in words:
        key, real = cell_keys(w)
        pos = torch.searchsorted(table, key)
        if keys is not None:  # a pair outside the given table: P
            real &= table[pos.clamp_(max=max(P - 1, 0))] == key if P else False
        out.append(torch.where(real, pos, P).to(torch.int32))
    return out, table.cpu()


def _encode_stream(pairs, vocabs: tuple[WordIds, WordIds]):
    """Token pairs -> per side (flat ids (T,) int32, offsets (N + 1,) int64), encoded
    `_ENCODE_TOKENS` tokens (both sides) at a time."""
    parts: tuple[list, list] = ([], [])
    lengths = (array("q"), array("q"))
    bufs: tuple[list, list] = ([], [])
    for s, t in pairs:
        bufs[0].extend(s)
        bufs[1].extend(t)
        lengths[0].append(len(s))
        lengths[1].append(len(t))
        if len(bufs[0]) + len(bufs[1]) >= _ENCODE_TOKENS:
            for side in (0, 1):
                parts[side].append(vocabs[side].encode(bufs[side]))
                bufs[side].clear()
    out = []
    for side in (0, 1):
        parts[side].append(vocabs[side].encode(bufs[side]))
        off = np.zeros(len(lengths[side]) + 1, dtype=np.int64)
        np.cumsum(np.frombuffer(lengths[side], dtype=np.int64), out=off[1:])
        out.append((np.concatenate(parts[side]), off))
        parts[side].clear()
    return out
