"""Brute-force enumeration oracle for the chain lattices (tests only).

Enumerates every structure of one example as an indicator tensor shaped like the
log-potentials, so every semiring's answer can be computed from the list directly.
"""

from __future__ import annotations

import itertools

import pytest
import torch

__all__ = [
    "chain_structures",
    "semimarkov_structures",
    "oracle",
    "one_thread",
    "marginal_frequencies_ok",
]


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


@pytest.fixture
def one_thread():
    """Large single-example DPs are many small kernels: on the shared 2-core CI machine,
    OpenMP contention makes them several times slower with 2 threads."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def marginal_frequencies_ok(samples: torch.Tensor, marginals: torch.Tensor) -> bool:
    """Sample means of indicator tensors ``(n, *shape)`` within 5 standard errors of the
    exact marginals, entry by entry."""
    n = samples.shape[0]
    sd = (marginals * (1 - marginals) / n).sqrt()
    return bool(((samples.mean(0) - marginals).abs() <= 5 * sd + 1e-9).all())
