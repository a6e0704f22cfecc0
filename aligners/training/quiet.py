"""One place that silences what Lightning and torch print on every normal run and that does
not apply to this project (issue 12 item 15). `aligners.run` calls `quiet_runs()` before any
task runs and `aligners.training.trainer.build_trainer` before any Trainer is built, so every
runner (word, mono, reorder, baseline) gets the same rules; nothing else filters warnings.

Silenced, each by its exact message:
- Lightning's banners and tips on the `rank_zero` loggers ("GPU available: ...", "TPU
  available", "💡 Tip: ... litmodels ..."): raised to WARNING, real warnings still show;
- "`LightningModule.configure_optimizers` returned `None`": the EM (word) and naive-Bayes
  reorder modules update their tables in closed form, with no optimizer, by design;
- "... does not have many workers ...": batches are pre-built tensors, nothing to load;
- "... validation_step ... but have no ...": runs without a dev set have no validation loop;
- "`isinstance(treespec, LeafSpec)` is deprecated": inside Lightning's own pytree helper;
- "... litmodels ...": the same upload tip when it comes as a warning.
Everything else (our warnings, real deprecations in our code, errors) still shows.
Cost: O(1); idempotent.
"""

from __future__ import annotations

import logging
import warnings

__all__ = ["MESSAGES", "LOGGERS", "quiet_runs"]

# regular expressions matched against the start of a warning's message (warnings.filterwarnings)
MESSAGES: tuple[str, ...] = (
    r"`LightningModule.configure_optimizers` returned `None`",
    r".*does not have many workers",
    r".*validation_step.* but have no",
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
    r".*litmodels",
)

# Lightning's info-level chatter (banners, tips) goes through these loggers
LOGGERS: tuple[str, ...] = (
    "pytorch_lightning.utilities.rank_zero",
    "lightning.pytorch.utilities.rank_zero",
    "lightning_fabric.utilities.rank_zero",
    "lightning.fabric.utilities.rank_zero",
)


def quiet_runs() -> None:
    """Install the warning filters of `MESSAGES` and raise `LOGGERS` to WARNING."""
    for message in MESSAGES:
        warnings.filterwarnings("ignore", message=message)
    for name in LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
