"""The one reorder trainer: `aligners reorder train` (`fit`) and the reorder task
(`aligners.training.lit_reorder.LitReorderer`, one Lightning epoch = one `Fitting.epoch`)
build, train, describe and save a reordering model with this code.

- `settings(**hp)`: the flat training settings over their defaults (`DEFAULTS`, from
  `aligners.models.reorder.config`); `build(name, num_features, **hp)`: an untrained model,
  `name` in `NAMES`;
- `Fitting`: one model trained on one batch `(X (E, F) CSR, y (E,))` (keys instead of X for
  the lexical table), one epoch at a time: lexical / naive Bayes one counting pass, primal
  one SGD epoch (`PrimalMLR.fit_epoch`), dual one EG pass over the active set
  (`DualMLR.fit_iteration`; done when the set is empty);
- `meta(...)`: the extraction / feature settings a model folder records; `save`: the export,
  an unwritable folder being one AlignersInputError line.
Cost: that of the models' own fitting code; nothing here holds more than the model.
"""

from __future__ import annotations

import time

from aligners.errors import AlignersInputError
from aligners.models.reorder.config import (
    SIGMA2,
    DualConfig,
    LexicalConfig,
    NaiveBayesConfig,
    PrimalConfig,
)
from aligners.models.reorder.dual_mlr import DualMLR
from aligners.models.reorder.lexical import LexicalReordering
from aligners.models.reorder.mlr import PrimalMLR
from aligners.models.reorder.naive_bayes import NaiveBayes

__all__ = ["NAMES", "DEFAULTS", "settings", "build", "Fitting", "fit", "meta", "save"]

NAMES = {"lexical": LexicalReordering, "naive_bayes": NaiveBayes, "primal": PrimalMLR,
         "dual": DualMLR}

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


def build(name: str, *, num_features: int = 0, num_classes: int = 3, **hp):
    """The untrained model `name` (one of `NAMES`) with the settings `hp` (`settings`)."""
    if name not in NAMES:
        raise AlignersInputError(f"reordering model {name!r}; expected one of {sorted(NAMES)}")
    s = settings(**hp)
    if name == "lexical":
        return LexicalReordering(num_classes=num_classes, smoothing=s["smoothing"])
    if name == "naive_bayes":
        return NaiveBayes(num_features=num_features, num_classes=num_classes, alpha=s["alpha"],
                          inference=s["inference"])
    return NAMES[name](num_features=num_features, num_classes=num_classes, sigma2=s["sigma2"])


class Fitting:
    """`model` trained one epoch at a time (module docstring) with the settings `hp` and
    `generator` (the SGD / EG order). `done`: nothing is left to train; `seconds`: the time
    spent in the model's own fitting code."""

    def __init__(self, model, *, generator, **hp):
        self.model, self.generator, self.hp = model, generator, settings(**hp)
        self.state: dict | None = None
        self.done = False
        self._count_seconds = 0.0

    @property
    def counts(self) -> bool:
        return isinstance(self.model, LexicalReordering | NaiveBayes)

    @property
    def seconds(self) -> float:
        if self.counts:
            return self._count_seconds
        return self.model.setup_seconds + sum(h["seconds"] for h in self.model.history)

    def epoch(self, X, y) -> dict | None:
        """One epoch on (X, y) (the same batch every epoch); its record (`seconds`, and the
        model's own history entry), or None when there was nothing to do."""
        m, hp = self.model, self.hp
        if self.counts:
            start = time.perf_counter()
            m.fit(X, y)
            self._count_seconds = time.perf_counter() - start
            self.done = True
            return {"seconds": self._count_seconds}
        if isinstance(m, PrimalMLR):
            if self.state is None:
                self.state = m.begin_fit(X, y)
            return m.fit_epoch(self.state, lr=hp["lr"], generator=self.generator)
        if self.state is None:
            self.state = m.begin_fit(X, y, init_eps=hp["init_eps"], step=hp["step"])
        rec = m.fit_iteration(self.state, eps=hp["eps"], max_trial=hp["max_trial"],
                              reset_step=hp["reset_step"], step=hp["step"],
                              step_growth=hp["step_growth"], generator=self.generator)
        self.done = rec is None or len(self.state["order"]) == 0  # active set empty
        return rec


def fit(model, X, y, *, epochs: int, generator, **hp):
    """`model` trained on (X, y) for at most `epochs` epochs (`Fitting`); returns it."""
    fitting = Fitting(model, generator=generator, **hp)
    for _ in range(epochs):
        fitting.epoch(X, y)
        if fitting.done:
            break
    return model


def meta(*, max_length: int, orientation: str, direction: str, lowercase: bool,
         min_count: int | None = None, context: bool = True) -> dict:
    """What a model folder records of its training data: the extraction settings and (with
    `min_count`) the feature settings, as `aligners.models.reorder.reorderer` reads them."""
    out = {"extract": {"max_length": int(max_length), "orientation": str(orientation),
                       "direction": str(direction), "lowercase": bool(lowercase)}}
    if min_count is not None:
        out["features"] = {"min_count": int(min_count), "context": bool(context)}
    return out


def save(model, out, **kw) -> None:
    """`model.save(out, **kw)` (atomic: never a partial folder); an OSError is one
    AlignersInputError naming the folder."""
    try:
        model.save(out, **kw)
    except OSError as err:
        raise AlignersInputError(f"cannot write the model folder: {err.strerror or err}",
                                 path=str(out)) from None
