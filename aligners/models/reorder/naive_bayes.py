"""Multinomial naive Bayes reordering with MI feature selection (WMT 2014, Eq. 5-16).

Class prior p(o_k) = N_k / N. Per-class feature counts n_km = sum_{i in k} phi_im.
- MAP under a symmetric Dirichlet(alpha) prior (Eq. 10):
  q_km = (alpha - 1 + n_km) / (M (alpha - 1) + sum_m' n_km'),  alpha > 1.
- Bayesian predictive (Eq. 11-13), beta_km = alpha + n_km:
  log p(phi | o_k) = log C + lgamma(B_k) - lgamma(B_k + |phi|)
                     + sum_m [lgamma(beta_km + phi_m) - lgamma(beta_km)],  B_k = sum_m beta_km
  (C, the multinomial coefficient, is the same for every class and cancels).
- Mutual information of each binary feature (present / absent) with the class (Eq. 15),
  normalised by min(H(X), H(Y)) (Eq. 16); `select` keeps a column subset.
"""

import numpy as np
import torch

from aligners.errors import AlignersInputError
from aligners.models.reorder._common import Saved, csr_arrays, sparse_matmul
from aligners.models.reorder.config import NaiveBayesConfig

__all__ = ["NaiveBayes", "mutual_information", "mi_kept"]


def _class_sums(X, y: np.ndarray, num_classes: int, *, presence: bool = False) -> np.ndarray:
    """(F, K) float64: the sum over class-k rows of feature m's counts (`presence`: of 1 per
    row containing m). Cost O(nnz)."""
    indptr, indices, data = csr_arrays(X)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(indptr))
    out = np.zeros((X.shape[1], num_classes))
    np.add.at(out, (indices, y[rows]), 1.0 if presence else data)
    return out


def mutual_information(X, labels, *, num_classes: int, normalized: bool = True) -> torch.Tensor:
    """(F,) I(X_m; Y) of each feature's presence with the class, in nats (Eq. 15 / 16).

    Uses document frequencies: p(x=1, y=k) = #rows of class k containing m / N.
    Cost O(nnz + F K).
    """
    n_rows = X.shape[0]
    y = np.asarray(labels, dtype=np.int64)
    if n_rows == 0:
        raise AlignersInputError("mutual information needs at least one example")
    df = _class_sums(X, y, num_classes, presence=True)
    n_k = np.bincount(y, minlength=num_classes).astype(np.float64)
    joint = np.stack([n_k[None, :] - df, df], axis=1) / n_rows  # (F, 2, K): x=0, x=1
    p_x = joint.sum(axis=2, keepdims=True)  # (F, 2, 1)
    p_y = n_k / n_rows  # (K,)
    with np.errstate(divide="ignore", invalid="ignore"):
        mi = np.where(joint > 0, joint * np.log(joint / (p_x * p_y)), 0.0).sum(axis=(1, 2))
        if normalized:
            p_x = p_x[:, :, 0]
            h_x = -np.where(p_x > 0, p_x * np.log(p_x), 0.0).sum(1)
            h_y = -(p_y[p_y > 0] * np.log(p_y[p_y > 0])).sum()
            denom = np.minimum(h_x, h_y)
            mi = np.where(denom > 0, mi / denom, 0.0)
    return torch.from_numpy(np.maximum(mi, 0.0))


def mi_kept(scores: np.ndarray, fraction: float) -> np.ndarray:
    """The feature columns (sorted) left when the round(fraction * F) features of lowest
    `scores` (F,) are removed (ties: the lower column goes first). O(F log F)."""
    order = np.argsort(scores, kind="stable")
    return np.sort(order[int(round(float(fraction) * len(order))):])


