"""The reordering models' defaults and value rules, in one place (no torch import: the
`aligners reorder` parser reads them).

`ReorderConfig` is the `model` section of the reorder task (configs/model/reorder.yaml
extends it) and the source of `aligners reorder train`'s defaults; `ReorderData` and
`ReorderRun` are the task's `data` section and top-level settings. Its
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

from dataclasses import dataclass

from aligners.config_checks import BOOL, MAX_ITERATIONS, POS, Rule, at_least, one_of, setting

SIGMA2 = 0.01  # the MaxEnt models' Eq. 6 penalty (primal and dual), chosen on dev

__all__ = ["ExtractConfig", "FeatureConfig", "ModelSwitches", "LexicalConfig",
           "PrimalConfig", "DualConfig", "NaiveBayesConfig", "ReorderConfig", "ReorderData",
           "ReorderRun"]

_PATH, _LIMIT = Rule("str", nullable=True), at_least(1, nullable=True)


@dataclass
class ExtractConfig:
    """Phrase-pair extraction (Moses `extract`)."""

    max_length: int = setting(7, at_least(1))  # Moses default
    mode: str = setting("wbe", one_of("wbe", "phrase", "hier"))  # Galley & Manning 2008
    direction: str = setting("backward", one_of("backward", "forward"))  # the orientation
    # w.r.t. the previous target phrase


@dataclass
class FeatureConfig:
    min_count: int = setting(10, at_least(0))  # features seen fewer times (rows) are dropped
    context: bool = setting(True, BOOL)  # source words adjacent to the source span


@dataclass
class ModelSwitches:
    """Which models the task trains."""

    lexical: bool = setting(True, BOOL)
    naive_bayes: bool = setting(False, BOOL)
    primal: bool = setting(False, BOOL)
    dual: bool = setting(False, BOOL)


@dataclass
class LexicalConfig:
    smoothing: float = setting(0.5, Rule("float", lo=0))  # Moses lexical-reordering-score default
    write_table: bool = setting(True, BOOL)  # the task writes the Moses table (its size on
    # disk)
    keep_table: bool = setting(False, BOOL)


@dataclass
class PrimalConfig:
    """MaxEnt in the primal, SGD (EMNLP Eq. 6)."""

    sigma2: float = setting(SIGMA2, POS)  # Eq. 6 penalty (dev choice, module docstring)
    epochs: int = setting(10, at_least(1, hi=MAX_ITERATIONS))
    lr: float = setting(0.05, POS)
    track_heldout: bool = setting(True, BOOL)  # the task scores the held-out pairs each epoch


@dataclass
class DualConfig:
    """MaxEnt in the dual, exponentiated gradient with shrinking (EMNLP Algorithm 1)."""

    sigma2: float = setting(SIGMA2, POS)  # dev choice (module docstring)
    eps: float | list[float] = setting(0.1, Rule("float", lo=0, listable=True))  # shrinking
    # tolerance; a list: one model each
    max_iter: int = setting(30, at_least(1, hi=MAX_ITERATIONS))  # EG passes (dev choice)
    init_eps: float = setting(0.001, Rule("float", lo=0, hi=1, lo_open=True, hi_open=True))
    max_trial: int = setting(10, at_least(1))  # step halvings per example
    step: float = setting(1.0, POS)  # initial per-example EG step eta_i (chosen on dev)
    step_growth: float = setting(1.0, POS)  # eta_i *= this after an accepted step (1: none)
    reset_step: bool = setting(False, BOOL)  # true: eta_i = step at every pick (Alg. 1)


@dataclass
class NaiveBayesConfig:
    alpha: float = setting(2.0, POS)  # Dirichlet parameter (> 1 for the MAP estimate, Eq. 10)
    inference: str | list[str] = setting("map", one_of("map", "bayes", listable=True))  # a
    # list: one model each
    mi_fractions: list[float] = setting(rule=Rule("float", lo=0, hi=1, hi_open=True, each=True),
                                        factory=list)  # the task's MI curve: fractions of
    # lowest-MI features removed (empty: no curve)


@dataclass
class ReorderConfig:
    """The `model` section of the reorder task (configs/model/reorder.yaml)."""

    extract: ExtractConfig = setting(factory=ExtractConfig)
    features: FeatureConfig = setting(factory=FeatureConfig)
    models: ModelSwitches = setting(factory=ModelSwitches)
    lexical: LexicalConfig = setting(factory=LexicalConfig)
    primal: PrimalConfig = setting(factory=PrimalConfig)
    dual: DualConfig = setting(factory=DualConfig)
    naive_bayes: NaiveBayesConfig = setting(factory=NaiveBayesConfig)


@dataclass
class ReorderData:
    """The `data` section of the reorder task (configs/data/reorder_hansards.yaml): a bitext
    and its word alignment; relative paths are under `paths.data_root`. The last
    `heldout_fraction` of the pairs is held out, and `dev_fraction` of the pairs before it is
    kept out of training for choosing settings (`evaluate_on: dev`)."""

    src: str | None = setting(None, _PATH)
    tgt: str | None = setting(None, _PATH)
    align: str | None = setting(None, _PATH)  # Pharaoh i-j, source-target
    train_limit: int | None = setting(None, _LIMIT)  # first N pairs (None: all)
    heldout_fraction: float = setting(0.1, Rule("float", lo=0, hi=1, lo_open=True,
                                                hi_open=True))  # split by sentence pair
    dev_fraction: float = setting(0.0, Rule("float", lo=0, hi=1, hi_open=True))
    lowercase: bool = setting(False, BOOL)
    test_src: str | None = setting(None, _PATH)  # `evaluate` scores these three files when
    test_tgt: str | None = setting(None, _PATH)  # all are given (every pair), else the
    # held-out (or dev) slice
    test_align: str | None = setting(None, _PATH)
    test_limit: int | None = setting(None, _LIMIT)


@dataclass
class ReorderRun:
    """The reorder task's top-level settings."""

    evaluate_on: str = setting("heldout", one_of("heldout", "dev"))  # dev: choosing settings
    speed_repeats: int = setting(3, at_least(1))  # timed prediction passes (median reported)
    progress: bool = setting(True, BOOL)  # progress bars
