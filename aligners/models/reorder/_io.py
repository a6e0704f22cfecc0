"""Shared helpers for the reordering models: CSR plumbing and safetensors + JSON export."""

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from safetensors.torch import load_file, save_file

from aligners.errors import AlignersInputError

__all__ = ["LinearSoftmax", "csr_arrays", "sparse_matmul", "save_model", "load_model", "error_rate"]


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


def save_model(directory, tensors: dict[str, torch.Tensor], config: dict) -> Path:
    """Write `model.safetensors` + `config.json` in `directory` (no pickle)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(d / "model.safetensors"))
    (d / "config.json").write_text(json.dumps(config, indent=1))
    return d


def load_model(directory, expected_kind: str) -> tuple[dict[str, torch.Tensor], dict]:
    """Read what `save_model` wrote; check `config["kind"]`."""
    d = Path(directory)
    if not (d / "config.json").is_file():
        raise AlignersInputError(f"{d}: no config.json (not an exported reordering model)")
    config = json.loads((d / "config.json").read_text())
    if config.get("kind") != expected_kind:
        raise AlignersInputError(
            f"{d}: model kind {config.get('kind')!r}, expected {expected_kind!r}")
    return load_file(str(d / "model.safetensors")), config


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

    def __init__(self, *, num_features: int, num_classes: int = 3, sigma2: float = 1.0):
        self.num_features, self.num_classes, self.sigma2 = num_features, num_classes, sigma2
        self.weight = torch.zeros(num_features, num_classes, dtype=torch.float64)
        self.history: list[dict] = []

    def predict_log_proba(self, X) -> torch.Tensor:
        """(E, F) CSR -> (E, K) log p(o | phi)."""
        return sparse_matmul(X, self.weight).log_softmax(dim=1)

    def save(self, directory, extra: dict | None = None) -> None:
        """safetensors + JSON (no pickle); `extra` goes into the config."""
        config = {"kind": self.KIND, "num_features": self.num_features,
                  "num_classes": self.num_classes, "sigma2": self.sigma2, **(extra or {})}
        save_model(directory, {"weight": self.weight.float()}, config)

    @classmethod
    def load(cls, directory):
        tensors, config = load_model(directory, cls.KIND)
        model = cls(num_features=config["num_features"], num_classes=config["num_classes"],
                    sigma2=config["sigma2"])
        model.weight = tensors["weight"].double()
        if not torch.isfinite(model.weight).all():
            raise AlignersInputError(f"{directory}: non-finite weights in model.safetensors")
        return model
