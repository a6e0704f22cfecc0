"""Sparse Rao-Blackwellised link marginals of the Bayesian aligner: K slots per observed
token (position, summed probability, the accumulating sweep it entered at) plus the token's
exact NULL mass, instead of one float per (source x target) cell.

`_accumulate` is called by the sampler's sweep (sampler.py) for every token of an
accumulating sweep. Arrays: pos (T, K) int16/int32 (-1 = free), mass (T, K)
float32, since (T, K) uint16/int32, null (T,) float32 for the T observed tokens of one
direction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from aligners.models.bayesian.corpus import EncodedBitext

__all__ = ["TokenMarginals", "BayesMarginals", "new_slots"]


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


@dataclass
class TokenMarginals:
    """Sparse averaged link marginals of one direction, per observed token t (T tokens):
    pos (T, K) int16/int32 generator positions (-1 = free slot), mass (T, K) float32 their
    probabilities p(a_t = pos), null (T,) float32 p(a_t = NULL). Memory 6-8 bytes per slot
    plus 4 per token (no per-cell array)."""

    pos: np.ndarray
    mass: np.ndarray
    null: np.ndarray


@dataclass
class BayesMarginals:
    """fwd, rev TokenMarginals: p(a_j = i) per target token j and p(a_i = j) per source token
    i (Rao-Blackwellised, averaged over samplers and post-burn-in sweeps), kept sparse.

    The corpus's per-cell pair ids are released (empty) once sampling is done. (Dense views
    for small corpora: tests/bayes_dense.py.)"""

    corpus: EncodedBitext
    fwd_slots: TokenMarginals
    rev_slots: TokenMarginals
    schedule: list[int] = field(default_factory=list)


def new_slots(n_tokens: int, n_slots: int, max_gen: int) -> TokenMarginals:
    """Empty TokenMarginals: n_slots free slots per token for n_tokens observed tokens
    (positions int16 when every generator sentence is shorter than 2^15, else int32)."""
    dt = np.int16 if max_gen < np.iinfo(np.int16).max else np.int32
    return TokenMarginals(np.full((n_tokens, n_slots), -1, dt),
                          np.zeros((n_tokens, n_slots), np.float32),
                          np.zeros(n_tokens, np.float32))
