"""torch-struct-style ``_Struct`` base shared by LinearChain and SemiMarkov (private), and
the base of their torch-struct-compatible distributions (``LinearChainCRF``, ``SemiMarkovCRF``:
the tested public drop-in; used by no model).

Subclasses say how their log-potentials map to start-indexed spans ``(B, N-1, S, C, C)``
(see ``_chain_core``) and back; everything else (semiring sums, marginals, Viterbi, k-best,
entropy, samples, scores) is here, once.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import Distribution
from torch.distributions.utils import lazy_property
from torch_struct import semirings as _ts

from aligners.lattices import _chain_core as core
from aligners.lattices import _chain_graph as graph
from aligners.lattices import _chain_scan as scan
from aligners.lattices._core import check_lengths, recompute
from aligners.semirings import (
    EntropySemiring,
    KMaxSemiring,
    LogSemiring,
    MaxSemiring,
    semiring_zero,
)

__all__ = ["ChainStruct", "StructDistribution"]


def _grad(out: torch.Tensor, leaf: torch.Tensor, retain: bool = False) -> torch.Tensor:
    """d out / d leaf; zeros when out does not depend on leaf (e.g. N = 1: no parts)."""
    if not out.requires_grad:
        return torch.zeros_like(leaf)
    (g,) = torch.autograd.grad(out, leaf, retain_graph=retain, allow_unused=True)
    return torch.zeros_like(leaf) if g is None else g


def _is(semiring, ours, theirs) -> bool:
    return semiring is ours or semiring is theirs


class ChainStruct:
    """Base of the chain lattices; ``semiring`` as in ``torch_struct.LinearChain(semiring)``.

    ``method``: "loop" (per-position recursion, explicit backward: the CPU choice), "scan"
    (``_chain_scan``), "graph" (the scan as a CUDA graph where ``_chain_graph.wants_graph``) or
    "auto" (Log on CUDA with S <= 2 and S·C <= 256: "graph"; else the loop). Same numbers.

    Subclasses define ``_check(log_potentials)`` (shape errors), ``_raw_spans`` (the
    ``(B, N-1, offset+S, C, C)`` view of the log-potentials) and ``_from_spans`` (start-indexed
    spans -> the log-potentials' shape)."""

    #: number of trailing event dimensions of the log-potentials (after B)
    event_dims = 3
    #: spans = ``_raw_spans(log_potentials)[:, :, offset:]``
    offset = 0

    def __init__(self, semiring=LogSemiring, method: str = "auto"):
        self.semiring = semiring
        scan.use_scan(method, torch.empty(0, 0, 1, 1, 1))  # refuses unknown methods
        self.method = method

    # -- helpers -----------------------------------------------------------------------
    def _under(self, semiring) -> ChainStruct:
        """The same lattice (and method) under another semiring."""
        return type(self)(semiring, self.method)

    def _to_spans(self, log_potentials):
        """Start-indexed spans ``(B, N-1, S, C, C)`` (a view)."""
        return self._raw_spans(log_potentials)[:, :, self.offset:]

    def _spans(self, log_potentials):
        """Start-indexed spans, clamped at the semiring zero so that ``-inf`` (forbidden)
        scores never turn into NaN (e.g. a label unreachable from every predecessor)."""
        core.finite(self._to_spans(log_potentials).detach())  # refuses NaN / +inf
        return self._to_spans(log_potentials).clamp(min=semiring_zero(log_potentials.dtype))

    def _use_scan(self, log_potentials, log: bool) -> bool:
        if self.method == "auto" and not log:
            return False  # the automatic scan is the Log GEMM scan only
        return scan.use_scan(self.method, self._to_spans(log_potentials))

    def _scan_log_partition(self, log_potentials, lengths):
        """log Z (B,) by the GEMM scan; items it flags are recomputed by the loop."""
        run = (graph.graphed_scan_log_partition if self.method in ("auto", "graph")
               else scan.scan_log_partition)
        log_z, flag = run(self._spans(log_potentials), lengths)
        return recompute(flag, lambda idx: (core.log_partition(  # one host sync per call
            self._raw_spans(log_potentials)[idx], lengths[idx], self.offset),), log_z)[0]

    def _semiring_sum(self, log_potentials, lengths):
        """Raw ``(ssize, B)`` sum under a semiring other than Log (differentiable by
        autograd): the scan where ``method`` asks for it, else the loop."""
        fn = scan.scan_sum if self._use_scan(log_potentials, log=False) else core.generic_sum
        return fn(self.semiring, self._spans(log_potentials), lengths)

    def _prepare(self, log_potentials, lengths):
        if not isinstance(log_potentials, torch.Tensor):
            raise TypeError("log_potentials must be a torch.Tensor")
        semiring_zero(log_potentials.dtype)  # refuses ints / float16
        self._check(log_potentials)
        batch, n = log_potentials.shape[0], log_potentials.shape[1] + 1
        return check_lengths(lengths, batch=batch, n=n, device=log_potentials.device)

    # -- torch-struct interface --------------------------------------------------------
    def sum(self, log_potentials, lengths=None, _raw=False):
        """Semiring sum over structures: ``(B,)`` (``_raw``: ``(ssize, B)``).
        Log: O(B·N·S·C²) time, O(B·N·C) stored for backward (gradient = marginals)."""
        lengths = self._prepare(log_potentials, lengths)
        if _is(self.semiring, LogSemiring, _ts.LogSemiring):
            if self._use_scan(log_potentials, log=True):
                v = self._scan_log_partition(log_potentials, lengths)
            else:
                v = core.log_partition(self._raw_spans(log_potentials), lengths, self.offset)
            return v.unsqueeze(0) if _raw else v
        v = self._semiring_sum(log_potentials, lengths)
        return v if _raw else self.semiring.unconvert(v)

    def marginals(self, log_potentials, lengths=None, _raw=False):
        """Gradient of the semiring sum w.r.t. the log-potentials, shaped like them.
        Log: edge marginals by explicit forward-backward (works under inference_mode);
        Max: indicators of the Viterbi structure (backpointers); others: autograd."""
        lengths = self._prepare(log_potentials, lengths)
        if _is(self.semiring, LogSemiring, _ts.LogSemiring) and not _raw:
            if self._use_scan(log_potentials, log=True):
                with core.autograd_ready(log_potentials) as leaf:
                    return _grad(self._scan_log_partition(leaf, lengths).sum(), leaf)
            spans = core.finite(self._to_spans(log_potentials))
            marg = core.log_marginals_explicit(spans, lengths, offset=self.offset)
            return marg.view_as(log_potentials)
        if _is(self.semiring, MaxSemiring, _ts.MaxSemiring) and not _raw:
            return self.viterbi(log_potentials, lengths)[1]
        with core.autograd_ready(log_potentials) as leaf:
            v = self._semiring_sum(leaf, lengths)
            if not _raw:
                return _grad(self.semiring.unconvert(v).sum(), leaf)
            out = [_grad(v[j].sum(), leaf, retain=j + 1 < len(v)) for j in range(len(v))]
        return torch.stack(out, 0)

    def score(self, potentials, parts, batch_dims=(0,)):
        """Total log-potential of structures ``parts`` (``(*sample, B, event)`` indicators):
        ``(*sample, B)``. Entries with a zero indicator never contribute (even if -inf)."""
        parts = parts.to(potentials.dtype)
        prod = torch.where(parts != 0, potentials * parts, torch.zeros_like(parts))
        return prod.flatten(-self.event_dims).sum(-1)

    # -- extras (ours) ------------------------------------------------------------------
    def viterbi(self, log_potentials, lengths=None):
        """Best score ``(B,)`` and its structure's indicators (shape of the log-potentials),
        by backpointers: O(B·N·S·C²) time, O(B·N·C) stored. No autograd."""
        lengths = self._prepare(log_potentials, lengths)
        with torch.no_grad():
            score, parts = core.viterbi(core.finite(self._to_spans(log_potentials)), lengths)
        return score, self._from_spans(parts)

    def kmax(self, log_potentials, k, lengths=None):
        """The k best scores ``(k, B)`` (fewer structures: padded with the semiring zero)."""
        return self._under(KMaxSemiring(k)).sum(log_potentials, lengths, _raw=True)

    def topk(self, log_potentials, k, lengths=None):
        """Indicators of the k best structures ``(k, B, event)``."""
        return self._under(KMaxSemiring(k)).marginals(log_potentials, lengths, _raw=True)

    def entropy(self, log_potentials, lengths=None):
        """Entropy (nats) of the Gibbs distribution ``(B,)``: one forward pass."""
        return self._under(EntropySemiring).sum(log_potentials, lengths)

    def sample(self, log_potentials, n, lengths=None, generator=None):
        """``n`` exact samples (forward filtering, backward sampling), ``(n, B, event)``
        indicators; reproducible from ``generator``. O(B·N·S·C²) + O(n·B·N·S·C) time."""
        lengths = self._prepare(log_potentials, lengths)
        with torch.no_grad():
            parts = core.sample_ffbs(self._to_spans(log_potentials), lengths, n, generator)
        return self._from_spans(parts.flatten(0, 1)).view((n,) + tuple(log_potentials.shape))


class StructDistribution(Distribution):
    """Distribution over the structures of a chain lattice (Gibbs: p(z) ∝ exp score(z)):
    torch-struct's constructor ``(log_potentials, lengths=None)``, properties and methods with
    the same shapes (event = the log-potentials' shape after B; ``sample``/``topk`` put the
    sample/k dimension first). With mixed lengths ``partition`` differs from torch-struct
    0.5's, which is wrong for semi-Markov K >= 3; ``sample`` takes ``generator=``. Subclasses
    (``LinearChainCRF``, ``SemiMarkovCRF``) set ``struct``, their ``ChainStruct``.

    log_potentials ``(B, *event)``; lengths ``(B,)`` or None."""

    struct: type[ChainStruct]
    arg_constraints: dict = {}

    def __init__(self, log_potentials: torch.Tensor, lengths=None, args=None):
        self.log_potentials = log_potentials
        self.lengths = lengths
        self.args = {} if args is None else args
        super().__init__(batch_shape=log_potentials.shape[:1],
                         event_shape=log_potentials.shape[1:], validate_args=False)

    def _struct(self, semiring=LogSemiring):
        return self.struct(semiring)

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
