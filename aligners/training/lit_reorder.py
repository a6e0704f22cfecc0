"""Lightning orchestration of the reordering classifiers (the maths stays in the models).

`LitReorderer` wraps one of `aligners.models.reorder` (lexical table, naive Bayes, primal
MaxEnt, dual MaxEnt) with manual optimisation; one Lightning epoch is one pass of the
model's own inner loop (a numba kernel for the MaxEnt models):

- lexical / naive Bayes: one epoch = the counting pass (`max_epochs=1`);
- primal MaxEnt: one epoch = one SGD epoch (`PrimalMLR.fit_epoch`);
- dual MaxEnt: one epoch = one EG pass over the active set (`DualMLR.fit_iteration`);
  the run stops early when the active set is empty.

The training data is one batch, `(X (E, F) CSR float32, y (E,))` (keys instead of X for the
lexical table). It stays on the CPU whatever `trainer.accelerator` says: the kernels are
CPU code. hparams are plain values; the fitted tensors travel in the checkpoint, so
`LitReorderer.load_from_checkpoint(path)` gives back the trained model. `fit_reorderer`
builds the Trainer from `cfg.trainer` / `cfg.logger` / `cfg.callbacks`.
"""

from __future__ import annotations

import time

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from aligners.errors import AlignersInputError
from aligners.models.reorder import DualMLR, LexicalReordering, NaiveBayes, PrimalMLR
from aligners.models.reorder._common import error_rate
from aligners.models.reorder.config import (
    DualConfig,
    LexicalConfig,
    NaiveBayesConfig,
    PrimalConfig,
)

__all__ = ["LitReorderer", "fit_reorderer", "one_batch"]

_KINDS = {"lexical": LexicalReordering, "naive_bayes": NaiveBayes, "primal": PrimalMLR,
          "dual": DualMLR}


def _identity(item):
    return item


def one_batch(*items) -> DataLoader:
    """A DataLoader whose only batch is `items` as given (no collation, no copy)."""
    return DataLoader([tuple(items)], batch_size=None, collate_fn=_identity)


