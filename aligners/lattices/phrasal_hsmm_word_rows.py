"""The phrasal HSMM lattice on rows without a phrase state, on CPU (numba): the Och-Ney
alignment HMM's scaled forward-backward per item, without per-position torch calls.

Shapes: link_probs (B, S, O) state x observation (any strides, e.g. a transposed view),
null_probs (B, O), jump_scores (S+1, S) shared by the batch, src_lengths (B,) in [1, S]
(states), tgt_lengths (B,) in [1, O] (observations); the model of
`aligners.lattices.alignment_hmm` (same transitions, emissions and NULL states). Returns
(log_likelihood (B,), link posteriors (B, S, O), NULL posteriors (B, O)) in the input dtype,
0 on padding; no jump counts (the phrasal aligner keeps its jump weights fixed). Cost
O(B O S^2) time as per-item axpy loops (vectorised rows), O(O S) extra memory per item,
float64 inside. The same numbers as `alignment_hmm_posteriors` up to rounding (tested to
1e-12 in float64; float32 inputs give float32-rounded results of a float64 computation,
not torch's GEMM order). Used by `aligners.models.phrasal.routing` for the word rows of
an EM iteration: at Hansards 200k those rows are ~a hundred thousand short sentences,
where the torch recursion spends most of its time launching small per-position kernels.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["word_rows_posteriors_cpu"]


@njit(cache=True)
def _item(link, null, S, I, J, p0, out_l, out_n):
    """One item: link (>=I, >=J), null (>=J), S (>=I+1, >=I) jump scores; writes the
    posteriors into out_l (I, J) / out_n (J,) views; returns the log-likelihood."""
    tiny = 2.2250738585072014e-308
    q = 1.0 - p0
    norm0 = 0.0
    for i in range(I):
        norm0 += S[0, i]
    norm0 = max(norm0, tiny)
    T = np.empty((I, I))  # T[k, i] = (1 - p0) S[k+1, i] / Z[k+1]: word k -> word i
    TT = np.empty((I, I))  # its transpose (contiguous rows for the backward axpy)
    for k in range(I):
        z = 0.0
        for i in range(I):
            z += S[k + 1, i]
        z = max(z, tiny)
        for i in range(I):
            T[k, i] = q * S[k + 1, i] / z
            TT[i, k] = T[k, i]
    ew = np.empty((J, I))
    en = np.empty(J)
    loglik = 0.0
    for j in range(J):
        m = float(null[j])
        for i in range(I):
            x = float(link[i, j])
            ew[j, i] = x
            if x > m:
                m = x
        m = max(m, tiny)
        for i in range(I):
            ew[j, i] /= m
        en[j] = null[j] / m
        loglik += np.log(m)
    Aw = np.empty((J, I))
    An = np.empty((J, I))
    c = np.empty(J)
    tot = 0.0
    for i in range(I):
        Aw[0, i] = q * S[0, i] / norm0 * ew[0, i]
        An[0, i] = p0 / I * en[0]
        tot += Aw[0, i] + An[0, i]
    tot = max(tot, tiny)
    c[0] = tot
    for i in range(I):
        Aw[0, i] /= tot
        An[0, i] /= tot
    u = np.empty(I)
    for j in range(1, J):
        u[:] = 0.0
        for k in range(I):
            s = Aw[j - 1, k] + An[j - 1, k]
            An[j, k] = s * p0 * en[j]
            for i in range(I):
                u[i] += s * T[k, i]
        tot = 0.0
        for i in range(I):
            Aw[j, i] = u[i] * ew[j, i]
            tot += Aw[j, i] + An[j, i]
        tot = max(tot, tiny)
        c[j] = tot
        for i in range(I):
            Aw[j, i] /= tot
            An[j, i] /= tot
    for j in range(J):
        loglik += np.log(c[j])
    beta = np.ones(I)
    gw = np.empty(I)
    acc = np.empty(I)
    for j in range(J - 1, -1, -1):
        nul = 0.0
        for i in range(I):
            out_l[i, j] = Aw[j, i] * beta[i]
            nul += An[j, i] * beta[i]
        out_n[j] = nul
        if j == 0:
            break
        acc[:] = 0.0
        for i in range(I):  # beta_{j-1}[k] = p0 en[j] g[k] + sum_i T[k, i] ew[j, i] g[i]
            g = beta[i] / c[j]
            gw[i] = ew[j, i] * g
            beta[i] = g * p0 * en[j]
        for i in range(I):
            gi = gw[i]
            for k in range(I):
                acc[k] += TT[i, k] * gi
        for k in range(I):
            beta[k] += acc[k]
    return loglik


@njit(cache=True)
def _batch(link, null, S, sl, tl, p0, out_l, out_n, ll):
    for b in range(link.shape[0]):
        ll[b] = _item(link[b], null[b], S, sl[b], tl[b], p0, out_l[b], out_n[b])


def word_rows_posteriors_cpu(link_probs: torch.Tensor, null_probs: torch.Tensor,
                             jump_scores: torch.Tensor, *, src_lengths: torch.Tensor,
                             tgt_lengths: torch.Tensor, p0: float):
    """(log_likelihood (B,), link posteriors (B, S, O), NULL posteriors (B, O)) of CPU
    tensors (no autograd); see the module docstring."""
    B, S, O = link_probs.shape
    if null_probs.shape != (B, O) or jump_scores.shape != (S + 1, S):
        raise ValueError(f"word_rows_posteriors_cpu: null_probs must be (B, O) = {(B, O)} and "
                         f"jump_scores (S+1, S) = {(S + 1, S)}")
    dt = link_probs.dtype
    post = torch.zeros(B, S, O, dtype=torch.float64)
    npost = torch.zeros(B, O, dtype=torch.float64)
    ll = np.zeros(B)
    _batch(link_probs.detach().numpy(), null_probs.detach().numpy(),
           jump_scores.detach().to(torch.float64).numpy(),
           src_lengths.numpy().astype(np.int64), tgt_lengths.numpy().astype(np.int64), float(p0),
           post.numpy(), npost.numpy(), ll)
    return torch.from_numpy(ll).to(dt), post.to(dt), npost.to(dt)
