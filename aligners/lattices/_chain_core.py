"""Shared recursions of the linear-chain and semi-Markov lattices (private).

Points 0..N-1 carry a label in 0..C-1; a segment of length k (1 <= k <= S) from point n
(label c') to n+k (label c) scores ``spans[b, n, k-1, c, c']`` (start-indexed ``(B, N-1, S,
C, C)``); item b ends at point ``lengths[b] - 1``. The linear chain is S = 1. Forward
O(B·N·S·C²); the Log path stores the ``(B, N, C)`` chart and has an explicit outside pass.
"""

from __future__ import annotations

import contextlib

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._core import backtrack, length_mask, sample_categorical, semiring_zero

__all__ = [
    "generic_sum",
    "log_partition",
    "log_marginals_explicit",
    "viterbi",
    "sample_ffbs",
    "autograd_ready",
]


def end_indexed(spans: torch.Tensor) -> list[torch.Tensor]:
    """spans (..., N-1, S, C, C) start-indexed -> per end point m = 1..N-1 the scores
    ``(..., min(S, m), C, C)`` of the spans ending at m (index k-1: start m-k).
    Differentiable; ``unbind`` plus one ``stack`` per step keeps backward linear in N."""
    steps = spans.unbind(-4)
    size = spans.shape[-3]
    if size == 1:
        return list(steps)
    out = []
    for m in range(1, len(steps) + 1):
        kmax = min(size, m)
        out.append(torch.stack([steps[m - k][..., k - 1, :, :] for k in range(1, kmax + 1)], -3))
    return out


