"""torch-struct-compatible distribution classes over our chain lattices (the tested public
drop-in; used by no model).

``LinearChainCRF`` / ``SemiMarkovCRF``: torch-struct's constructor ``(log_potentials,
lengths=None)``, properties and methods with the same shapes (event = the log-potentials'
shape after B; ``sample``/``topk`` put the sample/k dimension first). With mixed lengths
``partition`` differs from torch-struct 0.5's, which is wrong for semi-Markov K >= 3;
``sample`` takes ``generator=``. Costs: ``linear_chain``, ``semimarkov``.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import Distribution
from torch.distributions.utils import lazy_property

from aligners.lattices.linear_chain import LinearChain
from aligners.lattices.semimarkov import SemiMarkov
from aligners.semirings import LogSemiring, MaxSemiring

__all__ = ["StructDistribution", "LinearChainCRF", "SemiMarkovCRF"]


class StructDistribution(Distribution):
    """Distribution over the structures of a chain lattice (Gibbs: p(z) ∝ exp score(z)).

    log_potentials ``(B, *event)``; lengths ``(B,)`` or None."""

    struct = LinearChain
    arg_constraints: dict = {}

    def __init__(self, log_potentials: torch.Tensor, lengths=None, args=None):
        self.log_potentials = log_potentials
        self.lengths = lengths
        self.args = {} if args is None else args
        super().__init__(batch_shape=log_potentials.shape[:1],
                         event_shape=log_potentials.shape[1:], validate_args=False)

    def _struct(self, semiring=None):
        return self.struct(semiring if semiring is not None else LogSemiring)

    @lazy_property
    def partition(self) -> torch.Tensor:
        """log Z ``(B,)`` (differentiable; gradient = marginals)."""
        return self._struct().sum(self.log_potentials, self.lengths)

    @lazy_property
    def marginals(self) -> torch.Tensor:
        """Part marginals ``(B, *event)``."""
        return self._struct().marginals(self.log_potentials, self.lengths)

    @lazy_property
    def max(self) -> torch.Tensor:
        """Best score ``(B,)`` (differentiable: gradient = argmax)."""
        return self._struct(MaxSemiring).sum(self.log_potentials, self.lengths)

    @lazy_property
    def argmax(self) -> torch.Tensor:
        """Indicators of the best structure ``(B, *event)`` (Viterbi backpointers)."""
        return self._struct(MaxSemiring).marginals(self.log_potentials, self.lengths)

    @lazy_property
    def mode(self) -> torch.Tensor:
        return self.argmax

    @lazy_property
    def entropy(self) -> torch.Tensor:
        """Entropy in nats ``(B,)`` (entropy semiring, one forward pass)."""
        return self._struct().entropy(self.log_potentials, self.lengths)

    @lazy_property
    def count(self) -> torch.Tensor:
        """Number of structures with finite score ``(B,)`` (float; exp of a log-count)."""
        zeros = torch.where(torch.isneginf(self.log_potentials), self.log_potentials,
                            torch.zeros_like(self.log_potentials))
        return self._struct().sum(zeros.detach(), self.lengths).exp()

    def kmax(self, k: int) -> torch.Tensor:
        """The k best scores ``(k, B)``."""
        return self._struct().kmax(self.log_potentials, k, self.lengths)

    def topk(self, k: int) -> torch.Tensor:
        """Indicators of the k best structures ``(k, B, *event)``."""
        return self._struct().topk(self.log_potentials, k, self.lengths)

    def sample(self, sample_shape=torch.Size(), *, generator=None) -> torch.Tensor:  # noqa: B008
        """Exact samples ``(*sample_shape, B, *event)`` (forward filtering, backward
        sampling); reproducible with ``generator``."""
        shape = torch.Size(sample_shape)
        n = math.prod(shape) if len(shape) else 1
        out = self._struct().sample(self.log_potentials, n, self.lengths, generator=generator)
        return out.view(shape + out.shape[1:])

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """log p(value) for indicator tensors ``(*sample, B, *event)`` -> ``(*sample, B)``."""
        score = self._struct().score(self.log_potentials, value)
        return score - self.partition

    def cross_entropy(self, other: StructDistribution) -> torch.Tensor:
        """H[p, q] = -E_p[log q(z)] ``(B,)``, exact: log Z_q - <marginals_p, φ_q>."""
        return other.partition - self._struct().score(other.log_potentials, self.marginals)

    def kl(self, other: StructDistribution) -> torch.Tensor:
        """KL[p || q] = H[p, q] - H[p] ``(B,)``."""
        return self.cross_entropy(other) - self.entropy

    def to_event(self, sequence, extra, lengths=None):
        """Compact representation -> indicator event (see the struct's ``to_parts``)."""
        return self.struct.to_parts(sequence, extra, lengths=lengths)

    def from_event(self, event):
        """Indicator event -> compact representation (see the struct's ``from_parts``)."""
        return self.struct.from_parts(event)


class LinearChainCRF(StructDistribution):
    """Linear-chain CRF: log_potentials ``(B, N-1, C, C)`` as ``[b, n, y[n+1], y[n]]``;
    compact form: labels ``(B, N)`` in 0..C-1."""

    struct = LinearChain


class SemiMarkovCRF(StructDistribution):
    """Semi-Markov CRF: log_potentials ``(B, N-1, K, C, C)`` as
    ``[b, n, k, y[n+k], y[n]]`` (segment lengths 1..K-1); compact form: ``(B, N)`` labels at
    segment ends, ``-1`` inside segments."""

    struct = SemiMarkov
