"""Multinomial logistic regression (MaxEnt) in the primal, trained by SGD (EMNLP Eq. 5-8).

Objective (Eq. 6): P(W) = 1/(2 sigma^2) sum_k ||w_k||^2 - sum_i log p(o_i | phi_i),
p(o_k | phi) = softmax_k(w_k . phi) (Eq. 5). SGD picks one example at a time (Eq. 8) with
the per-example gradient of P/N: W / (sigma^2 N) - (onehot(o_i) - p_i) phi_i^T (Eq. 7),
step eta_t = eta0 / (1 + eta0 lambda t) (Bottou 2010); the L2 shrink is applied lazily
through a scalar (W = a V) so that one step costs O(nnz_i K), not O(F K).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from aligners.models.reorder._common import LinearSoftmax, fit, row_scores
from aligners.models.reorder.config import PrimalConfig

__all__ = ["PrimalMLR", "warmup"]


@njit(cache=True)
def _sgd_epoch(indptr, indices, data, labels, order, V, scale, lr0, lam, t):  # pragma: no cover
    K = V.shape[1]
    s = np.empty(K)
    for ii in range(order.shape[0]):
        i = order[ii]
        eta = lr0 / (1.0 + lr0 * lam * t)
        row_scores(indptr, indices, data, V, i, s)
        m = -np.inf
        for k in range(K):
            s[k] *= scale
            if s[k] > m:
                m = s[k]
        z = 0.0
        for k in range(K):
            s[k] = np.exp(s[k] - m)
            z += s[k]
        scale *= 1.0 - eta * lam
        if scale < 1e-9:
            V *= scale
            scale = 1.0
        y = labels[i]
        for k in range(K):
            g = (1.0 if k == y else 0.0) - s[k] / z
            if g == 0.0:
                continue
            step = eta * g / scale
            for p in range(indptr[i], indptr[i + 1]):
                V[indices[p], k] += step * data[p]
        t += 1.0
    return scale, t


def warmup() -> None:
    """Compile the SGD kernel (numba) so that timed fits measure training only: one epoch on
    one example, with the argument types of every fit."""
    PrimalMLR(num_features=1).fit(np.ones((1, 1)), [0], epochs=1)


class PrimalMLR(LinearSoftmax):
    """Primal MaxEnt. F features, K classes; `weight` is (F, K) float64."""

    KIND = "reorder-primal-mlr"

    def begin_fit(self, X, labels, **_) -> dict:
        """State of an SGD run over (E, F) CSR X and (E,) labels, for `fit_epoch`.
        Memory O(F K) besides X."""
        state = self.data_state(X, labels)
        return {**state, "lam": 1.0 / (self.sigma2 * max(state["n"], 1)),
                "V": self.weight.numpy().copy(), "t": 0.0, "epoch": 0}

    def fit_epoch(self, state: dict, *, lr: float, generator: torch.Generator, **_) -> dict:
        """One SGD epoch (random order from `generator`); updates `weight`, appends to
        `history` and returns its record. Cost O(nnz(X) K)."""
        order = torch.randperm(state["n"], generator=generator).numpy().astype(np.int64)
        V = state["V"]
        scale, state["t"] = _sgd_epoch(state["indptr"], state["indices"], state["data"],
                                       state["y"], order, V, 1.0, lr, state["lam"], state["t"])
        V *= scale
        self.weight = torch.from_numpy(V.copy())
        state["epoch"] += 1
        rec = {"epoch": state["epoch"]}
        self.history.append(rec)
        return rec

    def fit(self, X, labels, *, epochs: int = PrimalConfig.epochs, lr: float = PrimalConfig.lr,
            generator: torch.Generator | None = None) -> PrimalMLR:
        """SGD over (E, F) CSR X and (E,) labels for `epochs` epochs (the family's one loop,
        `aligners.models.reorder._common.fit`). Cost per epoch O(nnz(X) K); memory O(F K)
        besides X."""
        return fit(self, X, labels, epochs=epochs, generator=generator, lr=lr)
