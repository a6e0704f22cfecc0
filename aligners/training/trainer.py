"""The one Trainer builder of every Lightning task (word, gappy, monolingual, reorder):
`cfg.trainer` with `cfg.logger` and `cfg.callbacks` instantiated, so that no task silently
ignores them (house rule 9), and Lightning's inapplicable chatter quieted
(`aligners.training.quiet`, the one place that does)."""

from __future__ import annotations

from pathlib import Path

import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

__all__ = ["ddp_strategy", "build_trainer"]


def ddp_strategy(name):
    """`"ddp"` -> a DDPStrategy that does not broadcast the (large) tables every step."""
    if name == "ddp":
        from pytorch_lightning.strategies import DDPStrategy

        return DDPStrategy(broadcast_buffers=False)
    return name


def build_trainer(cfg: DictConfig, *, max_epochs: int, subdir: str | None = None,
                  logger_version: str | None = None, progress: bool = True,
                  **overrides) -> pl.Trainer:
    """`cfg.trainer` for `max_epochs` epochs, with `cfg.callbacks` (each checkpoint folder
    `dirpath` under `subdir` when given; progress bars dropped when `progress` is False),
    `cfg.logger` (its `version` set when given; no logger when the config has none), the
    strategy of `cfg.trainer.strategy` (`ddp_strategy`), no sanity validation, and
    `overrides` (any further Trainer arguments)."""
    from hydra.utils import instantiate

    from aligners.training.quiet import quiet_runs

    quiet_runs()

    callbacks = []
    for c in (cfg.get("callbacks") or {}).values():
        c = OmegaConf.create(OmegaConf.to_container(c, resolve=True))
        if subdir is not None and c.get("dirpath"):
            c.dirpath = str(Path(c.dirpath) / subdir)
        cb = instantiate(c)
        if progress or not isinstance(cb, pl.callbacks.ProgressBar):
            callbacks.append(cb)
    logger = False
    if cfg.get("logger"):
        version = {} if logger_version is None else {"version": logger_version}
        logger = instantiate(cfg.logger, **version)
    overrides.setdefault("strategy", ddp_strategy(cfg.trainer.get("strategy", "auto")))
    overrides.setdefault("num_sanity_val_steps", 0)
    return instantiate(cfg.trainer, max_epochs=int(max_epochs), callbacks=callbacks,
                       logger=logger, **overrides)
