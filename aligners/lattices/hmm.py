"""Factored HMM lattice: `init (B,C)`, `trans (B,C,C)`, `emit (B,N,C)`.

``log_trans[b, c_prev, c_next]`` (shared by all positions); keyword-only ``lengths (B,)`` in
[1, N] (padding contributes exactly 0) and ``state_mask (B,C)`` bool (masked states get
probability 0). Posteriors: a scaled forward-backward in probability space with batched
matmuls; items whose per-step scale underflows are recomputed exactly in log space.
"""

from typing import NamedTuple

import torch

from aligners.lattices._core import fill_segments, recompute, sample_categorical
from aligners.lattices._factored import (
    FromGradients,
    bad_rows,
    clean_factored,
    finite_shift,
    logspace_grads,
    needs_grad,
)
from aligners.lattices.hsmm import _logspace_forward, _viterbi

__all__ = [
    "HMMPosteriors",
    "hmm_log_likelihood",
    "hmm_posteriors",
    "hmm_sample",
    "hmm_viterbi",
]


class HMMPosteriors(NamedTuple):
    """log_likelihood (B,); state_posteriors (B,N,C); transition_counts (B,C,C) summed over
    positions (entry [b, c_prev, c_next])."""

    log_likelihood: torch.Tensor
    state_posteriors: torch.Tensor
    transition_counts: torch.Tensor


def _scaled_forward(cl):
    """Scaled forward: shifted emission probabilities E (B,N,C), scaled transitions Tc,
    normalised forward variables A (B,N,C), per-step scales c (B,N), log Z (B,) and the
    items whose scales underflow (B,) bool (they go to the log-space fallback).

    Transitions are shifted by their per-item maximum, which is folded into the shifts, so
    the forward step is `u_n = (alpha_{n-1} @ Tc) * E_n` exactly.
    (A whole-matrix max is a cheap contiguous reduction; terms it underflows are below the
    trusted floor (`bad_rows`) relative to the step's total, else the item falls back.)
    """
    trans = cl.trans
    flat = trans.flatten(-2)
    tmax = finite_shift(flat, -1)  # (B,1)
    tc = torch.exp(flat - tmax).view_as(trans)
    le = cl.emit.clone()
    le[:, 0] += cl.init
    le[:, 1:] += tmax.unsqueeze(1)
    shift = finite_shift(le, -1)
    E = torch.exp(le - shift)
    alpha = E[:, 0]
    c = alpha.sum(-1, keepdim=True)
    alpha = alpha / c
    alphas, scales = [alpha], [c]
    for e in E.unbind(1)[1:]:
        u = torch.bmm(alpha.unsqueeze(1), tc).squeeze(1).mul_(e)
        c = u.sum(-1, keepdim=True)
        alpha = u.div_(c)
        alphas.append(alpha)
        scales.append(c)
    c = torch.cat(scales, 1)
    logz = torch.where(cl.pos_mask, torch.log(c) + shift.squeeze(-1), torch.zeros_like(c)).sum(1)
    return E, tc, torch.stack(alphas, 1), c, logz, bad_rows(c, cl.pos_mask, E.shape[-1])


def _fast_fb(cl):
    """Scaled forward-backward. Returns (logZ, gamma, transition counts, bad (B,) bool)."""
    B, N, C = cl.emit.shape
    E, tc, A, c, logz, bad = _scaled_forward(cl)
    G = E / c.unsqueeze(-1)
    # beta_{L-1} = 1 for each item; betas past an item's end are a well-scaled by-product
    # (never read: gamma and the counts mask them), so only items ending at n are reset.
    ends: dict[int, list[int]] = {}
    for b, last in enumerate((cl.lengths - 1).tolist()):
        if last < N - 1:
            ends.setdefault(last, []).append(b)
    ends_t = {n: torch.tensor(v, device=E.device) for n, v in ends.items()}
    beta = torch.ones(B, C, dtype=E.dtype, device=E.device)
    betas = [beta]
    # beta_n = Tc @ g_{n+1}, computed as g^T Tc^T: a (B,1,C)x(B,C,C) bmm is the fast layout
    tct = tc.transpose(-1, -2).contiguous()
    g_all = G.unbind(1)
    for n in range(N - 2, -1, -1):
        g = g_all[n + 1] * beta
        beta = torch.bmm(g.unsqueeze(1), tct).squeeze(1)
        if n in ends_t:
            beta.index_fill_(0, ends_t[n], 1.0)
        betas.append(beta)
    betas.reverse()
    Bt = torch.stack(betas, 1)
    pmf = cl.pos_mask.unsqueeze(-1).to(E.dtype)
    gamma = A * Bt * pmf
    bad = bad | ~torch.isfinite(gamma.sum((1, 2)))  # non-finite iff an entry is (or huge)
    Gs = G[:, 1:] * Bt[:, 1:] * pmf[:, 1:]
    xi = torch.bmm(A[:, :-1].transpose(1, 2), Gs).mul_(tc)
    return logz, gamma, xi, bad


def _logspace_log_likelihood(log_init, log_trans, log_emit, lengths):
    """Plain log-space forward (differentiable by autograd; O(B·N·C²) autograd memory): the
    HSMM's with one-position segments. Reference and exact fallback: (B,C), (B,C,C), (B,N,C)
    -> (B,)."""
    return _logspace_forward(log_init, log_trans, log_emit[:, :, None], lengths)[0]


