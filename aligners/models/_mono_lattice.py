"""Factored semi-Markov recursion for the monolingual aligners' potentials
`lp[b, n, k, c, c'] = emit[b, n, k, c] + trans[b, c, c']` (START row: `start[b, c]`, c' = NULL).

Same result as `aligners.lattices.semimarkov` on the materialised (B, N-1, K, C, C) tensor
(tested), but the (C, C) transition is reduced once per position instead of once per
(position, length), and the 5-d tensor is never built: O(B*N*(C^2 + K*C)) time; 10-19x
faster than the generic lattice in one measurement on Edinburgh++ (Ls = Lt = 3, C ~ 90).
"""

import torch

__all__ = ["factored_log_partition", "factored_viterbi"]


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
