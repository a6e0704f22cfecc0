"""Brute-force enumeration oracle for the chain lattices (tests only).

Enumerates every structure of one example as an indicator tensor shaped like the
log-potentials, so every semiring's answer can be computed from the list directly.
"""

from __future__ import annotations

import itertools

import torch

__all__ = ["chain_structures", "semimarkov_structures", "oracle"]


def chain_structures(n: int, c: int, length: int) -> list[torch.Tensor]:
    """All label sequences of ``length`` as ``(N-1, C, C)`` indicators."""
    out = []
    for y in itertools.product(range(c), repeat=length):
        parts = torch.zeros(n - 1, c, c, dtype=torch.float64)
        for i in range(length - 1):
            parts[i, y[i + 1], y[i]] = 1
        out.append(parts)
    return out


def _compositions(total: int, most: int):
    if total == 0:
        yield []
        return
    for k in range(1, min(most, total) + 1):
        for rest in _compositions(total - k, most):
            yield [k, *rest]


def semimarkov_structures(n: int, k: int, c: int, length: int) -> list[torch.Tensor]:
    """All segmentations of points 0..length-1 (segments 1..K-1) with labels at segment
    ends and point 0, as ``(N-1, K, C, C)`` indicators."""
    out = []
    for segs in _compositions(length - 1, k - 1):
        for labels in itertools.product(range(c), repeat=len(segs) + 1):
            parts = torch.zeros(n - 1, k, c, c, dtype=torch.float64)
            pos = 0
            for i, span in enumerate(segs):
                parts[pos, span, labels[i + 1], labels[i]] = 1
                pos += span
            out.append(parts)
    return out


def oracle(log_potentials: torch.Tensor, structures: list[torch.Tensor]) -> dict:
    """Every semiring's answer for one example (log_potentials = one example's event)."""
    parts = torch.stack(structures).to(log_potentials.dtype)
    terms = torch.where(parts != 0, parts * log_potentials, torch.zeros_like(parts))
    scores = terms.flatten(1).sum(-1)
    probs = scores.softmax(0)
    order = scores.argsort(descending=True)
    return {
        "log_partition": scores.logsumexp(0),
        "marginals": (probs.view(-1, *[1] * log_potentials.dim()) * parts).sum(0),
        "max": scores.max(),
        "argmax": parts[order[0]],
        "sorted_scores": scores[order],
        "sorted_parts": parts[order],
        "entropy": -torch.special.xlogy(probs, probs).sum(),
        "count": len(structures),
    }
