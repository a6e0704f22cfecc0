"""Linear-chain CRF lattice with torch-struct 0.5's ``LinearChain`` conventions.

``log_potentials (B, N-1, C, C)``, ``[b, n, c_next, c_prev]`` = score of ``y[n+1] = c_next``,
``y[n] = c_prev`` (unary scores folded into the edges); ``lengths (B,)`` in 1..N (default N):
a sequence of length L uses edges ``0..L-2`` only. Parts: labels ``(B, N)`` <-> indicators
``(B, N-1, C, C)``, ``[b, n, y[n+1], y[n]] = 1`` for ``n < L-1``.

Cost O(B·N·C²) time, sequential over positions; Log stores the ``(B, N, C)`` forward chart
and computes marginals by an explicit outside pass; Max by backpointers; samples by forward
filtering, backward sampling. -inf scores are allowed, NaN/+inf raise ``AlignersInputError``;
caller tensors are never modified; works under ``torch.inference_mode``.
"""

from __future__ import annotations

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._chain_struct import ChainStruct, StructDistribution
from aligners.lattices._core import length_mask
from aligners.semirings import LogSemiring, MaxSemiring

__all__ = ["LinearChain", "LinearChainCRF", "log_partition", "marginals", "viterbi"]


class LinearChain(ChainStruct):
    """``LinearChain(semiring).sum(log_potentials, lengths)`` / ``.marginals(...)`` as in
    torch-struct; plus ``viterbi``, ``kmax``, ``topk``, ``entropy``, ``sample``, ``score``.
    log_potentials ``(B, N-1, C, C)``, lengths ``(B,)``."""

    @classmethod
    def _check(cls, log_potentials):
        if log_potentials.dim() != 4 or log_potentials.shape[2] != log_potentials.shape[3]:
            raise AlignersInputError(
                "linear-chain log_potentials must have shape (B, N-1, C, C), "
                f"got {tuple(log_potentials.shape)}"
            )

    @staticmethod
    def _raw_spans(log_potentials):
        return log_potentials.unsqueeze(2)

    @staticmethod
    def _from_spans(spans):
        return spans.squeeze(2)

    @staticmethod
    def to_parts(sequence, extra, lengths=None):
        """Labels ``(B, N)`` in 0..C-1 (``extra`` = C) -> indicators ``(B, N-1, C, C)`` long."""
        c = int(extra)
        sequence = torch.as_tensor(sequence).long()
        batch, n = sequence.shape
        if batch and n and (int(sequence.min()) < 0 or int(sequence.max()) >= c):
            raise AlignersInputError(f"labels must lie in [0, {c - 1}]")
        if lengths is None:
            lengths = torch.full((batch,), n, dtype=torch.long)
        lengths = torch.as_tensor(lengths).long().to(sequence.device)
        parts = torch.zeros(batch, max(n - 1, 0), c, c, dtype=torch.long, device=sequence.device)
        if n < 2:
            return parts
        dev = sequence.device
        keep = length_mask(lengths - 1, n - 1).long()  # edges n < L-1
        parts[torch.arange(batch, device=dev)[:, None], torch.arange(n - 1, device=dev),
              sequence[:, 1:], sequence[:, :-1]] = keep
        return parts

    @staticmethod
    def from_parts(edge):
        """Indicators ``(B, N-1, C, C)`` -> (labels ``(B, N)`` long, C)."""
        batch, n_1, c, _ = edge.shape
        labels = torch.zeros(batch, n_1 + 1, dtype=torch.long, device=edge.device)
        if n_1 == 0:
            return labels, c
        nxt = edge.sum(-1)  # (B, N-1, C): label at n+1
        prv = edge[:, 0].sum(-2)  # (B, C): label at 0
        labels[:, 1:] = torch.where(nxt.ne(0).any(-1), nxt.argmax(-1), 0)
        labels[:, 0] = torch.where(prv.ne(0).any(-1), prv.argmax(-1), 0)
        return labels, c


def log_partition(log_potentials, *, lengths=None, method="auto"):
    """log Z ``(B,)`` of ``(B, N-1, C, C)`` potentials; gradient = marginals.
    O(B·N·C²) time, O(B·N·C) stored for backward (``method``: see ``ChainStruct``; the scan:
    O(B·N·C³) time in log2 N levels, O(B·N·C²) memory, autograd backward)."""
    return LinearChain(LogSemiring, method).sum(log_potentials, lengths)


def marginals(log_potentials, *, lengths=None, method="auto"):
    """Edge marginals ``(B, N-1, C, C)`` by explicit forward-backward, O(B·N·C²)."""
    return LinearChain(LogSemiring, method).marginals(log_potentials, lengths)


def viterbi(log_potentials, *, lengths=None):
    """Best score ``(B,)`` and best label sequence ``(B, N)`` (0 past each length)."""
    score, parts = LinearChain(MaxSemiring).viterbi(log_potentials, lengths)
    return score, LinearChain.from_parts(parts)[0]


class LinearChainCRF(StructDistribution):
    """Linear-chain CRF: log_potentials ``(B, N-1, C, C)`` as ``[b, n, y[n+1], y[n]]``;
    compact form: labels ``(B, N)`` in 0..C-1."""

    struct = LinearChain
