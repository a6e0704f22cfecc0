"""The exact sequential collapsed Gibbs sampler of the Bayesian IBM1 -> HMM -> HMM+fertility
aligner (Östling & Tiedemann 2016, sections 3-4), compiled with numba.

One direction at a time: a "generator" side (length I per sentence; NULL = -1) generates the
"observed" side (length J); every observed token x has an alignment a[x] in {-1, 0..I-1}.
Counts live in flat arrays; the lexical count of cell (g, x) of sentence k is
`lex[pid(cell_off[k] + cell)]` where `cell = g * J + x` (forward, source generates target) or
`x * I + g` (reverse) and pid(c) = pair_lo[c] | pair_hi[c] << 16 (the pair id, stored in 3 bytes
per cell while the table has < 2^24 pairs, or once the single-cell pairs are folded to one id
while fewer than 2^24 - 1 are shared: `corpus.EncodedBitext.fold_singles`), i.e. the
per-sentence index tables of the paper's section 4 point into the table of co-occurring word
pairs (no hash map). Both directions share the pair ids.

The model (stage 1 IBM1, 2 HMM, 3 HMM + fertility), with every parameter collapsed:
- lexical: Dirichlet(lex_alpha) over the V observed words per generator word; NULL has its
  own Dirichlet(null_alpha) table;
- position: NULL with probability p_null, else (stage 1) uniform over I, or (stages 2-3)
  (1 - p_null) * psi[jump] where jump = g - (previous non-NULL position, -1 at the start);
  one more jump to I ends the sentence; psi ~ Dirichlet(jump_alpha) over 2*max_jump + 1
  clamped jump buckets (Och & Ney's NULL: a NULL token keeps the previous position);
- fertility (stage 3): the number of tokens aligned to a generator position, clamped at
  max_fert, ~ Dirichlet(fert_alpha) per generator word.
The per-token reference conditional (`token_conditional`, tested against brute force) is in
conditional.py. The conditional of one token is exact under this collapsed model (the paper
approximates the two jump draws as independent and samples pi instead of collapsing it; here
both are exact, so the sampler's stationary distribution is the model's posterior, which the
tests check by enumeration).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligners.models.bayesian.prefetch import prefetch
from aligners.models.bayesian.slots import _accumulate

__all__ = ["sweep"]

_AHEAD = 2  # sweep prefetches the counts of the token this far ahead (A/B at 200k:
# 2 beat 1 by 2%, 3 lost 4%)


@njit(inline="always", cache=True, error_model="numpy")
def _bucket(m, max_jump):
    if m < -max_jump:
        m = -max_jump
    elif m > max_jump:
        m = max_jump
    return m + max_jump


@njit(inline="always", cache=True, error_model="numpy")
def _pid(pair_lo, pair_hi, c):
    """The pair id of cell c: 16 low bits in pair_lo, the high bits in pair_hi."""
    return np.int64(pair_lo[c]) | (np.int64(pair_hi[c]) << 16)


@njit(inline="always", cache=True, error_model="numpy")
def _lex(lex, p, lim):
    """lex[p] for a pair id p < lim, else 0 without reading lex (branch-free). Pair ids from
    lim on occur in one cell each: with the token's own count removed (and no prior) their
    count is exactly 0, and reading it would be a cache miss (one per such cell per sweep)."""
    v = lex[p if p < lim else 0]
    return v if p < lim else np.float32(0.0)


@njit(inline="always", cache=True, error_model="numpy")
def _prefetch_row(lex, pair_lo, pair_hi, c0, step, n, lim):
    """Prefetch hints for the counts of the n cells c0, c0 + step, ... (ids from lim on are
    not read: they hint lex[0]). Changes no value. Cost O(n)."""
    for g in range(n):
        p = _pid(pair_lo, pair_hi, c0 + g * step)
        prefetch(lex, p if p < lim else 0)


@njit(inline="always", cache=True, error_model="numpy")
def _cell(g, x, n_gen, n_obs, rev):
    if rev:
        return x * n_gen + g
    return g * n_obs + x


@njit(inline="always", cache=True, error_model="numpy")
def _weight(g, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert):
    """The factor of position g's conditional that depends on its word and fertility only:
    1 / (lex denominator) times (stage 3) the fertility ratio."""
    e = gen_flat[gs + g]
    r = lex_inv[e]
    if stage >= 3:
        f = phi[gs + g]
        if f < max_fert:
            r *= fert_ratio[e, f]
    return r


@njit(cache=True, error_model="numpy")
def _refresh_others(w, g0, ring, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert):
    """Recompute w[g] for the other positions of the sentence with position g0's word: the
    cycle ring[g0] -> ... -> g0 (see `_rings`). Cost O(occurrences of the word). Not inlined:
    the sweep calls it only for repeated words, and a loop in its token loop slows it."""
    g = ring[g0]
    while g != g0:
        w[g] = _weight(g, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
        g = ring[g]


@njit(inline="always", cache=True, error_model="numpy")
def _rings(ring, k, gs, n_gen, gen_flat, stamp, last):
    """ring[g] := the next position of the sentence with position g's word, cyclically (g
    itself for a word that occurs once). stamp / last (V_gen,) scratch: the sentence that
    last saw word e (k marks this one) and where. Cost O(I)."""
    for g in range(n_gen):
        e = gen_flat[gs + g]
        if stamp[e] == k:  # seen before in this sentence: join its cycle after last[e]
            h = last[e]
            ring[g] = ring[h]
            ring[h] = g
        else:
            stamp[e] = k
            ring[g] = g
        last[e] = g


@njit(nogil=True, cache=True, error_model="numpy")
def sweep(gen_flat, gen_off, obs_flat, obs_off, cell_off, pair_lo, pair_hi, rev, a, phi, lex,
          lex_den, null_lex, null_den, jump, jump_tot, fert, lex_inv, fert_ratio, k0, k1, uniforms,
          spos, smass, since, snull, accumulate, cur, stage, p_null,
          lex_alpha, lex_alpha_v, null_alpha, null_alpha_v, jump_alpha, jump_alpha_b,
          fert_alpha, max_jump, max_fert, buf, n_shared=-1):
    """One Gibbs sweep over the observed tokens of sentences [k0, k1), in corpus order;
    updates a and the counts.

    uniforms (tokens of k0..k1-1,) in [0, 1) drive the draws (one per token, so a sweep is a
    function of its inputs: reproducible; sweeping [0, K) in chunks with consecutive slices
    of one uniform stream gives the same result). With `accumulate`, the normalised
    conditional of every token is added to its sparse marginal slots (spos (T, K) positions,
    -1 = free; smass (T, K); since (T, K) the accumulating sweep each slot entered at; snull
    (T,) NULL mass; `cur` numbers this accumulating sweep; see `_accumulate`):
    Rao-Blackwellised marginals. buf (2, max I + 1) float64 scratch: the conditional and,
    per position, the factor `_weight` (kept up to date as counts change, so the inner loop
    reads one array: a count change of word e refreshes the positions with word e, found
    through the sentence's same-word cycles `_rings`). The next-but-one token's count reads
    are prefetched (`prefetch`: a hint, no value changes). Scratch O(V_gen + max I).
    n_shared >= 0: pair ids from n_shared on occur in a single cell of the corpus and have
    no prior: their count is 0 whenever it is read (the token's own count removed), so it is
    neither read (see `_lex`) nor kept, and lex may hold only the first n_shared ids;
    -1: every id is read and updated.
    Cost O(sum_k I_k * J_k) time.
    """
    lim = n_shared if n_shared >= 0 else lex.shape[0]
    u0 = obs_off[k0]
    cond = buf[0]
    w = buf[1]
    ring = np.empty(buf.shape[1], np.int64)
    stamp = np.full(lex_den.shape[0], -1, np.int64)
    last = np.empty(lex_den.shape[0], np.int64)
    for k in range(k0, k1):
        gs = gen_off[k]
        n_gen = gen_off[k + 1] - gs
        os_ = obs_off[k]
        n_obs = obs_off[k + 1] - os_
        if n_gen == 0 or n_obs == 0:
            continue
        co = cell_off[k]
        for g in range(n_gen):
            w[g] = _weight(g, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
        _rings(ring, k, gs, n_gen, gen_flat, stamp, last)
        gstep = 1 if rev else n_obs
        for x in range(n_obs):
            t = obs_flat[os_ + x]
            old = a[os_ + x]
            cb = co + (x * n_gen if rev else x)  # cell of (g, x) = cb + g * gstep
            # token x + _AHEAD's count reads, hinted now: their memory latency overlaps the
            # work of the tokens in between (the next sentence's first tokens at the end)
            if x + _AHEAD < n_obs:
                xa = x + _AHEAD
                _prefetch_row(lex, pair_lo, pair_hi, co + (xa * n_gen if rev else xa), gstep,
                              n_gen, lim)
            elif k + 1 < k1:
                xa = x + _AHEAD - n_obs
                n_gen2 = gen_off[k + 2] - gen_off[k + 1]
                n_obs2 = obs_off[k + 2] - obs_off[k + 1]
                if xa < n_obs2:
                    _prefetch_row(lex, pair_lo, pair_hi,
                                  cell_off[k + 1] + (xa * n_gen2 if rev else xa),
                                  1 if rev else n_obs2, n_gen2, lim)
            prev, nxt = -1, n_gen
            if stage >= 2:  # (inlined _neighbours)
                for y in range(x - 1, -1, -1):
                    if a[os_ + y] >= 0:
                        prev = a[os_ + y]
                        break
                for y in range(x + 1, n_obs):
                    if a[os_ + y] >= 0:
                        nxt = a[os_ + y]
                        break
            if old >= 0:  # (inlined _update: numba calls with many arrays are slow)
                e0 = gen_flat[gs + old]
                p = _pid(pair_lo, pair_hi, cb + old * gstep)
                if p < lim:  # (a single-cell pair's count is not kept: always 0 here)
                    lex[p] -= 1
                lex_den[e0] -= 1
                lex_inv[e0] = 1.0 / (lex_alpha_v + lex_den[e0])
                if stage >= 2:
                    jump[_bucket(old - prev, max_jump)] -= 1
                    jump[_bucket(nxt - old, max_jump)] -= 1
                    jump_tot[0] -= 2
                if stage >= 3:
                    f0 = phi[gs + old]
                    f1 = f0 - 1
                    b0 = min(f0, max_fert)
                    b1 = min(f1, max_fert)
                    if b0 != b1:
                        fert[e0, b0] -= 1
                        fert[e0, b1] += 1
                        lo = max(min(b0, b1) - 1, 0)
                        for f2 in range(lo, min(max(b0, b1), max_fert - 1) + 1):
                            fert_ratio[e0, f2] = (fert_alpha + fert[e0, f2 + 1]) / (
                                fert_alpha + fert[e0, f2] - 1.0)
                    phi[gs + old] = f1
                w[old] = _weight(old, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
                if ring[old] != old:  # the word occurs elsewhere in the sentence
                    _refresh_others(w, old, ring, gs, gen_flat, phi, lex_inv, fert_ratio, stage,
                                    max_fert)
            else:
                null_lex[t] -= 1
                null_den[0] -= 1
                if stage >= 2:
                    jump[_bucket(nxt - prev, max_jump)] -= 1
                    jump_tot[0] -= 1
            # the conditional (the values of _fill up to one common factor: w[g] holds the
            # word and fertility factors; (1 - p_null) / I (stage 1) or (1 - p_null) /
            # (jt (jt + 1)) (stages 2-3) divides NULL's value instead of multiplying all)
            total = 0.0
            if stage == 1:
                for g in range(n_gen):
                    c = cb + g * gstep
                    pr = (lex_alpha + _lex(lex, _pid(pair_lo, pair_hi, c), lim)) * w[g]
                    cond[g] = pr
                    total += pr
                pn = p_null * (null_alpha + null_lex[t]) / (null_alpha_v + null_den[0]) * \
                    n_gen / (1.0 - p_null)
            else:
                jt = jump_tot[0] + jump_alpha_b
                o1 = max_jump - prev  # bucket of g - prev is o1 + g when unclamped
                o2 = max_jump + nxt  # bucket of nxt - g is o2 - g when unclamped
                if prev <= max_jump and n_gen - 1 - prev <= max_jump and nxt <= max_jump \
                        and n_gen - 1 - nxt <= max_jump:  # no clamping: no branches
                    for g in range(n_gen):
                        c = cb + g * gstep
                        pr = (lex_alpha + _lex(lex, _pid(pair_lo, pair_hi, c), lim)) * \
                            w[g] * (jump_alpha + jump[o1 + g]) * (jump_alpha + jump[o2 - g])
                        cond[g] = pr
                        total += pr
                    tie = prev + nxt  # both jumps in one bucket: the second sees the first
                    if tie % 2 == 0 and 0 <= tie // 2 < n_gen:
                        g = tie // 2
                        c2 = jump_alpha + jump[o2 - g]
                        pr = cond[g] * (c2 + 1.0) / c2
                        total += pr - cond[g]
                        cond[g] = pr
                else:
                    for g in range(n_gen):
                        b1 = _bucket(g - prev, max_jump)
                        b2 = _bucket(nxt - g, max_jump)
                        c2 = jump[b2] + (1.0 if b1 == b2 else 0.0)
                        c = cb + g * gstep
                        pr = (lex_alpha + _lex(lex, _pid(pair_lo, pair_hi, c), lim)) * \
                            w[g] * (jump_alpha + jump[b1]) * (jump_alpha + c2)
                        cond[g] = pr
                        total += pr
                pn = p_null * (null_alpha + null_lex[t]) / (null_alpha_v + null_den[0]) * \
                    (jump_alpha + jump[_bucket(nxt - prev, max_jump)]) * (jt + 1.0) / \
                    (1.0 - p_null)
            cond[n_gen] = pn
            total += pn
            r = uniforms[os_ + x - u0] * total
            new = n_gen
            acc = 0.0
            for g in range(n_gen + 1):
                acc += cond[g]
                if r < acc:
                    new = g
                    break
            if accumulate:
                _accumulate(os_ + x, cur, cond, n_gen, total, spos, smass, since, snull)
            v = -1 if new == n_gen else new
            a[os_ + x] = v
            if v >= 0:  # (inlined _update: numba calls with many arrays are slow)
                e0 = gen_flat[gs + v]
                p = _pid(pair_lo, pair_hi, cb + v * gstep)
                if p < lim:
                    lex[p] += 1
                lex_den[e0] += 1
                lex_inv[e0] = 1.0 / (lex_alpha_v + lex_den[e0])
                if stage >= 2:
                    jump[_bucket(v - prev, max_jump)] += 1
                    jump[_bucket(nxt - v, max_jump)] += 1
                    jump_tot[0] += 2
                if stage >= 3:
                    f0 = phi[gs + v]
                    f1 = f0 + 1
                    b0 = min(f0, max_fert)
                    b1 = min(f1, max_fert)
                    if b0 != b1:
                        fert[e0, b0] -= 1
                        fert[e0, b1] += 1
                        lo = max(min(b0, b1) - 1, 0)
                        for f2 in range(lo, min(max(b0, b1), max_fert - 1) + 1):
                            fert_ratio[e0, f2] = (fert_alpha + fert[e0, f2 + 1]) / (
                                fert_alpha + fert[e0, f2] - 1.0)
                    phi[gs + v] = f1
                w[v] = _weight(v, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
                if ring[v] != v:  # the word occurs elsewhere in the sentence
                    _refresh_others(w, v, ring, gs, gen_flat, phi, lex_inv, fert_ratio, stage,
                                    max_fert)
            else:
                null_lex[t] += 1
                null_den[0] += 1
                if stage >= 2:
                    jump[_bucket(nxt - prev, max_jump)] += 1
                    jump_tot[0] += 1
