"""Lightning orchestration of the reordering classifiers (the maths stays in the models).

`LitReorderer` wraps one of `aligners.models.reorder` with manual optimisation; one
Lightning epoch is one `Fitting.epoch` of the family's one trainer (`aligners.models.reorder
._common`, which `aligners reorder train` runs too); the run stops early when it is done.

The training data is one batch, `(X (E, F) CSR float32, y (E,))` (keys instead of X for the
lexical table). It stays on the CPU whatever `trainer.accelerator` says: the kernels are
CPU code. hparams are plain values; the fitted tensors travel in the checkpoint, so
`LitReorderer.load_from_checkpoint(path)` gives back the trained model. `fit_reorderer`
builds the Trainer with the one builder (`aligners.training.trainer.build_trainer`).
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from aligners.errors import AlignersInputError
from aligners.models.reorder._common import Fitting, error_rate, settings
from aligners.models.reorder.folder import build

__all__ = ["LitReorderer", "fit_reorderer", "one_batch"]


def _identity(item):
    return item


def one_batch(*items) -> DataLoader:
    """A DataLoader whose only batch is `items` as given (no collation, no copy)."""
    return DataLoader([tuple(items)], batch_size=None, collate_fn=_identity)


class LitReorderer(pl.LightningModule):
    """Orchestration only. `model` in `aligners.models.reorder.folder.NAMES`; `hp` that
    model's settings (plain values over `_common.DEFAULTS`); `generator` (else one seeded with
    `seed`) orders the SGD / EG passes."""

    def __init__(self, *, model: str, num_features: int = 0, num_classes: int = 3, seed: int = 0,
                 generator: torch.Generator | None = None, **hp):
        super().__init__()
        self.save_hyperparameters({"model": model, "num_features": num_features,
                                   "num_classes": num_classes, **settings(**hp), "seed": seed})
        self.automatic_optimization = False
        self.model = build(model, num_features=num_features, num_classes=num_classes, **hp)
        # the caller's generator keeps the SGD/EG order of a plain `fit` with it
        gen = generator if generator is not None else torch.Generator().manual_seed(int(seed))
        self.fitting = Fitting(self.model, generator=gen, **hp)  # .seconds: Lightning excluded
        self.val_errors: list[float] = []

    def configure_optimizers(self):
        return []  # manual optimisation: the models update themselves

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch  # the inner loops are CPU (numpy / numba) code

    def training_step(self, batch, batch_idx):
        rec = self.fitting.epoch(*batch)
        if self.fitting.done:
            self.trainer.should_stop = True
        if rec is not None:
            self.log("train_seconds", float(rec["seconds"]), on_epoch=True, on_step=False,
                     batch_size=1)

    def validation_step(self, batch, batch_idx):
        X, y = batch
        err = error_rate(self.model.predict_log_proba(X), y)
        self.val_errors.append(err)
        self.log("heldout_error", err, on_epoch=True, on_step=False, batch_size=1)

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["reorderer"] = {k: v.detach().clone() for k, v in self.model.state().items()}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        saved = checkpoint.get("reorderer")
        if saved is None:
            raise AlignersInputError("checkpoint has no fitted reordering model")
        self.model.set_state(saved)


def fit_reorderer(lit: LitReorderer, train_batch: tuple, *, cfg, name: str, max_epochs: int,
                  val_batch: tuple | None = None, progress: bool = False) -> pl.Trainer:
    """Train `lit` under the Trainer of `cfg.trainer` with `cfg.logger` and `cfg.callbacks`.

    A callback's `dirpath` (checkpoints) gets the model `name` appended, so that the models of
    one run never overwrite each other's `last.ckpt`. Returns the Trainer.
    """
    from aligners.training.trainer import build_trainer

    tcfg = cfg.get("trainer")
    if tcfg is None:
        raise AlignersInputError("the reorder task needs a trainer config (trainer=cpu)")
    devices = tcfg.get("devices", 1)
    if str(tcfg.get("strategy", "auto")).startswith("ddp") or devices not in (1, "1", "auto"):
        raise AlignersInputError("the reordering models train in one process: use "
                                 "trainer.devices=1 and no ddp strategy")
    extra = {"enable_progress_bar": progress} if not progress else {}
    trainer = build_trainer(cfg, max_epochs=max_epochs, subdir=name, logger_version=name,
                            progress=progress, log_every_n_steps=1, enable_model_summary=False,
                            limit_val_batches=1.0 if val_batch is not None else 0, **extra)
    val = one_batch(*val_batch) if val_batch is not None else None
    trainer.fit(lit, train_dataloaders=one_batch(*train_batch), val_dataloaders=val)
    return trainer
