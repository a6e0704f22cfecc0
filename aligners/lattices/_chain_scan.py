"""Log-depth parallel scan for the chain lattices (private): few, large kernels for a GPU.

The chain DP of ``_chain_core`` (spans ``(B, N-1, S, C, C)``) is a product of T = N-1 step
matrices ``(D, D)`` over the window of the last S charts (D = S·C states), identity at steps
past an item's end (mixed lengths are exact), taken pairwise in ceil(log2 T) levels of ONE
batched semiring matrix product each.

- ``scan_sum`` (any semiring): broadcast products, O(B·T·D³) time and memory per level.
- ``scan_log_partition`` (Log): one GEMM per level in probability space with max shifts and
  an explicit backward (``_LogMM``), O(B·T·D³) time, O(B·T·D²) memory. Items where a product
  could underflow are flagged and recomputed by the per-position loop.

``use_scan`` is the automatic choice: the loop on CPU, the scan on CUDA when S <= 2 and
D <= 256 (small problems under autograd replay it as a CUDA graph, ``_chain_graph``).
"""

from __future__ import annotations

import math

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._core import length_mask, semiring_zero

__all__ = ["METHODS", "scan_log_partition", "scan_sum", "step_matrices", "use_scan"]

METHODS = ("auto", "loop", "scan", "graph")


def use_scan(method: str, spans: torch.Tensor) -> bool:
    """``method`` in METHODS; "auto": scan only on CUDA with S <= 2 and S·C <= 256; "graph":
    the scan, replayed as a CUDA graph where ``_chain_graph.wants_graph`` (Log semiring)."""
    if method not in METHODS:
        raise AlignersInputError(f"method must be one of {METHODS}, got {method!r}")
    if method != "auto":
        return method in ("scan", "graph")
    _, _, size, c, _ = spans.shape
    return spans.is_cuda and size <= 2 and size * c <= 256


def step_matrices(spans: torch.Tensor, lengths: torch.Tensor, one: float = 0.0,
                  zero: float | None = None) -> torch.Tensor:
    """spans (B, T, S, C, C), T >= 1 -> step matrices (B, T, D, D), D = S·C, ``[next, prev]``
    window states; identity (``one`` on the diagonal, ``zero`` elsewhere) at steps m >= L-1.
    Differentiable w.r.t. spans. O(B·T·D²) memory."""
    batch, t, size, c, _ = spans.shape
    zero = semiring_zero(spans.dtype) if zero is None else zero
    d = size * c
    dev, dt = spans.device, spans.dtype
    eye = torch.full((d, d), zero, dtype=dt, device=dev)
    eye.diagonal().fill_(one)
    if size == 1:
        a = spans.squeeze(-3)
    else:
        pad = torch.full((batch, size - 1, size, c, c), zero, dtype=dt, device=dev)
        padded = torch.cat([pad, spans], 1)  # [:, j] = spans[:, j - (S-1)]
        top = torch.cat([padded[:, size - k: size - k + t, k - 1, :, :]
                         for k in range(1, size + 1)], -1)  # (B, T, C, D): spans ending m+1
        shift = torch.full((d - c, d), zero, dtype=dt, device=dev)
        shift.diagonal().fill_(one)  # block row r takes block r-1: the window moves on
        shift = shift.expand(batch, t, d - c, d)
        a = torch.cat([top, shift], -2)
    live = length_mask(lengths - 1, t).view(batch, t, 1, 1)
    return torch.where(live, a, eye)


