"""Shared helpers for the reordering models: CSR plumbing, the one training loop (`Fitting`,
`fit`: `aligners reorder train` and LitReorderer run it) and `Saved`, their one export
through `aligners/export.py` (one model folder format for every family)."""

import time

import numpy as np
import scipy.sparse as sp
import torch
from numba import njit

from aligners.errors import AlignersInputError
from aligners.features.reorder import csr_to_torch
from aligners.models.reorder.config import (
    SIGMA2,
    DualConfig,
    LexicalConfig,
    NaiveBayesConfig,
    PrimalConfig,
)

__all__ = [
    "LinearSoftmax",
    "csr_arrays",
    "row_scores",
    "sparse_matmul",
    "DEFAULTS",
    "settings",
    "Fitting",
    "fit",
    "Saved",
    "error_rate",
]


def csr_arrays(X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr int64, indices int64, data float64) numpy views of a scipy or torch CSR (E, F)."""
    if isinstance(X, torch.Tensor):
        if X.layout != torch.sparse_csr:
            raise AlignersInputError("expected a torch.sparse_csr_tensor of features")
        indptr, indices, data = X.crow_indices().numpy(), X.col_indices().numpy(), \
            X.values().numpy()
    else:
        X = sp.csr_matrix(X)
        indptr, indices, data = X.indptr, X.indices, X.data
    return (np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
            np.asarray(data, dtype=np.float64))


@njit(cache=True)
def row_scores(indptr, indices, data, W, i, out) -> None:  # pragma: no cover
    """out (K,) = row i of the CSR (indptr, indices, data) times W (F, K): the SGD and EG
    kernels' phi_i . w_k, summed in the row's order."""
    for k in range(W.shape[1]):
        out[k] = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        j = indices[p]
        x = data[p]
        for k in range(W.shape[1]):
            out[k] += x * W[j, k]


def sparse_matmul(X, W: torch.Tensor) -> torch.Tensor:
    """(E, F) CSR @ (F, K) dense -> (E, K) dense, in W's dtype. Cost O(nnz * K)."""
    if not isinstance(X, torch.Tensor):
        X = csr_to_torch(sp.csr_matrix(X), W.dtype)
    if X.shape[1] != W.shape[0]:
        raise AlignersInputError(f"features have {X.shape[1]} columns, model has {W.shape[0]}")
    X = X.to(W.dtype)
    if X._nnz() == 0:
        return torch.zeros(X.shape[0], W.shape[1], dtype=W.dtype)
    return torch.sparse.mm(X, W)


def error_rate(log_proba: torch.Tensor, labels) -> float:
    """Fraction of rows whose argmax class differs from `labels` (E,)."""
    labels = torch.as_tensor(np.asarray(labels), dtype=torch.int64)
    if len(labels) == 0:
        return float("nan")
    return float((log_proba.argmax(dim=1) != labels).double().mean())


DEFAULTS = {"smoothing": LexicalConfig.smoothing, "alpha": NaiveBayesConfig.alpha,
            "inference": NaiveBayesConfig.inference, "sigma2": SIGMA2, "lr": PrimalConfig.lr,
            "eps": DualConfig.eps, "init_eps": DualConfig.init_eps,
            "max_trial": DualConfig.max_trial, "reset_step": DualConfig.reset_step,
            "step": DualConfig.step, "step_growth": DualConfig.step_growth}


def settings(**hp) -> dict:
    """`hp` over `DEFAULTS`, each value of its default's type; an unknown name:
    AlignersInputError."""
    unknown = sorted(set(hp) - set(DEFAULTS))
    if unknown:
        raise AlignersInputError(f"unknown reordering settings {unknown}")
    return {k: type(v)(hp.get(k, v)) for k, v in DEFAULTS.items()}


class Fitting:
    """`model` trained one epoch at a time with the settings `hp` and `generator` (the SGD /
    EG order): a counting model (no `begin_fit`: lexical, naive Bayes) in one pass, the
    MaxEnt models by their `begin_fit(X, y, **hp)` / `fit_epoch(state, generator, **hp)`.
    `done`: nothing is left to train; `seconds`: the time spent in the model's own code (each
    epoch's record gets its own `seconds`)."""

    def __init__(self, model, *, generator, **hp):
        self.model, self.generator, self.hp = model, generator, settings(**hp)
        self.state: dict | None = None
        self.done = False
        self.seconds = 0.0

    def epoch(self, X, y) -> dict | None:
        """One epoch on (X, y) (the same batch every epoch); its record (`seconds`, and the
        model's own history entry), or None when there was nothing to do."""
        m = self.model
        start = time.perf_counter()
        if not hasattr(m, "begin_fit"):
            m.fit(X, y)
            self.done, rec = True, {}
        else:
            if self.state is None:
                self.state = m.begin_fit(X, y, **self.hp)
                self.seconds += time.perf_counter() - start
                start = time.perf_counter()
            rec = m.fit_epoch(self.state, generator=self.generator, **self.hp)
            self.done = rec is None or self.state.get("done", False)
        seconds = time.perf_counter() - start
        self.seconds += seconds
        if rec is not None:
            rec["seconds"] = seconds
        return rec


