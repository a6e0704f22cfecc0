"""Viterbi of the Och-Ney alignment HMM on CPU (numba), per item: the same path and score as
`aligners.lattices.alignment_hmm.alignment_hmm_viterbi` (same potentials, same operations in
the same order: tested bit for bit). Shapes as there. Cost O(B J I^2) time without (B, I, I)
temporaries, O(J I) backpointers per item. Used by the phrasal aligner's mining pass.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from aligners.lattices.alignment_hmm import AlignmentHMMViterbi, _check, _viterbi_potentials
from aligners.semirings import log_or_zero, semiring_zero

__all__ = ["alignment_hmm_viterbi_cpu"]


@njit(cache=True)
def _item(dw0, dn0, ltrans, lw, ln, log_p0, valid, neg, T, states):
    I = dw0.shape[0]
    dw = dw0.copy()
    dn = dn0.copy()
    arg = np.zeros((max(T - 1, 0), I), dtype=np.int64)
    nul = np.zeros((max(T - 1, 0), I), dtype=np.bool_)
    m = np.empty_like(dw)
    top = np.empty_like(dw)  # best predecessor score per next position i
    at = np.zeros(I, dtype=np.int64)
    for j in range(1, T):
        for k in range(I):
            nul[j - 1, k] = dn[k] > dw[k]
            m[k] = max(dw[k], dn[k])
        # predecessors k in increasing order, positions i innermost (contiguous rows of
        # ltrans, vectorised); a strictly greater score replaces: the first maximum wins
        for i in range(I):
            top[i] = m[0] + ltrans[0, i]
            at[i] = 0
        for k in range(1, I):
            mk = m[k]
            for i in range(I):
                v = mk + ltrans[k, i]
                if v > top[i]:
                    top[i] = v
                    at[i] = k
        for i in range(I):
            arg[j - 1, i] = at[i]
            dn[i] = (m[i] + log_p0) + ln[j] if valid[i] else neg
            dw[i] = top[i] + lw[j, i]
    best = dw[0]
    z = 0
    for s in range(1, 2 * I):
        v = dw[s] if s < I else dn[s - I]
        if v > best:
            best = v
            z = s
    states[T - 1] = z
    for j in range(T - 1, 0, -1):
        p = arg[j - 1, z] if z < I else z - I
        z = p + I if nul[j - 1, p] else p
        states[j - 1] = z
    return best


@njit(cache=True)
def _batch(dw0, dn0, ltrans, lw, ln, log_p0, valid, neg, tl, states, score):
    for b in range(dw0.shape[0]):
        score[b] = _item(dw0[b], dn0[b], ltrans[b], lw[b], ln[b], log_p0, valid[b], neg, tl[b],
                         states[b])


def alignment_hmm_viterbi_cpu(link_probs: torch.Tensor | None, null_probs: torch.Tensor,
                              jump_scores: torch.Tensor, *, src_lengths: torch.Tensor,
                              tgt_lengths: torch.Tensor, p0: float,
                              log_links: torch.Tensor | None = None) -> AlignmentHMMViterbi:
    """`alignment_hmm_viterbi` on CPU tensors (see the module docstring): states (B, J)
    (i word, I+i NULL, -1 past the target length) and score (B,). `log_links` (B, J, I):
    instead of `link_probs` (then None), their `log_or_zero` already transposed, e.g.
    gathered from a log table (no (B, I, J) log pass and transposed copy); overwritten."""
    if (link_probs is None) == (log_links is None):
        raise ValueError("give link_probs or log_links (exactly one)")
    _check(link_probs if log_links is None else log_links.transpose(1, 2), null_probs,
           jump_scores, src_lengths, tgt_lengths)
    if log_links is None:
        log_links = log_or_zero(link_probs.transpose(1, 2))
    B, J, I = log_links.shape
    dtype = log_links.dtype
    neg = semiring_zero(dtype)
    valid, lw, ln, log_p0, ltrans, dw, dn = _viterbi_potentials(
        log_links, null_probs, jump_scores, src_lengths, p0)
    npdt = np.float64 if dtype == torch.float64 else np.float32

    def a(x):
        return np.ascontiguousarray(x.detach().numpy(), dtype=npdt)

    states = np.full((B, J), -1, dtype=np.int64)
    score = np.zeros(B, dtype=npdt)
    _batch(a(dw), a(dn), a(ltrans), a(lw), a(ln), npdt(log_p0.item()),
           np.ascontiguousarray(valid.numpy()), npdt(neg), np.ascontiguousarray(
               tgt_lengths.numpy(), dtype=np.int64), states, score)
    return AlignmentHMMViterbi(torch.from_numpy(states), torch.from_numpy(score))
