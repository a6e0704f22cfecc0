"""Factored hidden semi-Markov lattice: `init (B,C)`, `trans (B,C,C)`, `seg_emit (B,N,K,C)`.

A structure segments positions 0..L-1 into labelled segments of length 1..K, scoring
``init[c_1] + sum_t trans[c_{t-1}, c_t] + sum_t seg_emit[end_t, len_t - 1, c_t]``
(``end_t`` inclusive; entries with k > n never read; rows of ``trans`` = previous state).
``lengths`` and ``state_mask`` as in `hmm`. The forward is scaled in probability space;
posteriors are its gradient (O(B·N·K·C) memory); items whose scales underflow are recomputed
in log space.
"""

from typing import NamedTuple

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._core import backtrack, fill_segments, recompute, sample_categorical
from aligners.lattices._factored import (
    FromGradients,
    autograd_grads,
    bad_rows,
    clean_factored,
    finite_shift,
    logspace_grads,
    needs_grad,
)

__all__ = [
    "HSMMPosteriors",
    "HSMMSamples",
    "HSMMViterbi",
    "hsmm_log_likelihood",
    "hsmm_posteriors",
    "hsmm_sample",
    "hsmm_viterbi",
]


class HSMMPosteriors(NamedTuple):
    """log_likelihood (B,); segment_posteriors (B,N,K,C) ([b,n,k,c]: segment ending at n,
    length k+1, state c); transition_counts (B,C,C) between consecutive segments."""

    log_likelihood: torch.Tensor
    segment_posteriors: torch.Tensor
    transition_counts: torch.Tensor


class HSMMViterbi(NamedTuple):
    """segments: per item a list of (start, end, state) with `end` exclusive;
    states (B,N) long, -1 past length; score (B,)."""

    segments: list
    states: torch.Tensor
    score: torch.Tensor


class HSMMSamples(NamedTuple):
    """states (S,B,N) long, -1 past length; ends (S,B,N) bool, True at each segment's last
    position (so adjacent segments in one state stay distinguishable)."""

    states: torch.Tensor
    ends: torch.Tensor


def _clean(log_init, log_trans, log_seg_emit, lengths, state_mask):
    if not isinstance(log_seg_emit, torch.Tensor) or log_seg_emit.dim() != 4:
        raise AlignersInputError("log_seg_emit: expected a (B,N,K,C) tensor")
    N, K = log_seg_emit.shape[1:3]
    dev = log_seg_emit.device
    before_start = torch.arange(K, device=dev)[None, :] > torch.arange(N, device=dev)[:, None]
    seg = log_seg_emit.detach().masked_fill(before_start[None, :, :, None], float("-inf"))
    return clean_factored(
        log_init, log_trans, seg, lengths, state_mask, emit_name="log_seg_emit",
        emit_extra_dims=1,
    )


def _scaled_forward(init, trans, seg, lengths):
    """Differentiable scaled forward. Returns (logZ (B,), per-step scales c (B,N),
    log-pred (B,N+1,C): log of sum_i alpha[m,i] trans[i,c] for m = -1..N-1 (m=-1: init))."""
    B, N, K, C = seg.shape
    cmax = finite_shift(trans.detach(), -2).squeeze(-2)  # column maxima over c_prev
    tc = torch.exp(trans - cmax.unsqueeze(-2))  # differentiable, shift held constant
    imax = finite_shift(init.detach(), -1)
    preds = [torch.exp(init - imax)]
    offs = [imax.squeeze(-1)]
    cms = [torch.zeros_like(cmax)]
    scales, logs = [], []
    for n, e in enumerate(seg.unbind(1)):
        kk = min(K, n + 1)
        P = torch.stack([preds[n - k] for k in range(kk)], 1)
        W = e[:, :kk] + torch.stack([cms[n - k] for k in range(kk)], 1)
        W = W + torch.stack([offs[n - k] for k in range(kk)], 1).unsqueeze(-1)
        sh = finite_shift(W.detach(), (1, 2)).view(B)
        u = (torch.exp(W - sh.view(B, 1, 1)) * P).sum(1)
        c = u.sum(-1, keepdim=True)
        alpha = u / c
        ls = sh + torch.log(c.squeeze(-1))
        preds.append(torch.bmm(alpha.unsqueeze(1), tc).squeeze(1))
        offs.append(ls)
        cms.append(cmax)
        scales.append(c)
        logs.append(ls)
    L = torch.stack(logs, 1)
    logz = L.gather(1, (lengths - 1)[:, None]).squeeze(1)
    with torch.no_grad():
        logpred = torch.log(torch.stack(preds, 1)) + torch.stack(cms, 1)
        logpred = logpred + torch.stack(offs, 1).unsqueeze(-1)
    return logz, torch.cat(scales, 1), logpred


