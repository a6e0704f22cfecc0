"""One place that silences what Lightning and torch print on every normal run and that does
not apply to this project. `aligners.run` calls `quiet_runs()` before any task runs and
`aligners.training.trainer.build_trainer` before any Trainer is built, so every runner gets
the same rules; nothing else filters warnings. Each message is silenced by its exact text
(why: beside it); our warnings, real deprecations in our code and errors still show.
Cost: O(1); idempotent.
"""

from __future__ import annotations

import logging
import warnings

__all__ = ["MESSAGES", "LOGGERS", "quiet_runs"]

# regular expressions matched against the start of a warning's message (warnings.filterwarnings)
MESSAGES: tuple[str, ...] = (
    r"`LightningModule.configure_optimizers` returned `None`",  # EM, naive Bayes: by design
    r".*does not have many workers",  # batches are pre-built tensors, nothing to load
    r".*validation_step.* but have no",  # runs without a dev set have no validation loop
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",  # in Lightning's pytree helper
    r".*litmodels",  # Lightning's upload tip, when it comes as a warning
)

# Lightning's banners and tips ("GPU available: ...", "TPU available", "💡 Tip: ...") go through
# these loggers, raised to WARNING (real warnings still show)
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
