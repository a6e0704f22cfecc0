"""The phrasal HSMM lattice on rows without a phrase state, on CPU (numba): the Och-Ney
alignment HMM's scaled forward-backward, all items in lockstep in one compiled call.

Shapes: link_probs (B, S, O) state x observation (any strides, e.g. a transposed view),
null_probs (B, O), jump_scores (S+1, S) shared by the batch, src_lengths (B,) in [1, S]
(states), tgt_lengths (B,) in [1, O] (observations); the model of
`aligners.lattices.alignment_hmm` (same transitions, emissions and NULL states, same
scaling). Returns (log_likelihood (B,), link posteriors (B, S, O), NULL posteriors (B, O))
in the input dtype, 0 on padding; no jump counts (the phrasal aligner keeps its jump
weights fixed). Cost O(B O S^2) time, O(B O S) memory: time-major (O, S, B) buffers with
the item index innermost, so each position's (B, S) x (S, S) product is S^2 vectorised
axpys over the items and the elementwise passes are fused (no per-position torch calls).
Each item's arithmetic runs in the same order whatever the batch (batched == one-by-one
bit for bit); the same numbers as `alignment_hmm_posteriors` up to float rounding (tested
to 1e-12 in float64, 2e-6 in float32; not torch's GEMM order). Used by
`aligners.models.phrasal.routing` for the word rows of an EM iteration.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["word_rows_posteriors_cpu"]


@njit(cache=True)
def _lockstep(link, null, S, sl, tl, p0, out_l, out_n, ll):
    """All items position by position, item index innermost (contiguous, vectorised):
    buffers (J, I, B) time-major as the torch recursion's, each step's (B, I) x (I, I)
    product as I^2 axpys over the items. Ragged items: padded states have zero emission
    and zero 1/Z; an item past its last position keeps its forward masses (scale 1) and
    its backward masses are 1 up to its last position, as in `alignment_hmm`."""
    B, I, J = link.shape
    dt = out_l.dtype
    tiny = 1.1754943508222875e-38
    q = 1.0 - p0
    inv = np.zeros((I, B), dtype=dt)  # 1 / Z[k+1] per item (0 on padded states)
    T = np.empty((I, I), dtype=dt)  # (1 - p0) S[k+1, i]
    for k in range(I):
        for i in range(I):
            T[k, i] = q * S[k + 1, i]
    a0 = np.zeros((I, B), dtype=dt)  # first-position word weights (1 - p0) S[0, i] / Z[0]
    for b in range(B):
        n = sl[b]
        z0 = 0.0
        for i in range(n):
            z0 += S[0, i]
        for i in range(n):
            a0[i, b] = q * S[0, i] / max(z0, tiny)
        for k in range(n):
            z = 0.0
            for i in range(n):
                z += S[k + 1, i]
            inv[k, b] = 1.0 / max(z, tiny)
    ew = np.zeros((J, I, B), dtype=dt)
    en = np.zeros((J, B), dtype=dt)
    shift = np.ones((J, B), dtype=dt)
    for b in range(B):
        for j in range(tl[b]):
            m = null[b, j]
            for i in range(sl[b]):
                m = max(m, link[b, i, j])
            m = max(m, tiny)
            shift[j, b] = m
            for i in range(sl[b]):
                ew[j, i, b] = link[b, i, j] / m
            en[j, b] = null[b, j] / m
    Aw = np.zeros((J, I, B), dtype=dt)
    An = np.zeros((J, I, B), dtype=dt)
    c = np.ones((J, B), dtype=dt)
    tot = np.zeros(B, dtype=dt)
    for i in range(I):
        for b in range(B):
            Aw[0, i, b] = a0[i, b] * ew[0, i, b]
            An[0, i, b] = (p0 / sl[b]) * en[0, b] if i < sl[b] else 0.0
            tot[b] += Aw[0, i, b] + An[0, i, b]
    for b in range(B):
        c[0, b] = max(tot[b], tiny)
    for i in range(I):
        for b in range(B):
            Aw[0, i, b] /= c[0, b]
            An[0, i, b] /= c[0, b]
    x = np.empty((I, B), dtype=dt)
    u = np.empty((I, B), dtype=dt)
    for j in range(1, J):
        for k in range(I):
            for b in range(B):
                sv = Aw[j - 1, k, b] + An[j - 1, k, b]
                An[j, k, b] = sv * p0 * en[j, b]
                x[k, b] = sv * inv[k, b]
        u[:, :] = 0.0
        for k in range(I):
            for i in range(I):
                t = T[k, i]
                for b in range(B):
                    u[i, b] += x[k, b] * t
        tot[:] = 0.0
        for i in range(I):
            for b in range(B):
                Aw[j, i, b] = u[i, b] * ew[j, i, b]
                tot[b] += Aw[j, i, b] + An[j, i, b]
        for b in range(B):
            if j < tl[b]:
                c[j, b] = max(tot[b], tiny)
        for i in range(I):
            for b in range(B):
                if j < tl[b]:
                    Aw[j, i, b] /= c[j, b]
                    An[j, i, b] /= c[j, b]
                else:
                    Aw[j, i, b] = Aw[j - 1, i, b]
                    An[j, i, b] = An[j - 1, i, b]
    for b in range(B):
        acc = 0.0
        for j in range(tl[b]):
            acc += np.log(c[j, b]) + np.log(shift[j, b])
        ll[b] = acc
    beta = np.ones((I, B), dtype=dt)
    gw = np.empty((I, B), dtype=dt)
    for j in range(J - 1, -1, -1):
        for i in range(I):
            for b in range(B):
                if j < tl[b]:
                    out_l[b, i, j] = Aw[j, i, b] * beta[i, b]
                    out_n[b, j] += An[j, i, b] * beta[i, b]
        if j == 0:
            break
        # beta_{j-1}[k] = p0 en[j] g[k] + inv[k] sum_i (1 - p0) S[k+1, i] ew[j, i] g[i]
        for i in range(I):
            for b in range(B):
                g = beta[i, b] / c[j, b]
                gw[i, b] = ew[j, i, b] * g
                beta[i, b] = g * p0 * en[j, b]
        u[:, :] = 0.0
        for k in range(I):
            for i in range(I):
                t = T[k, i]
                for b in range(B):
                    u[k, b] += gw[i, b] * t
        for k in range(I):
            for b in range(B):
                if j - 1 >= tl[b] - 1:  # at or past the item's last position: 1
                    beta[k, b] = 1.0
                else:
                    beta[k, b] += inv[k, b] * u[k, b]


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
    post = torch.zeros(B, S, O, dtype=dt)
    npost = torch.zeros(B, O, dtype=dt)
    ll = torch.zeros(B, dtype=torch.float64)
    _lockstep(link_probs.detach().numpy(), null_probs.detach().numpy(),
           jump_scores.detach().to(dt).numpy(),
           src_lengths.numpy().astype(np.int64), tgt_lengths.numpy().astype(np.int64), float(p0),
           post.numpy(), npost.numpy(), ll.numpy())
    return ll.to(dt), post, npost
