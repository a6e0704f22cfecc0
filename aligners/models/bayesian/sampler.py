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
The per-token reference conditional (`token_conditional`, tested against brute force) is a
test helper, tests/bayes_token_conditional.py. The conditional of one token is exact under
this collapsed model (the paper approximates the two jump draws as independent and samples
pi instead of collapsing it; here both are exact, so the sampler's stationary distribution
is the model's posterior, which the tests check by enumeration).
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
def _span(gen_off, obs_off, k):
    """(first generator token, I, first observed token, J) of sentence k."""
    gs, os_ = gen_off[k], obs_off[k]
    return gs, gen_off[k + 1] - gs, os_, obs_off[k + 1] - os_


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


@njit(inline="always", cache=True, error_model="numpy")
def _row(co, x, n_gen, n_obs, rev):
    """(cb, step): the cell of (g, x) in the sentence whose cells start at co is cb + g * step."""
    if rev:
        return co + x * n_gen, 1
    return co + x, n_obs


@njit(inline="always", cache=True, error_model="numpy")
def _prefetch_ahead(lex, pair_lo, pair_hi, gen_off, obs_off, cell_off, rev, k, k1, x, n_gen,
                    n_obs, lim):
    """Hint token x + _AHEAD's count reads now (the next sentence's first tokens at the end of
    sentence k; none past k1): their memory latency overlaps the work of the tokens in
    between. Changes no value."""
    xa = x + _AHEAD
    if xa >= n_obs and k + 1 < k1:
        xa -= n_obs
        k += 1
        _, n_gen, _, n_obs = _span(gen_off, obs_off, k)
    if xa < n_obs:
        cb, step = _row(cell_off[k], xa, n_gen, n_obs, rev)
        _prefetch_row(lex, pair_lo, pair_hi, cb, step, n_gen, lim)


@njit(inline="always", cache=True, error_model="numpy")
def _neighbours(a, os_, x, n_obs, n_gen):
    """The alignments of the nearest non-NULL tokens before and after x (-1, I if none)."""
    prev = -1
    for y in range(x - 1, -1, -1):
        if a[os_ + y] >= 0:
            prev = a[os_ + y]
            break
    nxt = n_gen
    for y in range(x + 1, n_obs):
        if a[os_ + y] >= 0:
            nxt = a[os_ + y]
            break
    return prev, nxt


@njit(inline="always", cache=True, error_model="numpy")
def _move_fertility(sign, i, e, phi, fert, fert_ratio, max_fert, fert_alpha):
    """Add sign (+-1) to the fertility phi[i] of a generator token with word e; move its
    clamped bucket count and refresh the ratios fert_ratio[e] that read the two buckets."""
    f0 = phi[i]
    f1 = f0 + sign
    b0 = min(f0, max_fert)
    b1 = min(f1, max_fert)
    if b0 != b1:
        fert[e, b0] -= 1
        fert[e, b1] += 1
        lo = max(min(b0, b1) - 1, 0)
        for f2 in range(lo, min(max(b0, b1), max_fert - 1) + 1):
            fert_ratio[e, f2] = (fert_alpha + fert[e, f2 + 1]) / (fert_alpha + fert[e, f2] - 1.0)
    phi[i] = f1


@njit(inline="always", cache=True, error_model="numpy")
def _update(sign, v, t, gs, cb, gstep, prev, nxt, lim, stage, gen_flat, pair_lo, pair_hi, phi,
            lex, lex_den, null_lex, null_den, jump, jump_tot, fert, max_jump, max_fert, lex_inv,
            fert_ratio, lex_alpha_v, fert_alpha):
    """Add (sign=+1) or remove (-1) the counts of observed word t aligned to v (-1: NULL)
    between the neighbours' alignments prev and nxt (cell of (g, t) = cb + g * gstep; the
    counts of pair ids from lim on are not kept); keep the cached reciprocal denominators
    lex_inv and fertility ratios fert_ratio up to date. Inlined: numba calls with many arrays
    are slow (and see `_sweep` on reference counts)."""
    if v >= 0:
        e = gen_flat[gs + v]
        p = _pid(pair_lo, pair_hi, cb + v * gstep)
        if p < lim:  # (a single-cell pair's count is not kept: always 0 when read)
            lex[p] += sign
        lex_den[e] += sign
        lex_inv[e] = 1.0 / (lex_alpha_v + lex_den[e])
        if stage >= 2:
            jump[_bucket(v - prev, max_jump)] += sign
            jump[_bucket(nxt - v, max_jump)] += sign
            jump_tot[0] += 2 * sign
        if stage >= 3:
            _move_fertility(sign, gs + v, e, phi, fert, fert_ratio, max_fert, fert_alpha)
    else:
        null_lex[t] += sign
        null_den[0] += sign
        if stage >= 2:
            jump[_bucket(nxt - prev, max_jump)] += sign
            jump_tot[0] += sign


@njit(inline="always", cache=True, error_model="numpy")
def _reweigh(w, v, ring, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert):
    """After the counts of position v's word changed (v = -1, NULL: nothing to do), refresh
    w at every position of the sentence with that word."""
    if v >= 0:
        w[v] = _weight(v, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
        if ring[v] != v:  # the word occurs elsewhere in the sentence
            _refresh_others(w, v, ring, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)


@njit(inline="always", cache=True, error_model="numpy")
def _null_value(t, p_null, null_alpha, null_alpha_v, null_lex, null_den):
    return p_null * (null_alpha + null_lex[t]) / (null_alpha_v + null_den[0])


@njit(inline="always", cache=True, error_model="numpy")
def _ibm1_conditional(cond, w, t, n_gen, cb, gstep, lim, lex, pair_lo, pair_hi, null_lex,
                      null_den, p_null, lex_alpha, null_alpha, null_alpha_v):
    """Stage 1's conditional into cond (I + 1,) up to a common factor; returns its sum. The
    uniform (1 - p_null) / I divides NULL's value instead of multiplying all."""
    total = 0.0
    for g in range(n_gen):
        pr = (lex_alpha + _lex(lex, _pid(pair_lo, pair_hi, cb + g * gstep), lim)) * w[g]
        cond[g] = pr
        total += pr
    pn = _null_value(t, p_null, null_alpha, null_alpha_v, null_lex, null_den) * \
        n_gen / (1.0 - p_null)
    cond[n_gen] = pn
    return total + pn


@njit(inline="always", cache=True, error_model="numpy")
def _hmm_conditional(cond, w, t, n_gen, cb, gstep, lim, prev, nxt, lex, pair_lo, pair_hi,
                     null_lex, null_den, jump, jump_tot, p_null, lex_alpha, null_alpha,
                     null_alpha_v, jump_alpha, jump_alpha_b, max_jump):
    """Stages 2-3's conditional into cond (I + 1,) up to a common factor; returns its sum.
    (1 - p_null) / (jt (jt + 1)) divides NULL's value instead of multiplying all."""
    total = 0.0
    o1 = max_jump - prev  # bucket of g - prev is o1 + g when unclamped
    o2 = max_jump + nxt  # bucket of nxt - g is o2 - g when unclamped
    if prev <= max_jump and n_gen - 1 - prev <= max_jump and nxt <= max_jump \
            and n_gen - 1 - nxt <= max_jump:  # no clamping: no branches
        for g in range(n_gen):
            pr = (lex_alpha + _lex(lex, _pid(pair_lo, pair_hi, cb + g * gstep), lim)) * \
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
            pr = (lex_alpha + _lex(lex, _pid(pair_lo, pair_hi, cb + g * gstep), lim)) * \
                w[g] * (jump_alpha + jump[b1]) * (jump_alpha + c2)
            cond[g] = pr
            total += pr
    jt = jump_tot[0] + jump_alpha_b
    pn = _null_value(t, p_null, null_alpha, null_alpha_v, null_lex, null_den) * \
        (jump_alpha + jump[_bucket(nxt - prev, max_jump)]) * (jt + 1.0) / (1.0 - p_null)
    cond[n_gen] = pn
    return total + pn


@njit(inline="always", cache=True, error_model="numpy")
def _draw(cond, n_gen, r):
    """The first g whose cumulative value exceeds r (n_gen, NULL, if none)."""
    acc = 0.0
    for g in range(n_gen + 1):
        acc += cond[g]
        if r < acc:
            return g
    return n_gen


@njit(nogil=True, cache=True, error_model="numpy", _nrt=False)
def _sweep(gen_flat, gen_off, obs_flat, obs_off, cell_off, pair_lo, pair_hi, rev, a, phi, lex,
           lex_den, null_lex, null_den, jump, jump_tot, fert, lex_inv, fert_ratio, k0, k1,
           uniforms, spos, smass, since, snull, accumulate, cur, stage, p_null, lex_alpha,
           lex_alpha_v, null_alpha, null_alpha_v, jump_alpha, jump_alpha_b, fert_alpha, max_jump,
           max_fert, buf, lim, ring, stamp, last):
    """`sweep` with its scratch allocated (ring (max I + 1,), stamp and last (V_gen,)).
    Compiled without reference counting (_nrt=False: it allocates nothing): the arrays its
    inlined helpers take would otherwise be increfed and decrefed per token (40% slower)."""
    u0 = obs_off[k0]
    cond = buf[0]
    w = buf[1]
    for k in range(k0, k1):
        gs, n_gen, os_, n_obs = _span(gen_off, obs_off, k)
        if n_gen == 0 or n_obs == 0:
            continue
        for g in range(n_gen):
            w[g] = _weight(g, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
        _rings(ring, k, gs, n_gen, gen_flat, stamp, last)
        for x in range(n_obs):
            t = obs_flat[os_ + x]
            cb, gstep = _row(cell_off[k], x, n_gen, n_obs, rev)
            _prefetch_ahead(lex, pair_lo, pair_hi, gen_off, obs_off, cell_off, rev, k, k1, x,
                            n_gen, n_obs, lim)
            prev, nxt = -1, n_gen
            if stage >= 2:
                prev, nxt = _neighbours(a, os_, x, n_obs, n_gen)
            old = a[os_ + x]
            _update(-1, old, t, gs, cb, gstep, prev, nxt, lim, stage, gen_flat, pair_lo, pair_hi,
                    phi, lex, lex_den, null_lex, null_den, jump, jump_tot, fert, max_jump,
                    max_fert, lex_inv, fert_ratio, lex_alpha_v, fert_alpha)
            _reweigh(w, old, ring, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
            if stage == 1:
                total = _ibm1_conditional(cond, w, t, n_gen, cb, gstep, lim, lex, pair_lo,
                                          pair_hi, null_lex, null_den, p_null, lex_alpha,
                                          null_alpha, null_alpha_v)
            else:
                total = _hmm_conditional(cond, w, t, n_gen, cb, gstep, lim, prev, nxt, lex,
                                         pair_lo, pair_hi, null_lex, null_den, jump, jump_tot,
                                         p_null, lex_alpha, null_alpha, null_alpha_v,
                                         jump_alpha, jump_alpha_b, max_jump)
            new = _draw(cond, n_gen, uniforms[os_ + x - u0] * total)
            if accumulate:
                _accumulate(os_ + x, cur, cond, n_gen, total, spos, smass, since, snull)
            v = -1 if new == n_gen else new
            a[os_ + x] = v
            _update(1, v, t, gs, cb, gstep, prev, nxt, lim, stage, gen_flat, pair_lo, pair_hi,
                    phi, lex, lex_den, null_lex, null_den, jump, jump_tot, fert, max_jump,
                    max_fert, lex_inv, fert_ratio, lex_alpha_v, fert_alpha)
            _reweigh(w, v, ring, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)


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
    ring = np.empty(buf.shape[1], np.int64)
    stamp = np.full(lex_den.shape[0], -1, np.int64)
    last = np.empty(lex_den.shape[0], np.int64)
    _sweep(gen_flat, gen_off, obs_flat, obs_off, cell_off, pair_lo, pair_hi, rev, a, phi, lex,
           lex_den, null_lex, null_den, jump, jump_tot, fert, lex_inv, fert_ratio, k0, k1,
           uniforms, spos, smass, since, snull, accumulate, cur, stage, p_null, lex_alpha,
           lex_alpha_v, null_alpha, null_alpha_v, jump_alpha, jump_alpha_b, fert_alpha, max_jump,
           max_fert, buf, lim, ring, stamp, last)