def _logspace_forward(init, trans, seg, lengths):
    """Plain log-space forward (reference and exact fallback); same returns as
    `_scaled_forward` except that the scales are None."""
    B, N, K, C = seg.shape
    lpred = [init]
    las = []
    for n, e in enumerate(seg.unbind(1)):
        kk = min(K, n + 1)
        P = torch.stack([lpred[n - k] for k in range(kk)], 1)
        la = torch.logsumexp(e[:, :kk] + P, 1)
        las.append(la)
        lpred.append(torch.logsumexp(la.unsqueeze(2) + trans, 1))
    A = torch.stack(las, 1)
    last = A.gather(1, (lengths - 1).view(B, 1, 1).expand(B, 1, C)).squeeze(1)
    return torch.logsumexp(last, -1), None, torch.stack(lpred, 1).detach()


def _posteriors(cl):
    """(log Z, d/d init, d/d trans, d/d seg) by autograd of the scaled forward; items whose
    scales underflow (or whose gradients are not finite) by autograd in log space."""
    tensors = (cl.init, cl.trans, cl.emit)
    logz, (c, _), (gi, gt, ge) = autograd_grads(_scaled_forward, tensors, cl.lengths)
    bad = bad_rows(c.detach(), cl.pos_mask, cl.emit.shape[-1])
    bad = bad | ~torch.isfinite(ge.sum((1, 2, 3))) | ~torch.isfinite(gt.sum((1, 2)))
    return recompute(bad, lambda idx: logspace_grads(_logspace_forward, cl, idx), logz, gi, gt, ge)


def hsmm_posteriors(log_init, log_trans, log_seg_emit, *, lengths=None, state_mask=None):
    """(B,C), (B,C,C), (B,N,K,C) -> HSMMPosteriors((B,), (B,N,K,C), (B,C,C)).

    Cost: O(B·N·(C² + K·C)) time, O(B·N·K·C + B·C²) memory. No graph is returned.
    """
    cl = _clean(log_init, log_trans, log_seg_emit, lengths, state_mask)
    logz, _, gt, ge = _posteriors(cl)
    return HSMMPosteriors(logz, ge, gt)


def hsmm_log_likelihood(log_init, log_trans, log_seg_emit, *, lengths=None, state_mask=None):
    """(B,C), (B,C,C), (B,N,K,C) -> log-likelihood (B,).

    Cost: forward only, O(B·N·(C² + K·C)) time. Differentiable (backward = posteriors).
    """
    if needs_grad(log_init, log_trans, log_seg_emit):
        return FromGradients.apply(lambda *x: _posteriors(_clean(*x)), log_init, log_trans,
                                   log_seg_emit, lengths, state_mask)
    cl = _clean(log_init, log_trans, log_seg_emit, lengths, state_mask)
    with torch.no_grad():
        logz, c, _ = _scaled_forward(cl.init, cl.trans, cl.emit, cl.lengths)
        bad = bad_rows(c, cl.pos_mask, cl.emit.shape[-1])
        return recompute(bad, lambda idx: logspace_grads(_logspace_forward, cl, idx), logz)[0]


def hsmm_viterbi(log_init, log_trans, log_seg_emit, *, lengths=None, state_mask=None):
    """(B,C), (B,C,C), (B,N,K,C) -> HSMMViterbi(segments, states (B,N), score (B,)).

    Cost: O(B·N·(C² + K·C)) time with a (B,C,C) temporary per step, O(B·N·C) backpointers;
    the backtrack is `_core.backtrack` (vectorised over the batch), then one host transfer
    builds the segment lists. Exact max-product in log space.
    """
    labels, seg_len, score = _viterbi(_clean(log_init, log_trans, log_seg_emit, lengths,
                                             state_mask))
    labels_l, seg_l = labels.tolist(), seg_len.tolist()  # one transfer for the output lists
    segments = [[(t - k, t, lab[t]) for t, k in enumerate(row) if k > 0]
                for lab, row in zip(labels_l, seg_l)]
    return HSMMViterbi(segments, fill_segments(labels), score)


