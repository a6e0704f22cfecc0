"""Counts of the Bayesian aligner's alignments (numba kernels beside the sampler's sweep):
`add_counts` adds an alignment's statistics (lexical, NULL, jump, fertility) to the count
arrays and refreshes the caches the sweep reads; `single_pair_ids` lists the pair ids of the
single-cell pairs whose counts the sweep does not keep (sampler.py explains both layouts);
`warmup` compiles every kernel once. Cost O(tokens + V) per call.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligners.models.bayesian.corpus import SINGLE
from aligners.models.bayesian.jit import wait_compile_child
from aligners.models.bayesian.sampler import _bucket, _cell, _pid, _span, sweep

__all__ = ["add_counts", "single_pair_ids", "warmup"]


@njit(nogil=True, cache=True, error_model="numpy")
def add_counts(gen_flat, gen_off, obs_flat, obs_off, cell_off, pair_lo, pair_hi, rev, a, phi,
               lex, lex_den, null_lex, null_den, jump, jump_tot, fert, lex_inv, fert_ratio, stage,
               max_jump, max_fert, lex_alpha_v, fert_alpha, n_shared=-1):
    """Add the counts of alignment a (stage's statistics) to the count arrays (prior-filled)
    and fill the caches lex_inv (V_gen,) and fert_ratio (V_gen, max_fert).

    n_shared >= 0: lex counts of pair ids from n_shared on are not added (see `sweep`).

    phi (generator tokens,) is overwritten with the fertilities. Cost O(sum I + sum J + V).
    """
    lim = n_shared if n_shared >= 0 else lex.shape[0]
    n_sent = gen_off.shape[0] - 1
    for k in range(n_sent):
        gs, n_gen, os_, n_obs = _span(gen_off, obs_off, k)
        if n_gen == 0 or n_obs == 0:
            continue
        co = cell_off[k]
        for g in range(n_gen):
            phi[gs + g] = 0
        prev = -1
        for x in range(n_obs):
            v = a[os_ + x]
            if v >= 0:
                e = gen_flat[gs + v]
                p = _pid(pair_lo, pair_hi, co + _cell(v, x, n_gen, n_obs, rev))
                if p < lim:
                    lex[p] += 1
                lex_den[e] += 1
                phi[gs + v] += 1
                if stage >= 2:
                    jump[_bucket(v - prev, max_jump)] += 1
                    jump_tot[0] += 1
                prev = v
            else:
                null_lex[obs_flat[os_ + x]] += 1
                null_den[0] += 1
        if stage >= 2:
            jump[_bucket(n_gen - prev, max_jump)] += 1
            jump_tot[0] += 1
        if stage >= 3:
            for g in range(n_gen):
                fert[gen_flat[gs + g], min(phi[gs + g], max_fert)] += 1
    for e in range(lex_den.shape[0]):
        lex_inv[e] = 1.0 / (lex_alpha_v + lex_den[e])
        for f in range(max_fert):
            fert_ratio[e, f] = (fert_alpha + fert[e, f + 1]) / (fert_alpha + fert[e, f] - 1.0)


@njit(nogil=True, cache=True, error_model="numpy")
def single_pair_ids(gen_off, obs_off, cell_off, pair_lo, pair_hi, rev, a, n_shared, out,
                    single_off):
    """Write into out the pair id of every observed token of alignment a whose cell's pair
    id is n_shared or more (a single-cell pair, whose count `sweep` does not keep); returns
    how many. `single_off` (K + 1,): the ids are folded (`EncodedBitext.fold_singles`; an
    empty array: not folded) and a SINGLE cell's id is n_shared + single_off[k] + its rank
    among sentence k's SINGLE cells. Cost O(tokens), + O(I J) per such token when folded."""
    n = 0
    folded = single_off.shape[0] > 0
    for k in range(gen_off.shape[0] - 1):
        gs, n_gen, os_, n_obs = _span(gen_off, obs_off, k)
        co = cell_off[k]
        for x in range(n_obs):
            v = a[os_ + x]
            if v >= 0:
                c = co + _cell(v, x, n_gen, n_obs, rev)
                p = _pid(pair_lo, pair_hi, c)
                if p >= n_shared:
                    if folded:
                        p = n_shared + single_off[k]
                        for q in range(co, c):
                            if _pid(pair_lo, pair_hi, q) == SINGLE:
                                p += 1
                    out[n] = p
                    n += 1
    return n


def warmup() -> None:
    """Compile the sweep and the count kernels on a 1-sentence corpus (so timed runs measure
    sampling only)."""
    wait_compile_child()
    i32, f64 = np.int32, np.float64
    ids, off = np.array([2], i32), np.array([0, 1], np.int64)
    lo, f32 = np.zeros(1, np.uint16), np.float32
    for hi, pos_t, since_t in ((np.zeros(1, np.uint8), np.int16, np.uint16),
                               (np.zeros(1, np.uint16), np.int32, np.int32)):
        state = (ids, off, ids, off, off, lo, hi, False, np.zeros(1, pos_t), np.zeros(1, pos_t),
                 np.zeros(1, f32), np.zeros(3, f64), np.zeros(3, f64), np.zeros(1, f64),
                 np.zeros(3, f64), np.zeros(1, f64), np.zeros((3, 3), f64), np.zeros(3, f64),
                 np.zeros((3, 2), f64))
        add_counts(*state, 3, 1, 2, 1.0, 0.5, 1)
        for folded in (np.zeros(0, np.int64), np.zeros(2, np.int64)):
            single_pair_ids(off, off, off, lo, hi, False, state[8], 1, np.zeros(1, np.int64),
                            folded)
        sweep(*state, 0, 1, np.zeros(1), np.full((1, 2), -1, pos_t), np.zeros((1, 2), f32),
              np.zeros((1, 2), since_t), np.zeros(1, f32), True, 0, 3, 0.2, 0.1, 1.0, 0.1, 1.0,
              0.5, 1.5, 0.5, 1, 2, np.zeros((2, 2)), 1)
