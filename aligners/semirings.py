"""Semirings for the lattice dynamic programs, with torch-struct 0.5's interface and algebra
(a leading semiring dimension: 1 for Log/Max/Sampled, k for KMax, 2 for Entropy).

What differs is the additive identity: torch-struct's ``-1e5`` is wrong for long sequences
and float64; here ``semiring_zero(dtype) = torch.finfo(dtype).min / 2**16`` (65536 zeros add
up without reaching ``-inf``); float16 is refused. The sampling semiring takes a
``torch.Generator``: the "gradient" of its log-partition is one exact sample.
"""

from __future__ import annotations

import torch
from torch_struct import semirings as _ts

from aligners.errors import AlignersInputError

__all__ = [
    "semiring_zero",
    "log_or_zero",
    "sample_categorical",
    "LogSemiring",
    "MaxSemiring",
    "KMaxSemiring",
    "EntropySemiring",
    "SampledSemiring",
]


def semiring_zero(dtype: torch.dtype) -> float:
    """Additive identity of the log-space semirings for ``dtype``: ``finfo.min / 2**16``.

    >>> semiring_zero(torch.float32) < -1e30
    True
    """
    if not dtype.is_floating_point:
        raise AlignersInputError(f"log-potentials must be floating point, got {dtype}")
    if dtype == torch.float16:
        raise AlignersInputError("float16 log-potentials are not supported: use float32")
    return torch.finfo(dtype).min / 2**16


def log_or_zero(x: torch.Tensor) -> torch.Tensor:
    """Elementwise log of probabilities `x` (any shape) with log(0) = `semiring_zero`
    (never -inf, so sums along a path stay finite). O(numel)."""
    return torch.log(x).clamp_min(semiring_zero(x.dtype))


def sample_categorical(logits: torch.Tensor, *, generator: torch.Generator | None = None
                       ) -> torch.Tensor:
    """One draw per row from unnormalised log-weights ``logits (..., C)`` -> ``(...)`` long.

    Inverse CDF with ``u = 1 - rand`` from ``generator`` on the logits' device (no host sync,
    reproducible). O(numel). ``-inf`` / semiring-zero entries are never drawn unless the whole
    row is (then index 0).
    """
    m = logits.amax(-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    cdf = (logits - m).exp().cumsum(-1)
    u = 1.0 - torch.rand(logits.shape[:-1] + (1,), generator=generator, device=logits.device,
                         dtype=logits.dtype)
    return (cdf < u * cdf[..., -1:]).sum(-1).clamp_(max=logits.shape[-1] - 1)


class _DtypeZero:
    """Mixin: dtype-aware additive identity for a log-space semiring (``one_``: torch-struct's
    ``_BaseLog.one_``, 0)."""

    @classmethod
    def zero_(cls, xs: torch.Tensor) -> torch.Tensor:
        return xs.fill_(semiring_zero(xs.dtype))

    @classmethod
    def zero_mask_(cls, xs: torch.Tensor, mask: torch.Tensor) -> None:
        xs.masked_fill_(mask.unsqueeze(0), semiring_zero(xs.dtype))


class LogSemiring(_DtypeZero, _ts.LogSemiring):
    """(logsumexp, +, zero, 0). Gradients of the log-partition are marginals."""


class MaxSemiring(_DtypeZero, _ts.MaxSemiring):
    """(max, +, zero, 0). Gradients of the max score are the argmax structure's indicators."""


def KMaxSemiring(k: int) -> type:  # noqa: N802 (torch-struct's name)
    """(k-max, +, [zero]*k, [0, zero, ...]): the k best scores; gradient of the j-th is the
    j-th best structure's indicators. Semiring dimension has size ``k``."""
    if int(k) < 1:
        raise AlignersInputError(f"k must be >= 1, got {k}")
    # torch-struct's ``one_`` (zero_, then 0 in slot 0) picks up the dtype-aware ``zero_``
    return type(f"KMaxSemiring({int(k)})", (_DtypeZero, _ts.KMaxSemiring(int(k))), {})


class EntropySemiring(_ts.EntropySemiring):
    """Entropy expectation semiring: slot 0 holds log-sums, slot 1 the running entropy.
    ``unconvert`` of the total is the entropy (nats) of the Gibbs distribution."""

    @classmethod
    def zero_(cls, xs: torch.Tensor) -> torch.Tensor:
        xs[0].fill_(semiring_zero(xs.dtype))
        xs[1].fill_(0.0)
        return xs

    @classmethod
    def zero_mask_(cls, xs: torch.Tensor, mask: torch.Tensor) -> None:
        xs[0].masked_fill_(mask, semiring_zero(xs.dtype))
        xs[1].masked_fill_(mask, 0.0)


class _SampledLogSumExp(torch.autograd.Function):
    """logsumexp forward; backward routes the incoming gradient to one index drawn from the
    softmax along ``dim`` (one draw per output cell)."""

    @staticmethod
    def forward(ctx, xs, dim, generator):
        ctx.dim = dim
        ctx.generator = generator
        out = torch.logsumexp(xs, dim=dim)
        ctx.save_for_backward(xs, out)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        xs, out = ctx.saved_tensors
        dim = ctx.dim % xs.dim()
        logp = (xs - out.unsqueeze(dim)).movedim(dim, -1)
        draws = sample_categorical(logp, generator=ctx.generator)
        onehot = torch.zeros_like(logp).scatter_(-1, draws.unsqueeze(-1), 1.0)
        onehot = onehot.movedim(-1, dim)
        return grad_output.unsqueeze(dim) * onehot, None, None


class SampledSemiring(_DtypeZero, _ts._BaseLog):
    """Sampling semiring: (logsumexp, +) forward; the gradient of the log-partition is one
    exact sample's indicator tensor (forward filtering, backward sampling).

    ``SampledSemiring`` draws from torch's default generator;
    ``SampledSemiring.with_generator(g)`` returns a semiring drawing from ``g``.
    """

    generator: torch.Generator | None = None

    @classmethod
    def sum(cls, xs: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return _SampledLogSumExp.apply(xs, dim, cls.generator)

    @classmethod
    def with_generator(cls, generator: torch.Generator | None) -> type:
        return type("SampledSemiring", (cls,), {"generator": generator})
