"""The reordering models' defaults and value rules, in one place (no torch import: the
`aligners reorder` parser reads them).

`ReorderConfig` is the `model` section of the reorder task (configs/model/reorder.yaml
restates it; a test checks that) and the source of `aligners reorder train`'s defaults;
`ReorderData` and `ReorderRun` are the task's `data` section and top-level settings. Its
sections: `extract` (phrase extraction), `features`, `models` (which models the task
trains), `lexical`, `primal`, `dual`, `naive_bayes`. Where the task compares several
settings, a field takes one value or a list (`dual.eps`, `naive_bayes.inference`: one model
per entry); the CLI trains one model from one value.

Chosen on the reorder dev experiment (configs/experiment/reorder_dev.yaml: train pairs
0-7999, dev 8000-8999, never the held-out pairs; `python train.py experiment=reorder_dev
model.primal.sigma2=...`): `SIGMA2`, one value for both MaxEnt models (dev error, primal 3
epochs: 34.47% vs 35.67% at sigma2 = 1; dual eps 0.1: 34.45% vs 36.01%), and the dual's
`max_iter` = 30: at `SIGMA2` EG empties its active set within 8 iterations (identical
models at 20 or 30), at sigma2 = 1 it needed 29-30, which a cap of 20 would cut short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from aligners.config_checks import MAX_ITERATIONS, Rule

SIGMA2 = 0.01  # the MaxEnt models' Eq. 6 penalty (primal and dual), chosen on dev

__all__ = ["ExtractConfig", "FeatureConfig", "ModelSwitches", "LexicalConfig",
           "PrimalConfig", "DualConfig", "NaiveBayesConfig", "ReorderConfig", "ReorderData",
           "ReorderRun"]

_POS = Rule("float", lo=0, lo_open=True)
_BOOL = Rule("bool")


@dataclass
class ExtractConfig:
    """Phrase-pair extraction (Moses `extract`)."""

    max_length: int = 7  # Moses default
    mode: str = "wbe"  # wbe | phrase | hier (Galley & Manning 2008)
    direction: str = "backward"  # orientation w.r.t. the previous target phrase

    RULES: ClassVar[dict[str, Rule]] = {
        "max_length": Rule("int", lo=1),
        "mode": Rule("str", choices=("wbe", "phrase", "hier")),
        "direction": Rule("str", choices=("backward", "forward")),
    }


@dataclass
class FeatureConfig:
    min_count: int = 10  # features seen fewer times (training rows) are dropped
    context: bool = True  # source words adjacent to the source span

    RULES: ClassVar[dict[str, Rule]] = {"min_count": Rule("int", lo=0), "context": _BOOL}


@dataclass
class ModelSwitches:
    """Which models the task trains."""

    lexical: bool = True
    naive_bayes: bool = False
    primal: bool = False
    dual: bool = False

    RULES: ClassVar[dict[str, Rule]] = {k: _BOOL for k in
                                        ("lexical", "naive_bayes", "primal", "dual")}


@dataclass
class LexicalConfig:
    smoothing: float = 0.5  # Moses lexical-reordering-score default
    write_table: bool = True  # the task writes the Moses reordering table (its size on disk)
    keep_table: bool = False

    RULES: ClassVar[dict[str, Rule]] = {"smoothing": Rule("float", lo=0),
                                        "write_table": _BOOL, "keep_table": _BOOL}


@dataclass
class PrimalConfig:
    """MaxEnt in the primal, SGD (EMNLP Eq. 6)."""

    sigma2: float = SIGMA2  # Eq. 6 penalty (dev choice, module docstring)
    epochs: int = 10
    lr: float = 0.05
    track_heldout: bool = True  # the task scores the held-out pairs after every epoch

    RULES: ClassVar[dict[str, Rule]] = {"sigma2": _POS, "lr": _POS, "track_heldout": _BOOL,
                                        "epochs": Rule("int", lo=1, hi=MAX_ITERATIONS)}


@dataclass
class DualConfig:
    """MaxEnt in the dual, exponentiated gradient with shrinking (EMNLP Algorithm 1)."""

    sigma2: float = SIGMA2  # dev choice (module docstring)
    eps: float | list[float] = 0.1  # shrinking tolerance; a list: one model each
    max_iter: int = 30  # EG passes at most (dev choice, module docstring)
    init_eps: float = 0.001  # Eq. 15
    max_trial: int = 10  # step halvings per example
    step: float = 1.0  # initial per-example EG step eta_i (chosen on a dev split)
    step_growth: float = 1.0  # eta_i *= growth after an accepted step (1: only halving)
    reset_step: bool = False  # true: eta_i = step at every pick (Algorithm 1 literally)

    RULES: ClassVar[dict[str, Rule]] = {
        "sigma2": _POS,
        "eps": Rule("float", lo=0, listable=True),
        "max_iter": Rule("int", lo=1, hi=MAX_ITERATIONS),
        "init_eps": Rule("float", lo=0, hi=1, lo_open=True, hi_open=True),
        "max_trial": Rule("int", lo=1),
        "step": _POS,
        "step_growth": _POS,
        "reset_step": _BOOL,
    }


@dataclass
class NaiveBayesConfig:
    alpha: float = 2.0  # Dirichlet parameter (> 1 for the MAP estimate, Eq. 10)
    inference: str | list[str] = "map"  # map | bayes; a list: one model each
    mi_fractions: list[float] = field(default_factory=list)  # the task's MI curve: fractions
    # of lowest-MI features removed (empty: no curve)

    RULES: ClassVar[dict[str, Rule]] = {
        "alpha": _POS,
        "inference": Rule("str", choices=("map", "bayes"), listable=True),
        "mi_fractions": Rule("float", lo=0, hi=1, hi_open=True, each=True),
    }


@dataclass
class ReorderConfig:
    """The `model` section of the reorder task (configs/model/reorder.yaml)."""

    extract: ExtractConfig = field(default_factory=ExtractConfig)
    features: FeatureConfig = field(default_factory=FeatureConfig)
    models: ModelSwitches = field(default_factory=ModelSwitches)
    lexical: LexicalConfig = field(default_factory=LexicalConfig)
    primal: PrimalConfig = field(default_factory=PrimalConfig)
    dual: DualConfig = field(default_factory=DualConfig)
    naive_bayes: NaiveBayesConfig = field(default_factory=NaiveBayesConfig)


@dataclass
class ReorderData:
    """The `data` section of the reorder task (configs/data/reorder_hansards.yaml): a bitext
    and its word alignment; relative paths are under `paths.data_root`. The last
    `heldout_fraction` of the pairs is held out, and `dev_fraction` of the pairs before it is
    kept out of training for choosing settings (`evaluate_on: dev`)."""

    src: str | None = None
    tgt: str | None = None
    align: str | None = None  # Pharaoh i-j, source-target
    train_limit: int | None = None  # first N sentence pairs (None: all; the tasks' one name)
    heldout_fraction: float = 0.1
    dev_fraction: float = 0.0
    lowercase: bool = False
    test_src: str | None = None  # `evaluate` scores these three files when all are given
    test_tgt: str | None = None
    test_align: str | None = None
    test_limit: int | None = None

    RULES: ClassVar[dict[str, Rule]] = {
        **{k: Rule("str", nullable=True) for k in ("src", "tgt", "align", "test_src",
                                                   "test_tgt", "test_align")},
        "train_limit": Rule("int", lo=1, nullable=True),
        "test_limit": Rule("int", lo=1, nullable=True),
        "heldout_fraction": Rule("float", lo=0, hi=1, lo_open=True, hi_open=True),
        "dev_fraction": Rule("float", lo=0, hi=1, hi_open=True),
        "lowercase": _BOOL,
    }


@dataclass
class ReorderRun:
    """The reorder task's top-level settings."""

    evaluate_on: str = "heldout"  # or dev: score the dev slice (choosing settings)
    speed_repeats: int = 3  # timed prediction passes (the median is reported)
    progress: bool = True  # progress bars

    RULES: ClassVar[dict[str, Rule]] = {
        "evaluate_on": Rule("str", choices=("heldout", "dev")),
        "speed_repeats": Rule("int", lo=1),
        "progress": _BOOL,
    }
