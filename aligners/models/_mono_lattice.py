"""Temporary semi-Markov DP used by the monolingual aligners until `aligners.lattices.semimarkov`
lands on main (torch-struct's SemiMarkovCRF builds a (K*C)^2 chart per position and runs out of
memory at C ~ 70). Conventions are torch-struct's so the swap is mechanical: log_potentials
(B, N-1, K, C, C) as [b, n, k, c_next, c_prev] = segment [n, n+k) with label c_next after
c_prev; k = 0 unused; the label at position 0 is summed over; lengths count positions (N).
"""

import torch

__all__ = ["semimarkov_log_partition", "semimarkov_viterbi"]


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