def _viterbi(cl):
    """The max-product forward and `_core.backtrack` of cleaned potentials: labels (B, N+1)
    and seg_len (B, N+1) over points 0..N (see `backtrack`), best score (B,)."""
    B, N, K, C = cl.emit.shape
    lp, bk, bs, deltas = [cl.init], [], [], []
    for n, e in enumerate(cl.emit.unbind(1)):
        kk = min(K, n + 1)
        cand = e[:, :kk] + torch.stack([lp[n - k] for k in range(kk)], 1)
        best, kbest = cand.max(1)
        deltas.append(best)
        bk.append(kbest)
        m, arg = (best.unsqueeze(2) + cl.trans).max(1)
        lp.append(m)
        bs.append(arg)
    D = torch.stack(deltas, 1)
    last = D.gather(1, (cl.lengths - 1).view(B, 1, 1).expand(B, 1, C)).squeeze(1)
    score, c_last = last.max(-1)
    # points 0..N: the segment ending at position n ends at point n+1 and starts at point
    # s = n - kbest; the previous segment's state is bs[s-1] (none when s = 0)
    k_len = torch.stack(bk, 1) + 1  # (B, N, C)
    ends = torch.arange(1, N + 1, device=k_len.device).view(1, N, 1)
    prev = torch.stack(bs, 1).gather(1, (ends - k_len - 1).clamp(min=0))
    labels, seg_len = backtrack(k_len, prev, last=cl.lengths, label=c_last)
    return labels, seg_len, score


def hsmm_sample(
    log_init,
    log_trans,
    log_seg_emit,
    *,
    generator: torch.Generator,
    num_samples: int = 1,
    lengths=None,
    state_mask=None,
):
    """(B,C), (B,C,C), (B,N,K,C) -> HSMMSamples(states (S,B,N), ends (S,B,N)): exact
    posterior samples by forward filtering and backward sampling of whole segments.

    Cost: forward O(B·N·(C² + K·C)); sampling O(S·B·N·K·C) time, O(S·B·(N + K·C)) memory.
    """
    if num_samples < 1:
        raise ValueError("num_samples must be >= 1")
    cl = _clean(log_init, log_trans, log_seg_emit, lengths, state_mask)
    B, N, K, C = cl.emit.shape
    S, dev = num_samples, cl.emit.device
    with torch.no_grad():
        _, c, logpred = _scaled_forward(cl.init, cl.trans, cl.emit, cl.lengths)
        bad = bad_rows(c, cl.pos_mask, C)
        logpred = recompute(bad, lambda idx: _logspace_forward(
            cl.init[idx], cl.trans[idx], cl.emit[idx], cl.lengths[idx])[2:], logpred)[0]
    bidx = torch.arange(B, device=dev).expand(S, B)
    sidx = torch.arange(S, device=dev)[:, None].expand(S, B)
    karange = torch.arange(K, device=dev)
    n = (cl.lengths - 1).expand(S, B).clone()
    cnext = torch.zeros(S, B, dtype=torch.long, device=dev)
    first = True
    # each segment's label at its end point (position + 1), -1 elsewhere: `fill_segments`
    labels = torch.full((S, B, N + 1), -1, dtype=torch.long, device=dev)
    trans_t = cl.trans.transpose(1, 2)  # [b, c_next, c_prev]
    while bool((n >= 0).any()):
        active = n >= 0
        nn = n.clamp(min=0)
        m = (nn.unsqueeze(-1) - karange).clamp(min=0)  # index of pred[end - k - 1] + 1
        W = cl.emit[bidx, nn] + logpred[bidx.unsqueeze(-1), m]  # (S,B,K,C)
        if not first:
            W = W + trans_t[bidx, cnext].unsqueeze(2)
        W = W.masked_fill((karange > nn.unsqueeze(-1)).unsqueeze(-1), float("-inf"))
        flat = sample_categorical(W.reshape(S, B, K * C), generator=generator)
        k, cc = flat // C, flat % C
        labels[sidx, bidx, nn + 1] = torch.where(active, cc, labels[sidx, bidx, nn + 1])
        cnext = torch.where(active, cc, cnext)
        n = torch.where(active, n - k - 1, n)
        first = False
    states = fill_segments(labels.view(S * B, N + 1)).view(S, B, N)
    return HSMMSamples(states, labels[..., 1:] >= 0)
