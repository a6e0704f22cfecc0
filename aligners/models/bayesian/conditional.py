"""The reference conditional of one token of the Bayesian aligner's exact sampler
(sampler.py describes the model and the count layout): `token_conditional` removes the
token's counts, fills its unnormalised conditional and puts the counts back. The tests check
it against brute-force enumeration and `sampler.sweep`'s inlined conditional against it.
Cost O(I + J) per call.
"""

from __future__ import annotations

from numba import njit

from aligners.models.bayesian.sampler import _bucket, _cell, _neighbours, _pid, _row, _update

__all__ = ["token_conditional"]


@njit(nogil=True, cache=True, error_model="numpy")
def token_conditional(k, x, gen_flat, gen_off, obs_flat, obs_off, cell_off, pair_lo, pair_hi,
                      rev, a, phi, lex, lex_den, null_lex, null_den, jump, jump_tot, fert, lex_inv,
                      fert_ratio, stage, p_null,
                      lex_alpha, lex_alpha_v, null_alpha, null_alpha_v, jump_alpha,
                      jump_alpha_b, fert_alpha, max_jump, max_fert, out):
    """Unnormalised conditional of token x of sentence k into out (I + 1,): positions, NULL.

    Removes the token's counts first and puts them back after: the state is unchanged.
    Cost O(I + J).
    """
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
    _fill(out, t, gs, co, n_gen, n_obs, rev, x, prev, nxt, stage, gen_flat, pair_lo, pair_hi, phi,
          lex, lex_inv, null_lex, null_den, jump, jump_tot, fert_ratio, p_null, lex_alpha,
          lex_alpha_v, null_alpha, null_alpha_v, jump_alpha, jump_alpha_b, fert_alpha, max_jump,
          max_fert)
    _update(1, old, t, gs, cb, gstep, prev, nxt, lex.shape[0], stage, gen_flat, pair_lo,
            pair_hi, phi, lex, lex_den, null_lex, null_den, jump, jump_tot, fert, max_jump,
            max_fert, lex_inv, fert_ratio, lex_alpha_v, fert_alpha)


@njit(nogil=True, cache=True, error_model="numpy")
def _fill(out, t, gs, co, n_gen, n_obs, rev, x, prev, nxt, stage, gen_flat, pair_lo, pair_hi, phi,
          lex, lex_inv, null_lex, null_den, jump, jump_tot, fert_ratio, p_null, lex_alpha,
          lex_alpha_v, null_alpha, null_alpha_v, jump_alpha, jump_alpha_b, fert_alpha, max_jump,
          max_fert):
    """Unnormalised conditional (I + 1,) from the base counts (token and its jumps removed);
    returns its sum."""
    inv1 = 1.0
    inv2 = 1.0
    if stage >= 2:
        tot = jump_tot[0] + jump_alpha_b
        inv1 = 1.0 / tot
        inv2 = 1.0 / (tot + 1.0)
    uniform = (1.0 - p_null) / n_gen
    total = 0.0
    for g in range(n_gen):
        e = gen_flat[gs + g]
        c = co + _cell(g, x, n_gen, n_obs, rev)
        pr = (lex_alpha + lex[_pid(pair_lo, pair_hi, c)]) * lex_inv[e]
        if stage == 1:
            pr *= uniform
        else:
            b1 = _bucket(g - prev, max_jump)
            b2 = _bucket(nxt - g, max_jump)
            c2 = jump[b2] + (1.0 if b1 == b2 else 0.0)
            pr *= (1.0 - p_null) * (jump_alpha + jump[b1]) * inv1 * (jump_alpha + c2) * inv2
            if stage >= 3:
                f = phi[gs + g]
                if f < max_fert:
                    pr *= fert_ratio[e, f]
        out[g] = pr
        total += pr
    pn = p_null * (null_alpha + null_lex[t]) / (null_alpha_v + null_den[0])
    if stage >= 2:
        pn *= (jump_alpha + jump[_bucket(nxt - prev, max_jump)]) * inv1
    out[n_gen] = pn
    return total + pn
