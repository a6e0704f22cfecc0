"""The Bayesian aligner's defaults and `aligners align` options, in one place (no torch,
no numba import: the CLI parser reads them).

`BayesConfig` holds eflomal's hyper-parameters and schedule (Östling & Tiedemann 2016) and
how the sampler runs; `add_arguments` / `from_args` are its `aligners align --model bayesian`
options (unset options keep the dataclass defaults).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import ClassVar

from aligners.config_checks import MAX_ITERATIONS, Rule, check_value
from aligners.errors import AlignersInputError
from aligners.models.aligned import Decoding, TuneGrid

_POS, _FRAC = Rule("float", lo=0, lo_open=True), Rule("float", lo=0, hi=1, hi_open=True)

__all__ = ["BayesConfig", "BayesDecoding", "BayesGrid", "BayesTaskConfig", "METHODS",
           "DECODING", "add_arguments", "from_args", "adjust_loaded"]

METHODS = ("mean", "viterbi", "posterior")  # both directions' mean marginal > threshold;
# per direction the argmax of the averaged marginals, or a threshold


@dataclass
class BayesConfig:
    """Hyper-parameters (paper / eflomal defaults) and the sampling schedule."""

    model: int = 3  # 1 IBM1, 2 HMM, 3 HMM + fertility
    n_samplers: int = 3
    rel_iterations: float = 1.0
    iterations: list[int] | None = None  # sweeps per stage; None = eflomal's schedule
    burn_in: float = 0.5  # share of the last stage's sweeps before marginals accumulate
    p_null: float = 0.2
    lex_alpha: float = 0.001
    null_alpha: float = 0.001
    jump_alpha: float = 0.5
    fert_alpha: float = 0.5
    max_jump: int = 100  # jumps beyond +-max_jump share a bucket (small values let long
    # jumps pool into the edge buckets, which then attract alignments: AER much worse)
    max_fert: int = 7  # fertilities >= max_fert share a bucket
    threads: int = 2  # 1: directions one after another; 2: in parallel
    lowercase: bool = True  # words are lowercased before encoding (as eflomal does)
    marginal_slots: int = 0  # sparse link marginals kept per observed token (sampler.py);
    # 0 = auto: 3, or 2 from 2M observed tokens per direction on (memory; same AER at 200k)

    RULES: ClassVar[dict[str, Rule]] = {
        "model": Rule("int", choices=(1, 2, 3)), "n_samplers": Rule("int", lo=1),
        "rel_iterations": Rule("float", lo=0, lo_open=True, hi=100),  # x eflomal's sweeps
        "burn_in": _FRAC, "p_null": _FRAC, "lex_alpha": _POS,
        "null_alpha": _POS, "jump_alpha": _POS, "fert_alpha": _POS,
        "iterations": Rule("int", lo=0, hi=MAX_ITERATIONS, each=True, nullable=True),
        "max_jump": Rule("int", lo=1), "max_fert": Rule("int", lo=1),
        "threads": Rule("int", lo=1), "lowercase": Rule("bool"),
        "marginal_slots": Rule("int", lo=0),
    }

    def check(self) -> None:
        """AlignersInputError (a ValueError) with a one-line message for an invalid value:
        `RULES` (which `aligners.config_checks` applies to the Hydra task's `model.*` too),
        then the schedule's shape."""
        for name, rule in self.RULES.items():
            check_value(name, getattr(self, name), rule)
        its = self.iterations
        if its is not None and (len(its) != 3 or its[self.model - 1] < 1):
            raise AlignersInputError("iterations must be 3 sweep counts (IBM1, HMM, fertility) "
                                     f"with at least 1 for the last stage used; got {its}")


# The mean decoding's threshold by corpus size: (from this many sentence pairs on, the
# threshold), chosen on dev (docs/word.md, "Decoding the Bayesian aligner"): sampled from
# few pairs, the marginals are flat and a lower threshold keeps the recall.
MEAN_THRESHOLDS = ((0, 0.35), (5_000, 0.55))


def mean_threshold(n_pairs: int, threshold: float | None = None) -> float:
    """`threshold`, or (None) the mean decoding's default for a text of `n_pairs` pairs."""
    if threshold is not None:
        return threshold
    return [t for start, t in MEAN_THRESHOLDS if n_pairs >= start][-1]


@dataclass
class BayesDecoding:
    """The default decoding (where no tuning split exists): DECODING. The two directions'
    mean marginal > the threshold (null: `mean_threshold` of the text's size), chosen on dev
    data only, never on a test split (docs/word.md, "Decoding the Bayesian aligner")."""

    method: str = "mean"
    threshold: float | None = None
    symmetrize: str = "none"


@dataclass
class BayesGrid(TuneGrid):
    """The bayesian task's tuning grid (the mean of the directions' marginals, not their
    product: one sampler per direction)."""

    methods: list[str] = field(default_factory=lambda: ["mean", "viterbi", "posterior"])
    thresholds: list[float] = field(default_factory=lambda: [0.3, 0.4, 0.5, 0.55, 0.6])


DECODING = Decoding(BayesDecoding.method, BayesDecoding.threshold, BayesDecoding.symmetrize)


@dataclass
class BayesTaskConfig(BayesConfig):
    """The bayesian task's `model` section (configs/model/bayesian.yaml)."""

    name: str = "bayesian"
    decoding: BayesDecoding = field(default_factory=BayesDecoding)
    tune_grid: BayesGrid = field(default_factory=BayesGrid)


def add_arguments(p: argparse.ArgumentParser) -> None:
    b = p.add_argument_group("bayesian model (--model bayesian)")
    b.add_argument("--samplers", type=int, default=None,
                   help=f"independent samplers ({BayesConfig.n_samplers})")
    b.add_argument("--length", type=float, default=None,
                   help="relative number of sweeps (1.0 = eflomal's schedule)")
    b.add_argument("--null-prior", type=float, default=None,
                   help=f"NULL probability ({BayesConfig.p_null})")
    b.add_argument("--stages", type=int, choices=(1, 2, 3), default=None,
                   help=f"1 IBM1, 2 +HMM, 3 +fertility (default {BayesConfig.model})")
    b.add_argument("--sampler-threads", type=int, choices=(1, 2), default=BayesConfig.threads,
                   help="2: both directions in parallel (default)")


def _check_device(args: argparse.Namespace) -> None:
    if args.device != "cpu":
        raise AlignersInputError(f"--device {args.device}: the Bayesian aligner's sampler "
                                 "runs on the CPU; use --device cpu")


def from_args(args: argparse.Namespace) -> BayesConfig:
    """The BayesConfig that the options describe (AlignersInputError for a bad value)."""
    kw = {"threads": args.sampler_threads, "lowercase": True}
    for flag, name in (("samplers", "n_samplers"), ("length", "rel_iterations"),
                       ("null_prior", "p_null"), ("stages", "model")):
        if getattr(args, flag) is not None:
            kw[name] = getattr(args, flag)
    try:
        cfg = BayesConfig(**kw)
        cfg.check()
    except ValueError as err:
        raise AlignersInputError(f"--model bayesian: {err}") from None
    _check_device(args)
    return cfg


LOADED_OPTIONS = ("sampler_threads",)  # read with --load-model, below


def adjust_loaded(model, args: argparse.Namespace) -> None:
    """How a loaded model samples new text: --sampler-threads (--device must be cpu)."""
    model.model.config.threads = args.sampler_threads
    _check_device(args)
