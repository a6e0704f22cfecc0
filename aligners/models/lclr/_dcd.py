"""Dual coordinate descent (Hsieh et al. 2008) for LCLR's inner problem, Eq. (5).

Shapes: E examples with labels y_e in {-1, +1}; each example owns K_e >= 1 sparse feature
vectors x_ek (an "item": a positive's fixed structure, or the cached structures of a
negative), F features. The primal is the squared-hinge SVM with one slack per example,

    P(w) = 1/2 |w|^2 + C sum_e max(0, max_k 1 - y_e w.x_ek)^2,

whose dual (derived as for the L2-loss SVM, with the slack shared by an example's items) is

    D(a) = 1/2 |w(a)|^2 + sum_e (sum_k a_ek)^2 / (4C) - sum a,   a >= 0,
    w(a) = sum a_ek y_e x_ek,          P(w*) = -D(a*)  at the optimum.

Each coordinate step is exact: g = y_e w.x_ek - 1 + A_e / (2C), a_ek <- max(0, a_ek - g/Q),
Q = |x_ek|^2 + 1/(2C), A_e = sum_k a_ek. Cost: O(nnz) per epoch (numba), O(F + items) memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numba
import numpy as np

__all__ = ["DualProblem", "dcd_solve", "primal_objective", "dual_objective"]


@dataclass
class DualProblem:
    """Items in CSR form plus their example, label and dual value (grown by `add`)."""

    num_features: int
    C: float
    indptr: list = field(default_factory=lambda: [0])
    indices: list = field(default_factory=list)
    data: list = field(default_factory=list)
    example: list = field(default_factory=list)
    y: list = field(default_factory=list)
    alpha: list = field(default_factory=list)

    def add(self, *, example: int, y: int, cols: np.ndarray, vals: np.ndarray,
            alpha: float = 0.0) -> int:
        """Append item x (sparse cols/vals) of `example` with label y; returns its index."""
        self.indices.extend(np.asarray(cols, dtype=np.int64).tolist())
        self.data.extend(np.asarray(vals, dtype=np.float64).tolist())
        self.indptr.append(len(self.indices))
        self.example.append(example)
        self.y.append(float(y))
        self.alpha.append(float(alpha))
        return len(self.example) - 1

    def arrays(self):
        return (np.asarray(self.indptr, np.int64), np.asarray(self.indices, np.int64),
                np.asarray(self.data, np.float64), np.asarray(self.example, np.int64),
                np.asarray(self.y, np.float64), np.asarray(self.alpha, np.float64))


@numba.njit(cache=False)
def _epoch(order, indptr, indices, data, example, y, alpha, asum, w, qii, inv2c):
    pg_max = 0.0
    for t in range(order.shape[0]):
        i = order[t]
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += w[indices[p]] * data[p]
        e = example[i]
        g = y[i] * s - 1.0 + asum[e] * inv2c
        pg = min(g, 0.0) if alpha[i] == 0.0 else g
        if abs(pg) > pg_max:
            pg_max = abs(pg)
        if pg != 0.0:
            new = max(0.0, alpha[i] - g / qii[i])
            d = (new - alpha[i]) * y[i]
            alpha[i] = new
            asum[e] += d * y[i]
            for p in range(indptr[i], indptr[i + 1]):
                w[indices[p]] += d * data[p]
    return pg_max


def _weights(indptr, indices, data, y, alpha, num_features):
    w = np.zeros(num_features)
    rows = np.repeat(np.arange(len(y)), np.diff(indptr))
    np.add.at(w, indices, data * (alpha * y)[rows])
    return w


def dcd_solve(problem: DualProblem, *, num_examples: int, tol: float = 1e-3,
              max_epochs: int = 1000, seed: int = 0) -> tuple[np.ndarray, int]:
    """Minimise D(a) from the stored alphas (warm start); returns (w (F,), epochs run).

    Stops when the largest projected-gradient magnitude of an epoch is below `tol`.
    Cost: O(nnz) per epoch. Updates `problem.alpha` in place.
    """
    if problem.C <= 0:
        raise ValueError(f"C must be > 0, got {problem.C}")
    indptr, indices, data, example, y, alpha = problem.arrays()
    n = len(y)
    if n == 0:
        return np.zeros(problem.num_features), 0
    w = _weights(indptr, indices, data, y, alpha, problem.num_features)
    asum = np.bincount(example, weights=alpha, minlength=num_examples).astype(np.float64)
    sq = np.zeros(n)
    rows = np.repeat(np.arange(n), np.diff(indptr))
    np.add.at(sq, rows, data * data)
    inv2c = 1.0 / (2.0 * problem.C)
    qii = sq + inv2c
    rng = np.random.default_rng(seed)
    epochs = 0
    while epochs < max_epochs:
        epochs += 1
        order = rng.permutation(n)
        if _epoch(order, indptr, indices, data, example, y, alpha, asum, w, qii, inv2c) < tol:
            break
    problem.alpha = alpha.tolist()
    return w, epochs


def primal_objective(problem: DualProblem, w: np.ndarray, *, num_examples: int) -> float:
    """P(w) over the stored items (Eq. (5) with the caches as they are). Cost: O(nnz)."""
    indptr, indices, data, example, y, _ = problem.arrays()
    rows = np.repeat(np.arange(len(y)), np.diff(indptr))
    margins = np.zeros(len(y))
    np.add.at(margins, rows, w[indices] * data)
    loss = np.maximum(0.0, 1.0 - y * margins)
    worst = np.zeros(num_examples)
    np.maximum.at(worst, example, loss)
    return 0.5 * float(w @ w) + problem.C * float(np.sum(worst ** 2))


def dual_objective(problem: DualProblem, alpha: np.ndarray, *, num_examples: int) -> float:
    """D(alpha) (minimised by `dcd_solve`). Cost: O(nnz)."""
    indptr, indices, data, example, y, _ = problem.arrays()
    alpha = np.asarray(alpha, np.float64)
    w = _weights(indptr, indices, data, y, alpha, problem.num_features)
    asum = np.bincount(example, weights=alpha, minlength=num_examples)
    return 0.5 * float(w @ w) + float(np.sum(asum ** 2)) / (4 * problem.C) - float(alpha.sum())
