"""Temporary semi-Markov DP used by the monolingual aligners until `aligners.lattices.semimarkov`
lands on main (torch-struct's SemiMarkovCRF builds a (K*C)^2 chart per position and runs out of
memory at C ~ 70). Conventions are torch-struct's so the swap is mechanical: log_potentials
(B, N-1, K, C, C) as [b, n, k, c_next, c_prev] = segment [n, n+k) with label c_next after
c_prev; k = 0 unused; the label at position 0 is summed over; lengths count positions (N).
"""

import torch

__all__ = ["semimarkov_log_partition", "semimarkov_viterbi", "factored_log_partition",
           "factored_viterbi"]


def _scan(log_potentials: torch.Tensor, lengths: torch.Tensor, reduce_max: bool):
    """Push-style linear scan (each position's potentials used once, so autograd stays cheap).
    Returns (log Z (B,) or last chart (B, C), back-pointers or None). O(B*N*K*C^2) time."""
    B, N1, K, C, _ = log_potentials.shape
    rows = log_potentials.unbind(1)  # N-1 x (B, K, C, C)
    outgoing: list[torch.Tensor] = []  # per start n: (B, K, C) best/summed over c_prev
    out_arg: list[torch.Tensor] = []
    alphas, pointers = [], []
    for t in range(N1 + 1):
        if t == 0:
            alpha = torch.zeros(B, C, dtype=log_potentials.dtype, device=log_potentials.device)
        else:
            ks = range(1, min(K - 1, t) + 1)
            cand = torch.stack([outgoing[t - k][:, k] for k in ks], dim=1)  # (B, k, C)
            if reduce_max:
                alpha, kbest = cand.max(1)
                prev = torch.stack([out_arg[t - k][:, k] for k in ks], dim=1)
                pointers.append((kbest + 1, prev.gather(1, kbest.unsqueeze(1)).squeeze(1)))
            else:
                alpha = torch.logsumexp(cand, 1)
        alphas.append(alpha)
        if t < N1:
            scores = alpha[:, None, None, :] + rows[t]  # (B, K, C, C')
            if reduce_max:
                best, arg = scores.max(-1)
                outgoing.append(best)
                out_arg.append(arg)
            else:
                outgoing.append(torch.logsumexp(scores, -1))
    stacked = torch.stack(alphas, dim=1)  # (B, N, C)
    last = stacked[torch.arange(B), lengths - 1]
    if reduce_max:
        return last, pointers
    return torch.logsumexp(last, -1), None


def semimarkov_log_partition(log_potentials: torch.Tensor, *, lengths: torch.Tensor) -> torch.Tensor:
    """(B, N-1, K, C, C), lengths (B,) -> log Z (B,). Differentiable (marginals by autograd)."""
    return _scan(log_potentials, lengths, reduce_max=False)[0]


@torch.no_grad()
def semimarkov_viterbi(
    log_potentials: torch.Tensor, *, lengths: torch.Tensor
) -> tuple[torch.Tensor, list[list[tuple[int, int, int]]]]:
    """Best path: (scores (B,), per example a list of segments (start, length, label))."""
    B, N1, K, C, _ = log_potentials.shape
    last, pointers = _scan(log_potentials, lengths, reduce_max=True)
    score, label = last.max(-1)
    kb = torch.stack([k for k, _ in pointers], 1).cpu() if pointers else None  # (B, N-1, C)
    cb = torch.stack([c for _, c in pointers], 1).cpu() if pointers else None
    paths = []
    for b in range(B):
        t, c, segs = int(lengths[b]) - 1, int(label[b]), []
        while t > 0:
            k, c_prev = int(kb[b, t - 1, c]), int(cb[b, t - 1, c])
            segs.append((t - k, k, c))
            t, c = t - k, c_prev
        paths.append(segs[::-1])
    return score, paths


def _factored_scan(emit: torch.Tensor, trans: torch.Tensor, start: torch.Tensor,
                   lengths: torch.Tensor, reduce_max: bool):
    """Same DP for potentials lp[b,n,k,c,c'] = emit[b,n,k,c] + (start[b,c] if n == 0 and
    c' == 0 else trans[b,c,c'] if n > 0 else zero): the (C, C) transition is reduced once per
    position instead of once per (position, k). O(B*N*(C^2 + K*C)) time, no (B,N,K,C,C) tensor.
    emit (B, N-1, K, C) with k = 0 unused; trans (B, C, C) [c_next, c_prev]; start (B, C)."""
    B, N1, K, C = emit.shape
    rows = emit.unbind(1)
    outgoing, out_arg, alphas, pointers = [], [], [], []
    zero_ptr = torch.zeros(B, K, C, dtype=torch.long, device=emit.device)
    for t in range(N1 + 1):
        if t > 0:
            ks = range(1, min(K - 1, t) + 1)
            cand = torch.stack([outgoing[t - k][:, k] for k in ks], dim=1)  # (B, k, C)
            if reduce_max:
                alpha, kbest = cand.max(1)
                prev = torch.stack([out_arg[t - k][:, k] for k in ks], dim=1)
                pointers.append((kbest + 1, prev.gather(1, kbest.unsqueeze(1)).squeeze(1)))
            else:
                alpha = torch.logsumexp(cand, 1)
            alphas.append(alpha)
        if t == N1:
            break
        if t == 0:
            outgoing.append(rows[0] + start[:, None, :])
            out_arg.append(zero_ptr)
            continue
        scores = alpha[:, None, :] + trans  # (B, C, C')
        if reduce_max:
            best, arg = scores.max(-1)
            outgoing.append(rows[t] + best[:, None, :])
            out_arg.append(arg[:, None, :].expand(B, K, C))
        else:
            outgoing.append(rows[t] + torch.logsumexp(scores, -1)[:, None, :])
    stacked = torch.stack(alphas, dim=1)  # (B, N-1, C): alphas[t-1] = chart at position t
    last = stacked[torch.arange(B), lengths - 2]
    if reduce_max:
        return last, pointers
    return torch.logsumexp(last, -1), None


def factored_log_partition(emit, trans, start, *, lengths):
    """log Z (B,) of the factored semi-Markov CRF (see `_factored_scan`); lengths = I_b + 1."""
    return _factored_scan(emit, trans, start, lengths, reduce_max=False)[0]


@torch.no_grad()
def factored_viterbi(emit, trans, start, *, lengths):
    """Best path of the factored CRF: (scores (B,), [[(start, length, label), ...]])."""
    B, _, _, C = emit.shape
    last, pointers = _factored_scan(emit, trans, start, lengths, reduce_max=True)
    score, label = last.max(-1)
    kb = torch.stack([k for k, _ in pointers], 1).cpu()
    cb = torch.stack([c for _, c in pointers], 1).cpu()
    paths = []
    for b in range(B):
        t, c, segs = int(lengths[b]) - 1, int(label[b]), []
        while t > 0:
            k, c_prev = int(kb[b, t - 1, c]), int(cb[b, t - 1, c])
            segs.append((t - k, k, c))
            t, c = t - k, c_prev
        paths.append(segs[::-1])
    return score, paths
