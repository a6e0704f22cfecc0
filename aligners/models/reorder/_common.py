"""Shared helpers for the reordering models: CSR plumbing, and export through
`aligners/export.py` (one model folder format for every family)."""

from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from aligners.errors import AlignersInputError

__all__ = [
    "LinearSoftmax",
    "csr_arrays",
    "sparse_matmul",
    "write_reorderer",
    "read_reorderer",
    "error_rate",
]


def csr_arrays(X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr int64, indices int64, data float64) numpy views of a scipy or torch CSR (E, F)."""
    if isinstance(X, torch.Tensor):
        if X.layout != torch.sparse_csr:
            raise AlignersInputError("expected a torch.sparse_csr_tensor of features")
        return (
            np.asarray(X.crow_indices().numpy(), dtype=np.int64),
            np.asarray(X.col_indices().numpy(), dtype=np.int64),
            np.asarray(X.values().numpy(), dtype=np.float64),
        )
    X = sp.csr_matrix(X)
    return (np.asarray(X.indptr, dtype=np.int64), np.asarray(X.indices, dtype=np.int64),
            np.asarray(X.data, dtype=np.float64))


def sparse_matmul(X, W: torch.Tensor) -> torch.Tensor:
    """(E, F) CSR @ (F, K) dense -> (E, K) dense, in W's dtype. Cost O(nnz * K)."""
    if not isinstance(X, torch.Tensor):
        X = sp.csr_matrix(X)
        X = torch.sparse_csr_tensor(
            torch.from_numpy(X.indptr.astype(np.int64)),
            torch.from_numpy(X.indices.astype(np.int64)),
            torch.from_numpy(X.data),
            size=X.shape,
            check_invariants=False,
        )
    if X.shape[1] != W.shape[0]:
        raise AlignersInputError(f"features have {X.shape[1]} columns, model has {W.shape[0]}")
    X = X.to(W.dtype)
    if X._nnz() == 0:
        return torch.zeros(X.shape[0], W.shape[1], dtype=W.dtype)
    return torch.sparse.mm(X, W)


def write_reorderer(directory, *, kind: str, tensors: dict[str, torch.Tensor], config: dict,
                    meta: dict | None = None, features: list | None = None) -> Path:
    """Export through `aligners.export.write_model` (atomic; safetensors + config.json).

    `meta` (extraction / feature settings) is merged into the config; `features` (the
    described feature list of a featurised model) goes to `features.json`.
    """
    from aligners.export import write_model

    extras = {"features": features} if features is not None else None
    return write_model(directory, kind=kind, tensors=tensors, config={**config, **(meta or {})},
                       extras=extras)


def read_reorderer(directory, kind: str):
    """`aligners.export.read_model(directory, kind=kind)` (AlignersInputError when wrong)."""
    from aligners.export import ModelFolder, read_model

    return directory if isinstance(directory, ModelFolder) else read_model(directory, kind=kind)


def error_rate(log_proba: torch.Tensor, labels) -> float:
    """Fraction of rows whose argmax class differs from `labels` (E,)."""
    labels = torch.as_tensor(np.asarray(labels), dtype=torch.int64)
    if len(labels) == 0:
        return float("nan")
    return float((log_proba.argmax(dim=1) != labels).double().mean())


class LinearSoftmax:
    """p(o | phi) = softmax(phi W): the prediction and export shared by the primal and dual
    MaxEnt models. F features, K classes; `weight` is (F, K) float64. Subclasses set `KIND`
    (the `kind` written into the exported config) and train `weight`.
    """

    KIND = ""

    def __init__(self, *, num_features: int, num_classes: int = 3, sigma2: float):
        self.num_features, self.num_classes, self.sigma2 = num_features, num_classes, sigma2
        self.weight = torch.zeros(num_features, num_classes, dtype=torch.float64)
        self.history: list[dict] = []
        self.setup_seconds = 0.0  # set by `begin_fit`

    def predict_log_proba(self, X) -> torch.Tensor:
        """(E, F) CSR -> (E, K) log p(o | phi)."""
        return sparse_matmul(X, self.weight).log_softmax(dim=1)

    def hparams(self) -> dict:
        """The plain-JSON constructor arguments."""
        return {"num_features": self.num_features, "num_classes": self.num_classes,
                "sigma2": self.sigma2}

    def save(self, directory, *, meta: dict | None = None, features: list | None = None):
        """Export (`aligners/export.py`, kind `KIND`); `meta` joins the config."""
        return write_reorderer(directory, kind=self.KIND, tensors={"weight": self.weight.float()},
                               config=self.hparams(), meta=meta, features=features)

    @classmethod
    def load(cls, directory):
        """The model saved in `directory` (a path or an `export.ModelFolder`)."""
        folder = read_reorderer(directory, cls.KIND)
        c = folder.config
        try:
            model = cls(num_features=int(c["num_features"]), num_classes=int(c["num_classes"]),
                        sigma2=float(c["sigma2"]))
        except (KeyError, TypeError, ValueError) as err:
            raise AlignersInputError(f"config.json lacks a valid {err}",
                                     path=str(folder.path)) from None
        weight = folder.tensor("weight").double()
        if tuple(weight.shape) != (model.num_features, model.num_classes):
            raise AlignersInputError(f"weight has shape {tuple(weight.shape)}, config says "
                                     f"({model.num_features}, {model.num_classes})",
                                     path=str(folder.path))
        if not torch.isfinite(weight).all():
            raise AlignersInputError("non-finite weights in model.safetensors",
                                     path=str(folder.path))
        model.weight = weight
        return model