class LitReorderer(pl.LightningModule):
    """Orchestration only. `model` in {"lexical", "naive_bayes", "primal", "dual"}; the other
    arguments are that model's constructor and training settings (plain values; defaults:
    `aligners.models.reorder.config`, `sigma2` the MaxEnt models' shared one)."""

    def __init__(self, *, model: str, num_features: int = 0, num_classes: int = 3,
                 smoothing: float = LexicalConfig.smoothing,
                 alpha: float = NaiveBayesConfig.alpha,
                 inference: str = NaiveBayesConfig.inference,
                 sigma2: float = PrimalConfig.sigma2, lr: float = PrimalConfig.lr,
                 eps: float = DualConfig.eps, init_eps: float = DualConfig.init_eps,
                 max_trial: int = DualConfig.max_trial,
                 reset_step: bool = DualConfig.reset_step, step: float = DualConfig.step,
                 step_growth: float = DualConfig.step_growth, seed: int = 0,
                 generator: torch.Generator | None = None):
        super().__init__()
        if model not in _KINDS:
            raise AlignersInputError(f"reordering model {model!r}; expected one of "
                                     f"{sorted(_KINDS)}")
        self.save_hyperparameters(ignore=["generator"])
        self.automatic_optimization = False
        self.kind = model
        if model == "lexical":
            self.model = LexicalReordering(num_classes=num_classes, smoothing=smoothing)
        elif model == "naive_bayes":
            self.model = NaiveBayes(num_features=num_features, num_classes=num_classes,
                                    alpha=alpha, inference=inference)
        else:
            self.model = _KINDS[model](num_features=num_features, num_classes=num_classes,
                                       sigma2=sigma2)
        # the caller's generator keeps the SGD/EG order of a plain `fit` with it
        self.generator = generator if generator is not None else \
            torch.Generator().manual_seed(int(seed))
        self._state: dict | None = None
        self._count_seconds = 0.0
        self.val_errors: list[float] = []

    @property
    def train_seconds(self) -> float:
        """Seconds spent in the model's own fitting code (Lightning's overhead excluded)."""
        if self.kind in ("lexical", "naive_bayes"):
            return self._count_seconds
        return self.model.setup_seconds + sum(h["seconds"] for h in self.model.history)

    # ----------------------------------------------------------------- Lightning hooks
    def configure_optimizers(self):
        return []  # manual optimisation: the models update themselves

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch  # the inner loops are CPU (numpy / numba) code

    def training_step(self, batch, batch_idx):
        X, y = batch
        hp = self.hparams
        if self.kind in ("lexical", "naive_bayes"):
            start = time.perf_counter()
            self.model.fit(X, y)
            self._count_seconds = time.perf_counter() - start
            self.trainer.should_stop = True
            self.log("train_seconds", self._count_seconds, on_epoch=True, on_step=False,
                     batch_size=1)
            return None
        if self.kind == "primal":
            if self._state is None:
                self._state = self.model.begin_fit(X, y)
            rec = self.model.fit_epoch(self._state, lr=float(hp.lr), generator=self.generator)
        else:
            if self._state is None:
                self._state = self.model.begin_fit(X, y, init_eps=float(hp.init_eps),
                                                   step=float(hp.step))
            rec = self.model.fit_iteration(
                self._state, eps=float(hp.eps), max_trial=int(hp.max_trial),
                reset_step=bool(hp.reset_step), step=float(hp.step),
                step_growth=float(hp.step_growth), generator=self.generator)
            if rec is None or len(self._state["order"]) == 0:
                self.trainer.should_stop = True  # active set empty: converged
            if rec is None:
                return None
        self.log("train_seconds", float(rec["seconds"]), on_epoch=True, on_step=False,
                 batch_size=1)
        return None

    def validation_step(self, batch, batch_idx):
        X, y = batch
        err = error_rate(self.model.predict_log_proba(X), y)
        self.val_errors.append(err)
        self.log("heldout_error", err, on_epoch=True, on_step=False, batch_size=1)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["reorderer"] = {k: v.detach().clone() for k, v in self._tensors().items()}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        saved = checkpoint.get("reorderer")
        if saved is None:
            raise AlignersInputError("checkpoint has no fitted reordering model")
        m = self.model
        if self.kind == "lexical":
            m.keys = saved["keys"].numpy().astype(np.int64)
            m.counts = saved["counts"].numpy().astype(np.float64)
            m.class_counts = saved["class_counts"].numpy().astype(np.float64)
        elif self.kind == "naive_bayes":
            m.counts, m.class_counts = saved["counts"].double(), saved["class_counts"].double()
        else:
            m.weight = saved["weight"].double()

    def _tensors(self) -> dict[str, torch.Tensor]:
        m = self.model
        if self.kind == "lexical":
            return {"keys": torch.from_numpy(np.asarray(m.keys, dtype=np.int64)),
                    "counts": torch.from_numpy(np.asarray(m.counts, dtype=np.float64)),
                    "class_counts": torch.from_numpy(np.asarray(m.class_counts,
                                                                dtype=np.float64))}
        if self.kind == "naive_bayes":
            return {"counts": m.counts, "class_counts": m.class_counts}
        return {"weight": m.weight}


def fit_reorderer(lit: LitReorderer, train_batch: tuple, *, cfg, name: str, max_epochs: int,
                  val_batch: tuple | None = None, progress: bool = False) -> pl.Trainer:
    """Train `lit` under the Trainer of `cfg.trainer` with `cfg.logger` and `cfg.callbacks`.

    A callback's `dirpath` (checkpoints) gets the model `name` appended, so that the models of
    one run never overwrite each other's `last.ckpt`. Returns the Trainer.
    """
    from aligners.training.quiet import quiet_runs
    from aligners.training.trainer import build_trainer

    tcfg = cfg.get("trainer")
    if tcfg is None:
        raise AlignersInputError("the reorder task needs a trainer config (trainer=cpu)")
    devices = tcfg.get("devices", 1)
    if str(tcfg.get("strategy", "auto")).startswith("ddp") or devices not in (1, "1", "auto"):
        raise AlignersInputError("the reordering models train in one process: use "
                                 "trainer.devices=1 and no ddp strategy")
    quiet_runs()  # no banner, tip or no-validation warning for every model
    extra = {"enable_progress_bar": progress} if not progress else {}
    trainer = build_trainer(cfg, max_epochs=max_epochs, subdir=name, logger_version=name,
                            progress=progress, log_every_n_steps=1, enable_model_summary=False,
                            limit_val_batches=1.0 if val_batch is not None else 0, **extra)
    val = one_batch(*val_batch) if val_batch is not None else None
    trainer.fit(lit, train_dataloaders=one_batch(*train_batch), val_dataloaders=val)
    return trainer