def scan_sum(semiring, spans: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Semiring sum over all structures by the parallel scan: spans (B, T, S, C, C) ->
    raw (ssize, B), equal to ``_chain_core.generic_sum``. O(B·T·D³) time and memory
    (broadcast products); differentiable by autograd."""
    batch, t, size, c, _ = spans.shape
    pot = semiring.convert(spans)  # (s, B, T, S, C, C)
    ssize, d = pot.shape[0], size * c
    one = semiring.one_(spans.new_empty((ssize, 1))).squeeze(1).tolist()
    zero = semiring.zero_(spans.new_empty((ssize, 1))).squeeze(1).tolist()
    eye = spans.new_empty((ssize, batch, 1, d, d))
    for j in range(ssize):
        eye[j].fill_(zero[j]).diagonal(dim1=-2, dim2=-1).fill_(one[j])
    if t == 0:
        prod = eye[:, :, 0]
    else:
        mats = torch.stack([step_matrices(pot[j], lengths, one[j], zero[j])
                            for j in range(ssize)], 0)  # (s, B, T, D, D)

        def mm(x, y):
            prod = semiring.times(x.unsqueeze(-1), y.unsqueeze(-3))  # (.., n, p, m)
            return semiring.sum(prod.transpose(-1, -2), -1)

        while mats.shape[2] > 1:
            if mats.shape[2] % 2:
                mats = torch.cat([mats, eye], 2)
            mats = mm(mats[:, :, 1::2], mats[:, :, 0::2])
        prod = mats[:, :, 0]
    return semiring.sum(semiring.sum(prod[..., :c, :c], -1), -1)


class _LogMM(torch.autograd.Function):
    """One scan level: mats (B, T, D, D), T even -> (B, T/2, D, D) log-space products of the pairs
    (``mats[:, 2i+1]`` later, ``mats[:, 2i]`` earlier) as ONE GEMM in probability space, shifted
    by row maxima; structural zeros give exact 0. Also a flag (B,) for items with a shifted entry
    in ``(bounds[0], bounds[1]]`` (a term could underflow). Explicit first-order backward."""

    @staticmethod
    def forward(ctx, mats, bounds, zero):
        x, y = mats[:, 1::2], mats[:, 0::2]  # pairs (later, earlier); T even
        half = zero / 2
        ys = y.amax(-1, keepdim=True).clamp_min_(half)
        xs = x + ys.transpose(-1, -2)
        xm = xs.amax(-1, keepdim=True).clamp_min_(half)
        dx, dy = xs.sub_(xm), y - ys
        flag = ((torch.bucketize(dx, bounds) == 1).flatten(1).any(1)
                | (torch.bucketize(dy, bounds) == 1).flatten(1).any(1))
        p, q = dx.exp_(), dy.exp_()
        s = torch.matmul(p, q)
        out = s.log().add_(xm)
        ctx.save_for_backward(p, q, s)
        ctx.mark_non_differentiable(flag)
        return out, flag

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad, _flag_grad):
        p, q, s = ctx.saved_tensors
        gs = torch.where(s > 0, grad / s, torch.zeros_like(s))
        gx = torch.matmul(gs, q.transpose(-1, -2)).mul_(p)
        gy = torch.matmul(p.transpose(-1, -2), gs).mul_(q)
        return torch.stack([gy, gx], 2).flatten(1, 2), None, None  # one copy, no scatter


def scan_log_partition(spans: torch.Tensor, lengths: torch.Tensor):
    """log Z (B,) of finite spans (B, T, S, C, C) by the GEMM scan, and a flag (B,) bool for
    items that must be recomputed by the loop (possible underflow). Differentiable by
    autograd (gradient = marginals). O(B·T·D³) time, O(B·T·D²) memory, ceil(log2 T) levels."""
    batch, t, size, c, _ = spans.shape
    dt = spans.dtype
    zero = semiring_zero(dt)
    limit = 0.5 * math.log(torch.finfo(dt).tiny) + 1.0
    flag = torch.zeros(batch, dtype=torch.bool, device=spans.device)
    d = size * c
    if t == 0:
        # one point: log Z = log C (``spans.sum`` is 0 and keeps the autograd graph)
        return spans.new_full((batch,), math.log(c)) + spans.sum((1, 2, 3, 4)), flag
    mats = step_matrices(spans, lengths)
    eye = torch.full((d, d), zero, dtype=dt, device=spans.device)
    eye.diagonal().fill_(0.0)
    bounds = torch.full((2,), zero / 4, dtype=dt, device=spans.device)
    bounds[1:].fill_(limit)  # a fill kernel: no host-to-device copy (``bounds[1] = x`` syncs)
    padded = 1 << (t - 1).bit_length()  # identity steps up to a power of two: no odd levels
    if padded > t:
        mats = torch.cat([mats, eye.expand(batch, padded - t, d, d)], 1)
    while mats.shape[1] > 1:
        mats, f = _LogMM.apply(mats, bounds, zero)
        flag = flag | f
    log_z = torch.logsumexp(mats[:, 0, :c, :c].flatten(-2), -1)
    return log_z.clamp_min(zero), flag  # an impossible item: the semiring zero, as the loop
