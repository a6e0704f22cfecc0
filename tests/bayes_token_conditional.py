"""A test helper (no part of the package): the conditional of one token of the Bayesian
aligner's exact sampler (aligners/models/bayesian/sampler.py describes the model and the
count layout), on its own: `token_conditional` removes the token's counts, fills its
conditional with the sweep's own functions (`_ibm1_conditional`, `_hmm_conditional`, from
freshly computed position factors) and puts the counts back. The tests check it against
brute-force enumeration, and `sampler.sweep` (whose position factors are kept up to date
incrementally) against a token-by-token sweep through it. Cost O(I + J) per call.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligners.models.bayesian.sampler import (
    _hmm_conditional,
    _ibm1_conditional,
    _neighbours,
    _row,
    _update,
    _weight,
)

__all__ = ["token_conditional"]


@njit(nogil=True, cache=True, error_model="numpy")
def token_conditional(k, x, gen_flat, gen_off, obs_flat, obs_off, cell_off, pair_lo, pair_hi,
                      rev, a, phi, lex, lex_den, null_lex, null_den, jump, jump_tot, fert, lex_inv,
                      fert_ratio, stage, p_null,
                      lex_alpha, lex_alpha_v, null_alpha, null_alpha_v, jump_alpha,
                      jump_alpha_b, fert_alpha, max_jump, max_fert, out):
    """Conditional of token x of sentence k into out (I + 1,): positions, NULL, up to a
    common factor (as the sweep computes it). Removes the token's counts first and puts them
    back after: the state is unchanged. Cost O(I + J)."""
    gs = gen_off[k]
    n_gen = gen_off[k + 1] - gs
    os_ = obs_off[k]
    n_obs = obs_off[k + 1] - os_
    co = cell_off[k]
    t = obs_flat[os_ + x]
    old = a[os_ + x]
    prev, nxt = -1, n_gen
    if stage >= 2:
        prev, nxt = _neighbours(a, os_, x, n_obs, n_gen)
    cb, gstep = _row(co, x, n_gen, n_obs, rev)
    _update(-1, old, t, gs, cb, gstep, prev, nxt, lex.shape[0], stage, gen_flat, pair_lo,
            pair_hi, phi, lex, lex_den, null_lex, null_den, jump, jump_tot, fert, max_jump,
            max_fert, lex_inv, fert_ratio, lex_alpha_v, fert_alpha)
    w = np.empty(n_gen)
    for g in range(n_gen):
        w[g] = _weight(g, gs, gen_flat, phi, lex_inv, fert_ratio, stage, max_fert)
    if stage == 1:
        _ibm1_conditional(out, w, t, n_gen, cb, gstep, lex.shape[0], lex, pair_lo, pair_hi,
                          null_lex, null_den, p_null, lex_alpha, null_alpha, null_alpha_v)
    else:
        _hmm_conditional(out, w, t, n_gen, cb, gstep, lex.shape[0], prev, nxt, lex, pair_lo,
                         pair_hi, null_lex, null_den, jump, jump_tot, p_null, lex_alpha,
                         null_alpha, null_alpha_v, jump_alpha, jump_alpha_b, max_jump)
    _update(1, old, t, gs, cb, gstep, prev, nxt, lex.shape[0], stage, gen_flat, pair_lo,
            pair_hi, phi, lex, lex_den, null_lex, null_den, jump, jump_tot, fert, max_jump,
            max_fert, lex_inv, fert_ratio, lex_alpha_v, fert_alpha)
