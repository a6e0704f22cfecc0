"""LCLR's settings, defaults and value rules, in one place (no torch import).

`LCLRConfig` is the `model` section of the lclr task (configs/model/lclr_*.yaml restate it; a
comment says where a file differs; a test checks both); its training defaults are those of
`aligners.models.lclr.train_lclr`, which reads them from here. `LCLRData` is the task's
`data` section (configs/data/lclr_*.yaml); `lclr_settings(cfg)` reads both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from aligners.config_checks import Rule, from_config

__all__ = ["LCLRConfig", "LCLRData", "LCLR_TASKS", "FEATURE_GROUPS", "lclr_settings"]

LCLR_TASKS = ("transliteration", "paraphrase", "entailment")
FEATURE_GROUPS = ("wordnet", "pos", "ne", "neg", "string", "dep")  # `drop_features` values
_POS, _BOOL = Rule("float", lo=0, lo_open=True), Rule("bool")


@dataclass
class LCLRConfig:
    """LCLR vs the two-stage baseline (Chang et al. 2010) on one task."""

    task: str  # transliteration | paraphrase | entailment (required: the file selects it)
    C_grid: list[float] = field(default_factory=lambda: [1.0])  # SVM C values searched by
    # cross-validation on the training split (one value: no CV)
    cv_folds: int = 3
    cv_repeats: int = 5  # sentence-pair tasks: k-fold CV repeated over this many shuffles,
    # accuracies averaged over all repeats x folds
    seeds: int = 3  # sentence-pair tasks: the whole pipeline (CV shuffles, selection,
    # training) runs for seeds cfg.seed .. cfg.seed + seeds - 1; test = mean +- sd
    drop_features: list[str] = field(default_factory=list)  # sentence-pair tasks: feature
    # groups left out (ablation): FEATURE_GROUPS (NODE-INFO has its own switch)
    lclr_cv: bool = False  # sentence-pair tasks: LCLR picks its own C by CV (else the
    # two-stage system's)
    tol: float = 1e-5  # Algorithm 1 stops when Eq. (3) improves by less (relative)
    max_outer: int = 20  # Algorithm 1 iterations at most
    max_cutting: int = 50  # Algorithm 2 rounds per outer iteration at most
    dcd_tol: float = 1e-3  # dual coordinate descent: max projected gradient
    parse_cache: str | None = None  # sentence-pair tasks: None = $ALIGNERS_CACHE/parses
    node_info: bool = False  # sentence-pair tasks: NODE-INFO edge-map features (Table 2)
    solver: str = "dp"  # transliteration: exact monotone DP (tested equal to the ILP) or ilp
    C_fixed: dict | None = None  # transliteration: {two_stage: C, lclr: C} skips the CV
    romanization_feature: bool = False  # transliteration: the "rom" indicator feature

    RULES: ClassVar[dict[str, Rule]] = {
        "task": Rule("str", choices=LCLR_TASKS),
        "C_grid": Rule("float", lo=0, lo_open=True, each=True, nonempty=True),
        "cv_folds": Rule("int", lo=2),
        "cv_repeats": Rule("int", lo=1),
        "seeds": Rule("int", lo=1),
        "drop_features": Rule("str", choices=FEATURE_GROUPS, each=True),
        "lclr_cv": _BOOL,
        "tol": _POS,
        "max_outer": Rule("int", lo=1),
        "max_cutting": Rule("int", lo=1),
        "dcd_tol": _POS,
        "parse_cache": Rule("str", nullable=True),
        "node_info": _BOOL,
        "solver": Rule("str", choices=("dp", "ilp")),
        "romanization_feature": _BOOL,
    }


@dataclass
class LCLRData:
    """Which labelled pairs train and test (registry dataset `name`'s splits); the
    transliteration protocol's sizes (Chang et al. 2010, sec. 5.1)."""

    name: str | None = None  # registry dataset (`aligners.data.datasets`)
    train_split: str = "train"
    test_split: str = "test"
    train_limit: int | None = None  # first N pairs only (smoke runs)
    test_limit: int | None = None
    train_positives: int = 250  # transliteration: names drawn from the train split
    negative_fraction: float = 0.1  # transliteration: of the random pairings of their words
    test_names: int = 300  # transliteration: each ranked against all test candidates
    cv_candidates: int = 0  # transliteration: candidates each CV fold ranks against (0:
    # the fold's own names only)

    RULES: ClassVar[dict[str, Rule]] = {
        "name": Rule("str", nullable=True),
        "train_split": Rule("str"),
        "test_split": Rule("str"),
        "train_limit": Rule("int", lo=1, nullable=True),
        "test_limit": Rule("int", lo=1, nullable=True),
        "train_positives": Rule("int", lo=2),
        "negative_fraction": Rule("float", lo=0, hi=1),
        "test_names": Rule("int", lo=1),
        "cv_candidates": Rule("int", lo=0),
    }


def lclr_settings(cfg) -> tuple[LCLRConfig, LCLRData]:
    """The lclr task's model and data settings of `cfg` over their defaults (unknown keys
    and bad values: one AlignersInputError line)."""
    m = from_config(LCLRConfig, cfg.model, "model")  # (RULES: C_grid non-empty)
    return m, from_config(LCLRData, cfg.data, "data")
