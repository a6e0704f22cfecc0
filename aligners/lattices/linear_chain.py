"""Linear-chain CRF lattice with torch-struct 0.5's ``LinearChain`` conventions.

Shapes: ``log_potentials (B, N-1, C, C)`` with ``[b, n, c_next, c_prev]`` = score of labels
``y[n+1] = c_next`` and ``y[n] = c_prev`` (unary scores are folded into the edges, as in
torch-struct: e.g. add ``unary[n+1]`` to ``[:, n, :, :]`` rows and ``unary[0]`` to edge 0's
columns); ``lengths (B,)`` in 1..N (default all N), a sequence of length L uses edges
``0..L-2`` only and edges from ``L-1`` on get zero marginal. Unlike torch-struct, no length
needs to equal N.

Parts (``to_parts`` / ``from_parts``): a label sequence ``(B, N)`` in 0..C-1 is encoded as
indicators ``(B, N-1, C, C)`` with ``[b, n, y[n+1], y[n]] = 1`` for ``n < L-1``, 0 elsewhere;
``from_parts`` inverts it (positions past the end decode as 0).

Costs: forward O(B·N·C²) time as a sequential recursion over positions; the Log semiring
stores only the ``(B, N, C)`` forward chart for backward, and the backward (marginals) is
an explicit outside pass, O(B·N·C²) time. Max: Viterbi with backpointers. Samples:
explicit forward filtering, backward sampling (``sample``, ``sample_labels``; the sampling
semiring is the cross-check ``sample_semiring``). KMax/Entropy (and any torch-struct
semiring): the same recursion under the semiring, with autograd for k-best structures.
-inf scores (forbidden) are allowed; NaN or +inf raise ``AlignersInputError``.
The caller's tensors are never modified (no ``requires_grad_``) and everything works under
``torch.inference_mode``.
"""

from __future__ import annotations

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._chain_struct import ChainStruct
from aligners.semirings import LogSemiring, MaxSemiring

__all__ = ["LinearChain", "log_partition", "marginals", "viterbi"]


class LinearChain(ChainStruct):
    """``LinearChain(semiring).sum(log_potentials, lengths)`` / ``.marginals(...)`` as in
    torch-struct; plus ``viterbi``, ``kmax``, ``topk``, ``entropy``, ``sample``, ``score``.
    log_potentials ``(B, N-1, C, C)``, lengths ``(B,)``."""

    event_dims = 3

    @classmethod
    def _check(cls, log_potentials):
        if log_potentials.dim() != 4 or log_potentials.shape[2] != log_potentials.shape[3]:
            raise AlignersInputError(
                "linear-chain log_potentials must have shape (B, N-1, C, C), "
                f"got {tuple(log_potentials.shape)}"
            )

    @staticmethod
    def _to_spans(log_potentials):
        return log_potentials.unsqueeze(2)

    _raw_spans = _to_spans

    @staticmethod
    def _from_spans(spans, like):
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
        b, pos = torch.meshgrid(torch.arange(batch, device=dev), torch.arange(n - 1, device=dev),
                                indexing="ij")
        keep = (pos < (lengths - 1).view(-1, 1)).long()
        parts[b, pos, sequence[:, 1:], sequence[:, :-1]] = keep
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