class NaiveBayes(Saved):
    """Multinomial NB over F features, K classes; `inference` is "map" or "bayes"."""

    KIND = "reorder-naive-bayes"
    HPARAMS = {"num_features": int, "num_classes": int, "alpha": float, "inference": str}
    FLOAT32 = ("counts",)

    def __init__(self, *, num_features: int, num_classes: int = 3,
                 alpha: float = NaiveBayesConfig.alpha,
                 inference: str = NaiveBayesConfig.inference):
        if inference not in ("map", "bayes"):
            raise AlignersInputError(f"inference {inference!r}; expected map or bayes")
        if inference == "map" and alpha <= 1.0:
            raise AlignersInputError("the MAP estimate (Eq. 10) needs a Dirichlet alpha > 1")
        if alpha <= 0:
            raise AlignersInputError("Dirichlet alpha must be positive")
        self.num_features, self.num_classes = num_features, num_classes
        self.alpha, self.inference = alpha, inference
        self.counts = torch.zeros(num_features, num_classes, dtype=torch.float64)  # n_km
        self.class_counts = torch.zeros(num_classes, dtype=torch.float64)  # N_k

    def fit(self, X, labels) -> "NaiveBayes":
        """One pass over (E, F) CSR X and (E,) labels. Cost O(nnz + F K)."""
        if X.shape[1] != self.num_features:
            raise AlignersInputError(f"X has {X.shape[1]} features, model {self.num_features}")
        y = np.asarray(labels, dtype=np.int64)
        self.counts = torch.from_numpy(_class_sums(X, y, self.num_classes))
        self.class_counts = torch.from_numpy(
            np.bincount(y, minlength=self.num_classes).astype(np.float64))
        return self

    def log_q(self) -> torch.Tensor:
        """(F, K) log of the MAP estimate of Eq. 10."""
        a1 = self.alpha - 1.0
        num = a1 + self.counts
        den = self.num_features * a1 + self.counts.sum(dim=0, keepdim=True)
        return num.log() - den.log()

    def log_likelihood(self, X) -> torch.Tensor:
        """(E, K) log p(phi | o_k) up to the class-independent log C."""
        if self.inference == "map":
            return sparse_matmul(X, self.log_q())
        beta = self.alpha + self.counts  # Eq. 13, (F, K)
        big_b = beta.sum(dim=0)  # (K,)
        indptr, indices, data = csr_arrays(X)
        n = X.shape[0]
        b = beta[torch.from_numpy(indices)]  # (nnz, K)
        x = torch.from_numpy(data)[:, None]
        per_nz = torch.lgamma(b + x) - torch.lgamma(b)
        rows = torch.from_numpy(np.repeat(np.arange(n), np.diff(indptr)))
        total = torch.zeros(n, self.num_classes, dtype=torch.float64).index_add_(0, rows, per_nz)
        length = torch.zeros(n, dtype=torch.float64).index_add_(0, rows, x[:, 0])
        return total + torch.lgamma(big_b)[None, :] - torch.lgamma(big_b[None, :] + length[:, None])

    def predict_log_proba(self, X) -> torch.Tensor:
        """(E, F) CSR -> (E, K) log p(o_k | phi) (Eq. 5); the class prior log N_k / N (a class
        never seen gets log 0 = -inf, never chosen)."""
        log_prior = (self.class_counts / self.class_counts.sum()).log()
        return (self.log_likelihood(X) + log_prior[None, :]).log_softmax(dim=1)

    def select(self, keep: np.ndarray) -> "NaiveBayes":
        """A model restricted to the feature columns `keep` (M = len(keep) in Eq. 10)."""
        keep = np.asarray(keep, dtype=np.int64)
        out = NaiveBayes(**{**self.hparams(), "num_features": len(keep)})
        out.counts = self.counts[torch.from_numpy(keep)].clone()
        out.class_counts = self.class_counts.clone()
        return out

    def state(self) -> dict[str, torch.Tensor]:
        return {"counts": self.counts, "class_counts": self.class_counts}

    def set_state(self, state: dict[str, torch.Tensor], path: str | None = None) -> None:
        self.counts = state["counts"].double()
        self.class_counts = state["class_counts"].double()
        if tuple(self.counts.shape) != (self.num_features, self.num_classes):
            raise AlignersInputError("counts do not match the config", path=path)
