"""Semi-Markov (segmental) CRF lattice with torch-struct 0.5's ``SemiMarkov`` conventions.

``log_potentials (B, N-1, K, C, C)``, ``[b, n, k, c_next, c_prev]`` = score of a segment of
length ``k`` (1 <= k <= K-1; index 0 unused) from point ``n`` (label ``c_prev``) to point
``n+k`` (label ``c_next``); a structure tiles points ``0..L-1`` (``lengths (B,)`` in 1..N).
Unlike torch-struct 0.5, mixed lengths are exact for every K. Parts: a sequence ``(B, N)``
with labels at segment end points and ``-1`` inside <-> indicators ``(B, N-1, K, C, C)``.

Cost O(B·N·K·C²) time, sequential over end points; otherwise as ``linear_chain``.
"""

from __future__ import annotations

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._chain_struct import ChainStruct, StructDistribution
from aligners.semirings import LogSemiring, MaxSemiring

__all__ = ["SemiMarkov", "SemiMarkovCRF", "log_partition", "marginals", "viterbi"]


class SemiMarkov(ChainStruct):
    """``SemiMarkov(semiring).sum(log_potentials, lengths)`` / ``.marginals(...)`` as in
    torch-struct, plus ``viterbi``, ``kmax``, ``topk``, ``entropy``, ``sample``, ``score``.
    log_potentials ``(B, N-1, K, C, C)``, lengths ``(B,)``."""

    event_dims = 4
    offset = 1  # span slot k = 0 is unused (segments have length 1..K-1)

    @classmethod
    def _check(cls, log_potentials):
        shape = tuple(log_potentials.shape)
        if log_potentials.dim() != 5 or shape[3] != shape[4] or shape[2] < 2:
            raise AlignersInputError(
                f"semi-Markov log_potentials must have shape (B, N-1, K>=2, C, C), got {shape}"
            )

    @staticmethod
    def _raw_spans(log_potentials):
        return log_potentials

    @staticmethod
    def _from_spans(spans):
        return torch.cat([torch.zeros_like(spans[:, :, :1]), spans], 2)

    @staticmethod
    def to_parts(sequence, extra, lengths=None):
        """Sequence ``(B, N)`` in {-1, 0..C-1} (``extra`` = (C, K)) -> indicators
        ``(B, N-1, K, C, C)`` long. Points at or past ``lengths`` are ignored; point 0 and
        point ``L-1`` must be labelled and no segment may be longer than K-1."""
        c, k_max = (int(x) for x in extra)
        sequence = torch.as_tensor(sequence).long()
        batch, n = sequence.shape
        if lengths is None:
            lengths = [n] * batch
        parts = torch.zeros(batch, max(n - 1, 0), k_max, c, c, dtype=torch.long,
                            device=sequence.device)
        for b in range(batch):
            length = int(lengths[b])
            row = sequence[b, :length].tolist()
            if row[0] < 0 or row[-1] < 0 or max(row) >= c or min(row) < -1:
                raise AlignersInputError(
                    f"sequence {b}: points 0 and L-1 need labels in [0, {c - 1}], got {row}"
                )
            points = [i for i, y in enumerate(row) if y >= 0]
            for start, end in zip(points, points[1:]):
                if end - start >= k_max:
                    raise AlignersInputError(
                        f"sequence {b}: segment {start}..{end} longer than K-1 = {k_max - 1}"
                    )
                parts[b, start, end - start, row[end], row[start]] = 1
        return parts

    @staticmethod
    def from_parts(edge):
        """Indicators ``(B, N-1, K, C, C)`` -> (sequence ``(B, N)`` in {-1, 0..C-1}, (C, K))."""
        batch, n_1, k_max, c, _ = edge.shape
        labels = torch.full((batch, n_1 + 1), -1, dtype=torch.long, device=edge.device)
        on = edge.nonzero()
        labels[on[:, 0], on[:, 1] + on[:, 2]] = on[:, 3]
        first = on[:, 1] == 0
        labels[on[first, 0], 0] = on[first, 4]
        return labels, (c, k_max)


def log_partition(log_potentials, *, lengths=None, method="auto"):
    """log Z ``(B,)`` of ``(B, N-1, K, C, C)`` potentials; gradient = marginals.
    O(B·N·K·C²) time, O(B·N·C) stored for backward (``method``: see ``ChainStruct``; the scan:
    O(B·N·C³) time in log2 N levels, O(B·N·C²) memory, autograd backward)."""
    return SemiMarkov(LogSemiring, method).sum(log_potentials, lengths)


def marginals(log_potentials, *, lengths=None, method="auto"):
    """Segment marginals ``(B, N-1, K, C, C)`` by explicit forward-backward."""
    return SemiMarkov(LogSemiring, method).marginals(log_potentials, lengths)


def viterbi(log_potentials, *, lengths=None):
    """Best score ``(B,)`` and best segmentation as a sequence ``(B, N)`` in {-1, 0..C-1}."""
    score, parts = SemiMarkov(MaxSemiring).viterbi(log_potentials, lengths)
    seq = SemiMarkov.from_parts(parts)[0]
    seq[:, 0] = seq[:, 0].clamp(min=0)  # a length-1 structure is one label (any: all tie)
    return score, seq


class SemiMarkovCRF(StructDistribution):
    """Semi-Markov CRF: log_potentials ``(B, N-1, K, C, C)`` as
    ``[b, n, k, y[n+k], y[n]]`` (segment lengths 1..K-1); compact form: ``(B, N)`` labels at
    segment ends, ``-1`` inside segments."""

    struct = SemiMarkov