def _posteriors(cl):
    """(log Z, gamma, xi) by the scaled forward-backward; items whose scales underflow are
    recomputed in log space by autograd (rare)."""
    logz, gamma, xi, bad = _fast_fb(cl)

    def exact(idx):
        z, _, gt, ge = logspace_grads(lambda *x: (_logspace_log_likelihood(*x),), cl, idx)
        return z, ge * cl.pos_mask[idx].unsqueeze(-1), gt

    return recompute(bad, exact, logz, gamma, xi)


def hmm_posteriors(log_init, log_trans, log_emit, *, lengths=None, state_mask=None):
    """(B,C), (B,C,C), (B,N,C) -> HMMPosteriors((B,), (B,N,C), (B,C,C)).

    Cost: O(B·N·C²) time (batched matmuls), O(B·N·C + B·C²) memory; (B,N,C,C) is never
    materialised. Expected transition counts are summed over positions. Equal to the
    gradients of the log-likelihood w.r.t. `log_emit` and `log_trans`. No autograd graph is
    built.
    """
    cl = clean_factored(log_init, log_trans, log_emit, lengths, state_mask)
    logz, gamma, xi = _posteriors(cl)
    return HMMPosteriors(logz, gamma, xi)


def _log_likelihood_grads(log_init, log_trans, log_emit, lengths, state_mask):
    """(log Z, d/d log_init, d/d log_trans, d/d log_emit) by the scaled forward-backward."""
    cl = clean_factored(log_init, log_trans, log_emit, lengths, state_mask)
    logz, gamma, xi = _posteriors(cl)
    return logz, gamma[:, 0], xi, gamma


def hmm_log_likelihood(log_init, log_trans, log_emit, *, lengths=None, state_mask=None):
    """(B,C), (B,C,C), (B,N,C) -> log-likelihood (B,).

    Cost: forward only, O(B·N·C²) time, O(B·N·C) memory. Differentiable: when an input
    requires grad, the backward is the scaled forward-backward (gradient = posteriors).
    """
    if needs_grad(log_init, log_trans, log_emit):
        return FromGradients.apply(_log_likelihood_grads, log_init, log_trans, log_emit, lengths,
                                   state_mask)
    cl = clean_factored(log_init, log_trans, log_emit, lengths, state_mask)
    *_, logz, bad = _scaled_forward(cl)

    def exact(idx):
        z = _logspace_log_likelihood(cl.init[idx], cl.trans[idx], cl.emit[idx], cl.lengths[idx])
        return (z.nan_to_num(nan=float("-inf"), neginf=float("-inf")),)

    return recompute(bad, exact, logz)[0]


def hmm_viterbi(log_init, log_trans, log_emit, *, lengths=None, state_mask=None):
    """(B,C), (B,C,C), (B,N,C) -> (path (B,N) long, -1 past length; score (B,)).

    Cost: O(B·N·C²) time with a (B,C,C) temporary per step, O(B·N·C) memory (backpointers).
    Exact max-product in log space: the HSMM's with one-position segments (its backtrack is
    `_core.backtrack`, vectorised over the batch, no host sync). An impossible item (score
    -inf) gets an arbitrary path.
    """
    cl = clean_factored(log_init, log_trans, log_emit, lengths, state_mask)
    labels, _, score = _viterbi(cl._replace(emit=cl.emit[:, :, None]))
    return fill_segments(labels), score


def hmm_sample(
    log_init,
    log_trans,
    log_emit,
    *,
    generator: torch.Generator,
    num_samples: int = 1,
    lengths=None,
    state_mask=None,
):
    """(B,C), (B,C,C), (B,N,C) -> exact posterior samples (S,B,N) long, -1 past
    length. Forward filter (scaled, as in `hmm_posteriors`), backward sample.

    Cost: O(B·N·C²) forward + O(S·B·N·C) sampling time; O(B·N·C + S·B·C) memory.
    Reproducible from `generator` (on the tensors' device). Impossible items (log-likelihood
    -inf) get arbitrary states.
    """
    if num_samples < 1:
        raise ValueError("num_samples must be >= 1")
    cl = clean_factored(log_init, log_trans, log_emit, lengths, state_mask)
    B, N, C = cl.emit.shape
    _, _, A, _, _, bad = _scaled_forward(cl)
    # the exact log-space filter for the few items whose scales underflowed
    (logA,) = recompute(bad, lambda idx: (_logspace_filter(cl, idx),), torch.log(A))
    S = num_samples
    dev = cl.emit.device
    ltt = cl.trans.transpose(-1, -2)  # [b, c_next, c_prev]
    bidx = torch.arange(B, device=dev).expand(S, B)
    out = torch.full((S, B, N), -1, dtype=torch.long, device=dev)
    z = torch.zeros(S, B, dtype=torch.long, device=dev)
    L = cl.lengths
    for n in range(N - 1, -1, -1):
        w = logA[:, n].expand(S, B, C)
        if n < N - 1:
            w = torch.where((n < L - 1)[None, :, None], w + ltt[bidx, z], w)
        draw = sample_categorical(w, generator=generator)
        live = (n < L)[None, :]
        z = torch.where(live, draw, z)
        out[:, :, n] = torch.where(live, z, out[:, :, n])
    return out


def _logspace_filter(cl, idx):
    """Filtered log-probabilities log p(z_n | x_<=n) (b,N,C) in log space for items idx."""
    init, trans, emit = cl.init[idx], cl.trans[idx], cl.emit[idx]
    a = init + emit[:, 0]
    outs = [torch.log_softmax(a, -1)]
    for n in range(1, emit.shape[1]):
        a = torch.logsumexp(a.unsqueeze(2) + trans, 1) + emit[:, n]
        a = a - torch.logsumexp(a, -1, keepdim=True)
        outs.append(a)
    return torch.stack(outs, 1).nan_to_num(nan=float("-inf"), neginf=float("-inf"))
