"""The one reorder trainer: `aligners reorder train` (`fit`) and the reorder task
(`aligners.training.lit_reorder.LitReorderer`, one Lightning epoch = one `Fitting.epoch`)
build (`build`, `name` in `NAMES`) and train a reordering model with this code; `settings`,
`Fitting` and `fit` live in `_common`, where the models' own `fit` finds them too.
Cost: that of the models' own fitting code; nothing here holds more than the model.
"""

from __future__ import annotations

from aligners.errors import AlignersInputError
from aligners.models.reorder._common import DEFAULTS, Fitting, fit, settings
from aligners.models.reorder.dual_mlr import DualMLR
from aligners.models.reorder.lexical import LexicalReordering
from aligners.models.reorder.mlr import PrimalMLR
from aligners.models.reorder.naive_bayes import NaiveBayes

__all__ = ["NAMES", "DEFAULTS", "settings", "build", "Fitting", "fit"]

NAMES = {"lexical": LexicalReordering, "naive_bayes": NaiveBayes, "primal": PrimalMLR,
         "dual": DualMLR}


def build(name: str, *, num_features: int = 0, num_classes: int = 3, **hp):
    """The untrained model `name` (one of `NAMES`) with the settings `hp` (`settings`) that
    its class declares (`HPARAMS`)."""
    if name not in NAMES:
        raise AlignersInputError(f"reordering model {name!r}; expected one of {sorted(NAMES)}")
    cls = NAMES[name]
    s = {**settings(**hp), "num_features": num_features, "num_classes": num_classes}
    return cls(**{k: s[k] for k in cls.HPARAMS})