def _gather_last(chart: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """chart (..., B, N, C) -> (..., B, C) at point lengths-1."""
    idx = (lengths - 1).view(-1, 1, 1).expand(-1, 1, chart.shape[-1])
    idx = idx.expand(chart.shape[:-3] + idx.shape)
    return chart.gather(-2, idx).squeeze(-2)


def generic_sum(semiring, spans: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Semiring sum over all structures. spans (B, N-1, S, C, C) -> raw (ssize, B).

    Differentiable through autograd (marginals, argmax, samples, k-best as gradients)."""
    batch, _, _, c, _ = spans.shape
    pot = semiring.convert(spans)  # (s, B, N-1, S, C, C)
    ssize = pot.shape[0]
    if batch == 0:  # empty batch: (ssize, 0), still attached to the graph
        return pot.reshape(ssize, -1)[:, :0]
    one = semiring.one_(spans.new_empty((ssize, batch, c)))
    chart = [one]
    for m, pm in enumerate(end_indexed(pot), start=1):  # pm (s, B, k, C, C')
        kmax = pm.shape[-3]
        prev = torch.stack([chart[m - k] for k in range(1, kmax + 1)], -2)  # (s, B, k, C')
        x = semiring.times(prev.unsqueeze(-2), pm)  # (s, B, k, C, C')
        x = x.permute(0, 1, 3, 2, 4).reshape(ssize, batch, c, kmax * c)
        chart.append(semiring.sum(x, -1))
    last = _gather_last(torch.stack(chart, -2), lengths)  # (s, B, C)
    return semiring.sum(last, -1)


def _lse(x: torch.Tensor) -> torch.Tensor:
    """logsumexp over the last dim for *finite* x (``finite`` guarantees it): skips
    torch.logsumexp's infinity masking, 5 kernels instead of 9 (no autograd use)."""
    m = x.amax(-1, keepdim=True)
    return (x - m).exp_().sum(-1).log_().add_(m.squeeze(-1))


def _forward_chart(spans: torch.Tensor, fn) -> tuple[torch.Tensor, list]:
    """Forward chart (B, N, C) without autograd; ``fn`` reduces (B, C, k*C') scores
    (logsumexp, or max returning (values, flat argmax (k-1)*C + c'))."""
    batch, _, _, c, _ = spans.shape
    chart = [spans.new_zeros((batch, c))]
    extras = []
    for m, pm in enumerate(end_indexed(spans), start=1):  # pm (B, k, C, C')
        kmax = pm.shape[1]
        prev = torch.stack([chart[m - k] for k in range(1, kmax + 1)], 1)  # (B, k, C')
        x = (pm + prev.unsqueeze(-2)).permute(0, 2, 1, 3).flatten(2)  # (B, C, k*C')
        val = fn(x)
        if isinstance(val, tuple):
            val, arg = val
            extras.append(arg)
        chart.append(val)
    return torch.stack(chart, 1), extras


def _outside(spans: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Outside log-scores o (B, N, C): log-sum over completions from point n with label c to
    the end point lengths-1 (0 there, zero beyond)."""
    batch, n_1, size, c, _ = spans.shape
    n = n_1 + 1
    zero = semiring_zero(spans.dtype)
    starts = spans.unbind(1)
    out = [None] * n
    real = length_mask(lengths, n).t().unsqueeze(-1)  # (N, B, 1): the one masking rule
    past = ~real  # beyond the end point
    here = real & ~torch.cat([real[1:], torch.zeros_like(real[:1])], 0)  # the end point
    for p in range(n - 1, -1, -1):
        kmax = min(size, n - 1 - p)
        if kmax == 0:
            val = spans.new_full((batch, c), zero)
        else:
            nxt = torch.stack([out[p + k] for k in range(1, kmax + 1)], 1)  # (B, k, C)
            x = starts[p][:, :kmax] + nxt.unsqueeze(-1)  # (B, k, C, C')
            val = _lse(x.flatten(1, 2).transpose(1, 2))  # (B, C')
        out[p] = val.masked_fill_(here[p], 0.0).masked_fill_(past[p], zero)
    return torch.stack(out, 1)


def finite(spans: torch.Tensor) -> torch.Tensor:
    """Clamp -inf (forbidden) scores at the semiring zero, only when there are any; NaN or
    +inf scores are refused (they have no meaning as log-potentials)."""
    if bool(torch.isfinite(spans).all()):
        return spans
    if bool((torch.isnan(spans) | torch.isposinf(spans)).any()):
        raise AlignersInputError("log-potentials contain NaN or +inf")
    return spans.clamp(min=semiring_zero(spans.dtype))


def log_marginals_explicit(spans, lengths, chart=None, log_z=None, offset=0) -> torch.Tensor:
    """Span marginals ``(B, N-1, offset+S, C, C)`` (zero on the first ``offset`` span slots)
    by an explicit forward-backward (no autograd needed; differentiable if the inputs are)."""
    batch, n_1, size, c, _ = spans.shape
    if chart is None:
        spans = finite(spans)
        chart, _ = _forward_chart(spans, lambda x: x.logsumexp(-1))
        log_z = _gather_last(chart, lengths).logsumexp(-1)
    out = _outside(spans, lengths)
    shift = log_z.view(-1, 1, 1, 1)
    if size == 1 and offset == 0:  # linear chain: one pass, no zero fill
        marg = spans.squeeze(2) + chart[:, :-1].unsqueeze(-2)
        return marg.add_(out[:, 1:].unsqueeze(-1)).sub_(shift).exp_().unsqueeze(2)
    marg = spans.new_zeros(spans.shape[:2] + (offset + size,) + spans.shape[3:])
    for k in range(1, min(size, n_1) + 1):
        t = n_1 + 1 - k  # spans of length k start at 0..N-1-k
        part = spans[:, :t, k - 1] + chart[:, :t].unsqueeze(-2)
        part.add_(out[:, k:].unsqueeze(-1)).sub_(shift).exp_()
        marg[:, :t, offset + k - 1] = part
    return marg


class _LogPartition(torch.autograd.Function):
    @staticmethod
    def forward(ctx, potentials, lengths, offset):
        spans = finite(potentials[:, :, offset:])
        chart, _ = _forward_chart(spans, _lse)
        log_z = _lse(_gather_last(chart, lengths))
        ctx.offset = offset
        ctx.save_for_backward(spans, lengths, chart, log_z)
        return log_z

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        spans, lengths, chart, log_z = ctx.saved_tensors
        marg = log_marginals_explicit(spans, lengths, chart, log_z, offset=ctx.offset)
        return marg.mul_(grad.view(-1, 1, 1, 1, 1)), None, None


def log_partition(potentials: torch.Tensor, lengths: torch.Tensor, offset: int = 0):
    """log Z ``(B,)`` of ``potentials (B, N-1, offset+S, C, C)`` whose spans are
    ``potentials[:, :, offset:]``; its gradient (explicit outside pass) is the marginals
    (zero on the first ``offset`` span slots)."""
    return _LogPartition.apply(potentials, lengths, offset)


def viterbi(spans: torch.Tensor, lengths: torch.Tensor):
    """Max score ``(B,)`` and the argmax structure's indicators ``(B, N-1, S, C, C)`` by
    backpointers (no autograd): O(B·N·C) integers stored; `_core.backtrack` (no host sync)."""
    batch, n_1, size, c, _ = spans.shape
    chart, back = _forward_chart(spans, lambda x: x.max(-1))
    last = _gather_last(chart, lengths)
    score, score_label = last.max(-1)
    parts = torch.zeros_like(spans)
    if n_1 == 0:
        return score, parts
    back = torch.stack(back, 1)  # (B, N-1, C): flat (k-1)*C + c' for end point m = index+1
    labels, seg_len = backtrack(back // c + 1, back % c, last=lengths - 1, label=score_label)
    k = seg_len[:, 1:]  # (B, N-1): length of the segment ending at point m = index + 1
    start = torch.where(k > 0, torch.arange(1, n_1 + 1, device=spans.device) - k, 0)
    rows = torch.arange(batch, device=spans.device).unsqueeze(1).expand(-1, n_1)
    parts.index_put_((rows, start, (k - 1).clamp(min=0), labels[:, 1:].clamp(min=0),
                      labels.gather(1, start).clamp(min=0)), (k > 0).to(spans.dtype),
                     accumulate=True)
    return score, parts


def sample_ffbs(spans: torch.Tensor, lengths: torch.Tensor, n: int, generator=None):
    """``n`` exact samples per example by forward filtering, backward sampling.

    spans (B, N-1, S, C, C) -> indicators ``(n, B, N-1, S, C, C)``. O(B·N·S·C²) forward
    (once) + O(n·B·N·S·C) sampling; no autograd, no copy of the potentials per sample."""
    batch, n_1, size, c, _ = spans.shape
    spans = finite(spans)
    chart, _ = _forward_chart(spans, _lse)  # (B, N, C)
    rows = n * batch
    b = torch.arange(batch, device=spans.device).repeat(n)  # row r = i*B + b
    pos = (lengths - 1).repeat(n)
    label = sample_categorical(_gather_last(chart, lengths).repeat(n, 1), generator=generator)
    r_idx = torch.arange(rows, device=spans.device)
    parts = spans.new_zeros((rows, n_1, size, c, c))
    neg = torch.tensor(float("-inf"), dtype=spans.dtype, device=spans.device)
    for _ in range(n_1):
        active = pos > 0
        if not bool(active.any()):
            break
        scores = []
        for k in range(1, size + 1):
            start = (pos - k).clamp(min=0)
            sc = chart[b, start] + spans[b, start, k - 1, label]  # (R, C')
            scores.append(torch.where((pos - k >= 0).view(-1, 1), sc, neg))
        flat = torch.stack(scores, 1).flatten(1)  # (R, S*C')
        flat = torch.where(active.view(-1, 1), flat, torch.zeros_like(flat))
        idx = sample_categorical(flat, generator=generator)
        k = idx // c + 1
        prev = idx % c
        start = torch.where(active, pos - k, pos)
        parts[r_idx, start.clamp(min=0), k - 1, label, prev] += active.to(spans.dtype)
        label = torch.where(active, prev, label)
        pos = start
    return parts.view(n, batch, n_1, size, c, c)


@contextlib.contextmanager
def autograd_ready(log_potentials: torch.Tensor):
    """Context + a leaf copy usable by autograd even under ``torch.inference_mode`` and
    without touching the caller's tensor (no ``requires_grad_`` on it)."""
    with torch.inference_mode(False), torch.enable_grad():
        if torch.is_inference(log_potentials):
            leaf = log_potentials.clone()
        else:
            leaf = log_potentials.detach()
        yield leaf.requires_grad_(True)