def fit(model, X, y, *, epochs: int, generator=None, **hp):
    """`model` trained on (X, y) for at most `epochs` epochs (`Fitting`; `generator` None: one
    seeded with 0); returns it."""
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    fitting = Fitting(model, generator=generator, **hp)
    for _ in range(epochs):
        fitting.epoch(X, y)
        if fitting.done:
            break
    return model


class Saved:
    """The export (and checkpoint state) of a reordering model. A subclass sets `KIND` (the
    folder's kind), `HPARAMS` (constructor argument -> type; config.json), `FLOAT32` (the
    tensors written as float32) and implements `state()` (name -> exact tensor) and
    `set_state(state, path)` (which checks shapes: AlignersInputError naming `path`)."""

    KIND = ""
    HPARAMS: dict[str, type] = {}
    FLOAT32: tuple[str, ...] = ()

    def hparams(self) -> dict:
        """The plain-JSON constructor arguments."""
        return {k: getattr(self, k) for k in self.HPARAMS}

    def save(self, directory, *, meta: dict | None = None, features: list | None = None):
        """Export (`aligners.export.write_model`: atomic, never a partial folder; kind `KIND`);
        `meta` (extraction / feature settings, `folder.meta`) joins the config, `features` (a
        featurised model's described features) goes to `features.json`. An OSError is one
        AlignersInputError naming the folder."""
        from aligners.export import write_model

        tensors = {k: v.float() if k in self.FLOAT32 else v for k, v in self.state().items()}
        extras = {"features": features} if features is not None else None
        try:
            return write_model(directory, kind=self.KIND, tensors=tensors,
                               config={**self.hparams(), **(meta or {})}, extras=extras)
        except OSError as err:
            raise AlignersInputError(f"cannot write the model folder: {err.strerror or err}",
                                     path=str(directory)) from None

    @classmethod
    def load(cls, directory):
        """The model saved in `directory` (a path or an `export.ModelFolder`)."""
        from aligners.export import ModelFolder, read_model

        folder = directory if isinstance(directory, ModelFolder) else \
            read_model(directory, kind=cls.KIND)
        try:
            model = cls(**{k: t(folder.config[k]) for k, t in cls.HPARAMS.items()})
        except (KeyError, TypeError, ValueError) as err:
            raise AlignersInputError(f"config.json lacks a valid {err}",
                                     path=str(folder.path)) from None
        model.set_state({k: folder.tensor(k) for k in model.state()}, str(folder.path))
        return model


class LinearSoftmax(Saved):
    """p(o | phi) = softmax(phi W): the prediction and export shared by the primal and dual
    MaxEnt models. F features, K classes; `weight` is (F, K) float64. Subclasses set `KIND`
    (`Saved`) and train `weight`.
    """

    HPARAMS = {"num_features": int, "num_classes": int, "sigma2": float}
    FLOAT32 = ("weight",)

    def __init__(self, *, num_features: int, num_classes: int = 3, sigma2: float = SIGMA2):
        self.num_features, self.num_classes, self.sigma2 = num_features, num_classes, sigma2
        self.weight = torch.zeros(num_features, num_classes, dtype=torch.float64)
        self.history: list[dict] = []

    @staticmethod
    def data_state(X, labels) -> dict:
        """The training data of `begin_fit`: X's CSR arrays (`csr_arrays`), labels `y`, `n`."""
        indptr, indices, data = csr_arrays(X)
        y = np.asarray(labels, dtype=np.int64)
        return {"indptr": indptr, "indices": indices, "data": data, "y": y, "n": len(y)}

    def predict_log_proba(self, X) -> torch.Tensor:
        """(E, F) CSR -> (E, K) log p(o | phi)."""
        return sparse_matmul(X, self.weight).log_softmax(dim=1)

    def state(self) -> dict[str, torch.Tensor]:
        return {"weight": self.weight}

    def set_state(self, state: dict[str, torch.Tensor], path: str | None = None) -> None:
        weight = state["weight"].double()
        if tuple(weight.shape) != (self.num_features, self.num_classes):
            raise AlignersInputError(f"weight has shape {tuple(weight.shape)}, config says "
                                     f"({self.num_features}, {self.num_classes})", path=path)
        if not torch.isfinite(weight).all():
            raise AlignersInputError("non-finite weights in model.safetensors", path=path)
        self.weight = weight
