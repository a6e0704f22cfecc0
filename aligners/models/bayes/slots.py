"""Sparse Rao-Blackwellised link marginals of the Bayesian aligner: K slots per observed
token (position, summed probability, the accumulating sweep it entered at) plus the token's
exact NULL mass, instead of one float per (source x target) cell.

`_accumulate` is called by the sampler's sweep (sampler.py) for every token of an
accumulating sweep; `dense_to_slots` converts dense per-cell marginals (the batched
sampler's) to the same store. Arrays: pos (T, K) int16/int32 (-1 = free), mass (T, K)
float32, since (T, K) uint16/int32, null (T,) float32 for the T observed tokens of one
direction.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["dense_to_slots"]


@njit(inline="always", cache=True, error_model="numpy")
def _min_avg(ti, cur, spos, smass, since):
    """(slot, mass / sweeps since it entered) of token ti's slot with the smallest average."""
    mn = np.inf
    ms = 0
    for s in range(spos.shape[1]):
        avg = smass[ti, s] / (cur - np.int64(since[ti, s]) + 1)
        if avg < mn:
            mn = avg
            ms = s
    return ms, mn


@njit(inline="always", cache=True, error_model="numpy")
def _accumulate(ti, cur, cond, n_gen, total, spos, smass, since, snull):
    """Add token ti's normalised conditional cond (I + 1,) of accumulating sweep `cur` to its
    sparse marginal slots (spos, smass, since (T, K): position, summed probability, sweep
    it entered at).

    Every position already in a slot gets its exact probability. A position not in a slot
    takes a free slot, or replaces the slot whose average since it entered is the smallest
    when its probability in this sweep exceeds that average (the replaced slot's mass is
    dropped; the new one starts from this sweep). So a kept mass is the exact sum over the
    sweeps since the position entered: a lower bound of the dense one, equal to it for
    positions kept from the first accumulating sweep on, i.e. for every position when
    K >= I. NULL's mass is exact. Cost O(K) plus O(K) per position above the threshold.
    """
    n_slots = spos.shape[1]
    inv = 1.0 / total
    snull[ti] += cond[n_gen] * inv
    used = 0
    for s in range(n_slots):
        p = spos[ti, s]
        if p < 0:
            break
        smass[ti, s] += cond[p] * inv
        used += 1
    ms, mn = 0, -1.0
    if used == n_slots:
        ms, mn = _min_avg(ti, cur, spos, smass, since)
    thr = mn * total
    for g in range(n_gen):
        if cond[g] > thr:
            present = False
            for s in range(used):
                if spos[ti, s] == g:
                    present = True
                    break
            if present:
                continue
            s = used if used < n_slots else ms
            spos[ti, s] = g
            smass[ti, s] = cond[g] * inv
            since[ti, s] = cur
            if used < n_slots:
                used += 1
            if used == n_slots:
                ms, mn = _min_avg(ti, cur, spos, smass, since)
                thr = mn * total


@njit(nogil=True, cache=True)
def dense_to_slots(src_off, tgt_off, cell_off, marg, rev, pos, mass, null):
    """Dense marginals (cells,) -> per observed token the K most probable positions
    (pos, mass (T, K), ties to the lower position) and null (T,) = 1 - sum over positions.

    For the batched sampler, which accumulates dense marginals. Cost O(cells * K).
    """
    n_slots = pos.shape[1]
    t = 0
    for k in range(len(src_off) - 1):
        n_src = src_off[k + 1] - src_off[k]
        n_tgt = tgt_off[k + 1] - tgt_off[k]
        n_obs, n_gen = (n_src, n_tgt) if rev else (n_tgt, n_src)
        co = cell_off[k]
        for x in range(n_obs):
            tot = 0.0
            for g in range(n_gen):
                p = marg[co + (x * n_gen + g if rev else g * n_obs + x)]
                tot += p
                s = n_slots
                while s > 0 and (pos[t, s - 1] < 0 or mass[t, s - 1] < p):
                    s -= 1
                if s < n_slots:  # insert at s, shifting the smaller ones down
                    for r in range(n_slots - 1, s, -1):
                        pos[t, r] = pos[t, r - 1]
                        mass[t, r] = mass[t, r - 1]
                    pos[t, s] = g
                    mass[t, s] = p
            null[t] = max(0.0, 1.0 - tot) if n_gen > 0 else 0.0
            t += 1
