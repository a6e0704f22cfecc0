"""LCLR's settings, defaults and value rules, in one place (no torch import).

`LCLRConfig` is the `model` section of the lclr task (the schema configs/model/lclr_*.yaml
extend, each holding what it changes); its training defaults are those of
`aligners.models.lclr.model.train_lclr`, which reads them from here. `LCLRData` is the task's
`data` section (configs/data/lclr_*.yaml); `lclr_settings(cfg)` reads both.
"""

from __future__ import annotations

from dataclasses import dataclass

from aligners.config_checks import BOOL, POS, Rule, at_least, from_config, setting

__all__ = ["LCLRConfig", "LCLRData", "LCLR_TASKS", "FEATURE_GROUPS", "lclr_settings"]

LCLR_TASKS = ("transliteration", "paraphrase", "entailment")
FEATURE_GROUPS = ("wordnet", "pos", "ne", "neg", "string", "dep")  # `drop_features` values
_COUNT, _SOME, _LIMIT = at_least(1), Rule("str", nullable=True), at_least(1, nullable=True)


@dataclass
class LCLRConfig:
    """LCLR vs the two-stage baseline (Chang et al. 2010) on one task."""

    task: str = setting(rule=Rule("str", choices=LCLR_TASKS))  # required: the file selects it
    C_grid: list[float] = setting(  # SVM C values searched by cross-validation on the
        rule=Rule("float", lo=0, lo_open=True, each=True, nonempty=True),  # training split
        factory=lambda: [1.0])  # (one value: no CV)
    cv_folds: int = setting(3, Rule("int", lo=2))
    cv_repeats: int = setting(5, _COUNT)  # sentence-pair tasks: k-fold CV repeated over this
    # many shuffles, accuracies averaged over all repeats x folds
    seeds: int = setting(3, _COUNT)  # sentence-pair tasks: the whole pipeline (CV shuffles,
    # selection, training) runs for seeds cfg.seed .. cfg.seed + seeds - 1; test = mean +- sd
    drop_features: list[str] = setting(rule=Rule("str", choices=FEATURE_GROUPS, each=True),
                                       factory=list)  # sentence-pair tasks: feature groups
    # left out (ablation): FEATURE_GROUPS (NODE-INFO has its own switch)
    lclr_cv: bool = setting(False, BOOL)  # sentence-pair tasks: LCLR picks its own C by CV
    # (else the two-stage system's; RTE: 105 LCLR trainings, ~15 CPU-min per seed)
    tol: float = setting(1e-5, POS)  # Algorithm 1 stops when Eq. (3) improves by less (rel.)
    max_outer: int = setting(20, _COUNT)  # Algorithm 1 iterations at most (paraphrase
    # converges in ~13, ~5 CPU-min per seed; caps 4 / 5: LCLR 75.05 +- 0.03; RTE's 600 pairs
    # stopped at caps 10 / 10)
    max_cutting: int = setting(50, _COUNT)  # Algorithm 2 rounds per outer iteration at most
    dcd_tol: float = setting(1e-3, POS)  # dual coordinate descent: max projected gradient
    parse_cache: str | None = setting(None, _SOME)  # sentence-pair tasks: None =
    # $ALIGNERS_CACHE/parses (default ~/.cache/aligners/parses)
    node_info: bool = setting(False, BOOL)  # sentence-pair tasks: NODE-INFO edge-map
    # features (Table 2; paraphrase two-stage 3-fold CV: 75.66 vs 75.71 without)
    solver: str = setting("dp", Rule("str", choices=("dp", "ilp")))  # transliteration: exact
    # monotone DP (tested equal to the ILP) or ilp
    C_fixed: dict | None = None  # transliteration: {two_stage: C, lclr: C} (earlier CV) skips CV
    romanization_feature: bool = setting(False, BOOL)  # transliteration: the "rom" feature


@dataclass
class LCLRData:
    """Which labelled pairs train and test (registry dataset `name`'s splits); the
    transliteration protocol's sizes (Chang et al. 2010, sec. 5.1)."""

    name: str | None = setting(None, _SOME)  # registry dataset (`aligners.data.datasets`)
    train_split: str = setting("train", Rule("str"))
    test_split: str = setting("test", Rule("str"))
    train_limit: int | None = setting(None, _LIMIT)  # first N pairs only (smoke runs)
    test_limit: int | None = setting(None, _LIMIT)
    train_positives: int = setting(250, Rule("int", lo=2))  # transliteration: names drawn
    # from the train split
    negative_fraction: float = setting(0.1, Rule("float", lo=0, hi=1))  # transliteration: of
    # the random pairings of their words
    test_names: int = setting(300, _COUNT)  # transliteration: each ranked against all test
    # candidates
    cv_candidates: int = setting(0, Rule("int", lo=0))  # transliteration: candidates each CV
    # fold ranks against (0: the fold's own names only)


def lclr_settings(cfg) -> tuple[LCLRConfig, LCLRData]:
    """The lclr task's model and data settings of `cfg` over their defaults (unknown keys
    and bad values: one AlignersInputError line)."""
    m = from_config(LCLRConfig, cfg.model, "model")  # (its rule: C_grid non-empty)
    return m, from_config(LCLRData, cfg.data, "data")
