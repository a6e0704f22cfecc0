"""MaxEnt in the dual, by stochastic exponentiated gradient with shrinking (EMNLP Eq. 9-16).

Dual (Eq. 9): D(alpha) = 1/(2 sigma^2) sum_k ||w_k(alpha)||^2 + sum_ik alpha_ik log alpha_ik
over per-example simplices, w_k(alpha) = sigma^2 sum_i (p~_ik - alpha_ik) phi_i (Eq. 10).
Per example (Algorithm 1): gradient Eq. 12, gap v_i = max_k - min_k (Eq. 16); an example
with v_i <= eps leaves the active set for good (shrinking). Otherwise the EG update Eq. 11
is tried with the example's own step eta_i, halved until D does not increase (Eq. 13 gives
the change in O(K)); on success w is updated in place (Eq. 14). alpha starts at Eq. 15.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from aligners.models.reorder._common import LinearSoftmax, fit, row_scores
from aligners.models.reorder.config import DualConfig

__all__ = ["DualMLR", "warmup"]


@njit(cache=True)
def _eg_pass(indptr, indices, data, labels, sqnorm, order, alpha, log_alpha, W, eta, active,
             sigma2, eps, max_trial, reset_step, eta0, growth):  # pragma: no cover
    K = W.shape[1]
    s = np.empty(K)
    g = np.empty(K)
    new = np.empty(K)
    log_new = np.empty(K)
    removed = 0
    failed = 0
    for ii in range(order.shape[0]):
        i = order[ii]
        row_scores(indptr, indices, data, W, i, s)
        y = labels[i]
        gmax = -np.inf
        gmin = np.inf
        for k in range(K):
            g[k] = 1.0 + log_alpha[i, k] + s[y] - s[k]  # Eq. 12
            gmax = max(gmax, g[k])
            gmin = min(gmin, g[k])
        if gmax - gmin <= eps:  # Eq. 16 within eps: shrink
            active[i] = False
            removed += 1
            continue
        step = eta0 if reset_step else eta[i]
        ok = False
        for _ in range(max_trial):
            m = -np.inf
            for k in range(K):
                log_new[k] = log_alpha[i, k] - step * g[k]  # Eq. 11 in log space
                m = max(m, log_new[k])
            z = 0.0
            for k in range(K):
                new[k] = np.exp(log_new[k] - m)
                z += new[k]
            log_z = m + np.log(z)
            delta = 0.0  # Eq. 13
            quad = 0.0
            for k in range(K):
                log_new[k] = max(log_new[k] - log_z, -690.0)
                new[k] = new[k] / z
                a = alpha[i, k]
                d = new[k] - a
                delta += new[k] * log_new[k] - a * log_alpha[i, k] - d * s[k]
                quad += d * d
            delta += 0.5 * sigma2 * sqnorm[i] * quad
            if delta <= 0.0:
                for k in range(K):
                    d = new[k] - alpha[i, k]
                    if d != 0.0:
                        c = sigma2 * d
                        for p in range(indptr[i], indptr[i + 1]):
                            W[indices[p], k] -= c * data[p]  # Eq. 14
                    alpha[i, k] = new[k]
                    log_alpha[i, k] = log_new[k]
                ok = True
                break
            step *= 0.5
        eta[i] = step * growth if ok else step
        if not ok:
            failed += 1
    return removed, failed


def warmup() -> None:
    """Compile the EG kernel (numba) so that timed fits measure training only: one pass on
    one example, with the argument types of every fit."""
    DualMLR(num_features=1).fit(np.ones((1, 1)), [0], max_iter=1)


class DualMLR(LinearSoftmax):
    """Dual MaxEnt trained by EG with shrinking. `weight` = w(alpha), (F, K) float64."""

    KIND = "reorder-dual-mlr"
    alpha: np.ndarray | None = None  # (E, K), set by `fit_epoch`

    def begin_fit(self, X, labels, *, init_eps: float = DualConfig.init_eps,
                  step: float = DualConfig.step, **_) -> dict:
        """State of an EG run over (E, F) CSR X and (E,) labels: alpha at Eq. 15, w(alpha)
        of Eq. 10, per-example steps, the active set. Memory O(E K + F K)."""
        state = self.data_state(X, labels)
        indptr, indices, data, y, n = (state[k] for k in ("indptr", "indices", "data", "y", "n"))
        K = self.num_classes
        alpha = np.full((n, K), init_eps / (K - 1))  # Eq. 15
        alpha[np.arange(n), y] = 1.0 - init_eps
        log_alpha = np.log(alpha)
        rows = np.repeat(np.arange(n), np.diff(indptr))
        sqnorm = np.bincount(rows, weights=data * data, minlength=n).astype(np.float64)
        resid = -alpha.copy()  # w(alpha) of Eq. 10 at the initial alpha
        resid[np.arange(n), y] += 1.0
        W = np.empty((self.num_features, K))
        for k in range(K):
            W[:, k] = np.bincount(indices, weights=self.sigma2 * data * resid[rows, k],
                                  minlength=self.num_features)
        del rows, resid
        return {**state, "sqnorm": sqnorm, "alpha": alpha, "log_alpha": log_alpha, "W": W,
                "eta": np.full(n, float(step)), "active": np.ones(n, dtype=bool),
                "order": np.arange(n, dtype=np.int64), "iteration": 0}

    def fit_epoch(self, state: dict, *, generator: torch.Generator,
                  eps: float = DualConfig.eps, max_trial: int = DualConfig.max_trial,
                  reset_step: bool = DualConfig.reset_step, step: float = DualConfig.step,
                  step_growth: float = DualConfig.step_growth, **_) -> dict | None:
        """One pass of Algorithm 1 over the active set in random order; None when no
        example is active. Appends to `history` and returns its record; `state["done"]`:
        the active set is empty (converged). Cost O(nnz(active rows) K)."""
        order, n = state["order"], state["n"]
        n_active = len(order)
        if n_active == 0:
            return None
        order = order[torch.randperm(n_active, generator=generator).numpy()]
        W, alpha, log_alpha, active = state["W"], state["alpha"], state["log_alpha"], \
            state["active"]
        removed, failed = _eg_pass(state["indptr"], state["indices"], state["data"], state["y"],
                                   state["sqnorm"], order, alpha, log_alpha, W, state["eta"],
                                   active, self.sigma2, eps, max_trial, reset_step,
                                   float(step), float(step_growth))
        state["order"] = order[active[order]]
        state["done"] = len(state["order"]) == 0
        state["iteration"] += 1
        rec = {"iteration": state["iteration"], "active_fraction": n_active / max(n, 1),
               "removed": int(removed), "failed": int(failed)}
        self.weight = torch.from_numpy(W.copy())
        self.alpha = alpha
        self.history.append(rec)
        return rec

    def fit(self, X, labels, *, max_iter: int = DualConfig.max_iter,
            generator: torch.Generator | None = None, **hp) -> DualMLR:
        """Algorithm 1 over (E, F) CSR X, (E,) labels with the settings `hp` (eps, init_eps,
        max_trial, reset_step, step, step_growth; `aligners.models.reorder._common.settings`):
        one iteration = one pass over the active set in random order (the family's one loop,
        `_common.fit`); stops when no example is active or after `max_iter`.

        `history` gets, per iteration, the active fraction at its start (EMNLP Fig. 1),
        removed/failed counts and seconds.
        Cost per iteration O(nnz(active rows) K); memory O(E K + F K).
        """
        return fit(self, X, labels, epochs=max_iter, generator=generator, **hp)
