"""Factored semi-Markov lattice: a segment score plus a label-transition score, reduced
without building the (B, N-1, K, C, C) tensor.

``emit (B, N-1, K, C)``, ``trans (B, C, C)`` as ``[c_next, c_prev]`` (or a
`jump_transition.JumpTransition`), ``start (B, C)``, ``lengths (B,)`` (points, 2..N) stand for
the `semimarkov` log-potentials

    lp[b, n, k, c, c'] = emit[b, n, k, c] + trans[b, c, c']          (n >= 1)
    lp[b, 0, k, c, 0]  = emit[b, 0, k, c] + start[b, c]              (n = 0, c' = START = 0)
    lp[b, 0, k, c, c'] = semiring zero                               (n = 0, c' != 0)

with ``k = 0`` unused. Cost O(B*N*(C^2 + K*C)) time, O(B*N*K*C) memory (a `JumpTransition`:
O(B*N*C*(K + D + W))); Max ties break toward the lowest previous label.
"""

from __future__ import annotations

import torch

from aligners.errors import AlignersInputError
from aligners.lattices.jump_transition import JumpTransition

__all__ = ["factored_log_partition", "factored_marginals", "factored_viterbi"]


def _check(emit: torch.Tensor, trans, start: torch.Tensor,
           lengths: torch.Tensor) -> None:
    if emit.dim() != 4 or emit.shape[2] < 2:
        raise AlignersInputError(f"emit must be (B, N-1, K>=2, C), got {tuple(emit.shape)}")
    B, N1, _, C = emit.shape
    if tuple(trans.shape) != (B, C, C) or tuple(start.shape) != (B, C):
        raise AlignersInputError(
            f"expected trans (B, C, C) = {(B, C, C)} and start (B, C) = {(B, C)}, got "
            f"{tuple(trans.shape)} and {tuple(start.shape)}")
    if tuple(lengths.shape) != (B,) or bool((lengths < 2).any()) or bool((lengths > N1 + 1).any()):
        raise AlignersInputError(f"lengths must be (B,) = ({B},) in 2..{N1 + 1}")


def _factored_scan(emit: torch.Tensor, trans, start: torch.Tensor,
                   lengths: torch.Tensor, reduce_max: bool):
    """Forward recursion under Log (reduce_max=False) or Max; returns the (B, C) chart at
    each row's last point (Log: log Z (B,)) and, under Max, the length pointers (B, N-1, C)
    of the best segment ending at each point and the stacked (B, N-1, C) charts."""
    _check(emit, trans, start, lengths)
    if isinstance(trans, JumpTransition):
        message = trans.message
    else:
        def message(alpha, *, reduce_max):  # (B, C): (+) over c' of alpha[c'] + trans[c, c']
            scores = alpha[:, None, :] + trans
            return scores.amax(-1) if reduce_max else torch.logsumexp(scores, -1)
    B, N1, K, C = emit.shape
    rows = emit.unbind(1)
    outgoing = [rows[0] + start[:, None, :]]  # (B, K, C) per start point
    alphas, pointers = [], []
    for t in range(1, N1 + 1):
        ks = range(1, min(K - 1, t) + 1)
        cand = torch.stack([outgoing[t - k][:, k] for k in ks], dim=1)  # (B, k, C)
        if reduce_max:
            alpha, kbest = cand.max(1)
            pointers.append(kbest + 1)
        else:
            alpha = torch.logsumexp(cand, 1)
        alphas.append(alpha)
        if t < N1:
            outgoing.append(rows[t] + message(alpha, reduce_max=reduce_max)[:, None, :])
    stacked = torch.stack(alphas, dim=1)  # (B, N-1, C): alphas[t-1] = chart at point t
    last = stacked[torch.arange(B), lengths - 2]
    if reduce_max:
        return last, torch.stack(pointers, 1), stacked
    return torch.logsumexp(last, -1)


def factored_log_partition(emit: torch.Tensor, trans: torch.Tensor, start: torch.Tensor, *,
                           lengths: torch.Tensor) -> torch.Tensor:
    """emit (B, N-1, K, C), trans (B, C, C) or a `JumpTransition`, start (B, C), lengths (B,)
    -> log Z (B,).

    O(B*N*(C^2 + K*C)) time (JumpTransition: O(B*N*C*(K + D + W))), O(B*N*K*C) memory;
    differentiable (marginals = gradients)."""
    return _factored_scan(emit, trans, start, lengths, reduce_max=False)


def factored_marginals(emit: torch.Tensor, trans, start: torch.Tensor, *,
                       lengths: torch.Tensor) -> torch.Tensor:
    """emit (B, N-1, K, C), trans (B, C, C) or a `JumpTransition`, start (B, C), lengths (B,)
    -> segment marginals (B, N-1, K, C): P(segment [n, n+k) carries label c), 0 past a row's
    length and on masked (semiring-zero) entries.

    The gradient of log Z w.r.t. `emit` (one backward pass through the Log scan): O(B*N*(C^2 +
    K*C)) time, O(B*N*K*C) memory; never differentiable itself (the result is detached). Use
    float64 potentials where the marginals are summed further (link posteriors)."""
    with torch.enable_grad():
        leaf = emit.detach().requires_grad_(True)
        log_z = factored_log_partition(leaf, trans, start, lengths=lengths)
        (grad,) = torch.autograd.grad(log_z.sum(), leaf)
    return grad


@torch.no_grad()
def factored_viterbi(emit: torch.Tensor, trans: torch.Tensor, start: torch.Tensor, *,
                     lengths: torch.Tensor):
    """emit (B, N-1, K, C), trans (B, C, C) or a `JumpTransition`, start (B, C), lengths (B,)
    -> (best scores (B,), per row the segments [(start point, length k, label), ...]).

    O(B*N*(C^2 + K*C)) time, O(B*N*C) backpointers (segment lengths); the backtrack is
    vectorised over the batch, then one host transfer builds the lists."""
    last, kptr, charts = _factored_scan(emit, trans, start, lengths, reduce_max=True)
    score, label = last.max(-1)
    return score, _backtrack(kptr, charts, trans, lengths, label)


def _backtrack(kp: torch.Tensor, charts: torch.Tensor, trans, lengths: torch.Tensor,
               label: torch.Tensor) -> list[list[tuple[int, int, int]]]:
    """Backtrack of the Viterbi: k from the pointers kp (B, N-1, C) (of the best segment
    ending at point t, index t-1), the previous label as the first argmax of chart[start
    point] + the transition row into the label (the forward's max). O(B*N*C), vectorised over
    the batch; one host transfer."""
    B = kp.shape[0]
    rows = torch.arange(B, device=kp.device)
    pos, lab = (lengths - 1).long().to(kp.device), label.long()
    steps = []
    for _ in range(kp.shape[1]):
        active = pos > 0
        k = torch.where(active, kp[rows, (pos - 1).clamp(min=0), lab], torch.zeros_like(pos))
        begin = pos - k
        row = trans.row(lab) if isinstance(trans, JumpTransition) else trans[rows, lab]
        scores = charts[rows, (begin - 1).clamp(min=0)] + row.to(charts.dtype)
        prev = torch.where(begin > 0, scores.argmax(-1), torch.zeros_like(lab))
        steps.append(torch.stack([begin, k, lab], -1))
        pos, lab = begin, torch.where(active, prev, lab)
    table = torch.stack(steps, 1).tolist()  # (B, steps, 3), one transfer
    return [[tuple(s) for s in reversed(row) if s[1] > 0] for row in table]
