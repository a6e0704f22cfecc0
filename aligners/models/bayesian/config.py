"""The Bayesian aligner's defaults and `aligners align` options, in one place (no torch,
no numba import: the CLI parser reads them).

`BayesConfig` holds eflomal's hyper-parameters and schedule (Östling & Tiedemann 2016) and
how the sampler runs; `add_arguments` / `from_args` are its `aligners align --model bayesian`
options (unset options keep the dataclass defaults).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass

from aligners.cli_types import add_options, from_options
from aligners.config_checks import BOOL, FRAC, MAX_ITERATIONS, POS, Rule, setting
from aligners.errors import AlignersInputError
from aligners.models.aligned import Decoding, TuneGrid

__all__ = ["BayesConfig", "BayesDecoding", "BayesGrid", "BayesTaskConfig", "METHODS",
           "DECODING", "TASK_SECTIONS", "add_arguments", "from_args", "adjust_loaded"]

METHODS = ("mean", "viterbi", "posterior")  # both directions' mean marginal > threshold;
# per direction the argmax of the averaged marginals, or a threshold


@dataclass
class BayesConfig:
    """Hyper-parameters (paper / eflomal defaults) and the sampling schedule."""

    model: int = setting(3, Rule("int", choices=(1, 2, 3)), flag="--stages",
                         help="1 IBM1, 2 +HMM, 3 +fertility (default {default})")
    n_samplers: int = setting(3, Rule("int", lo=1), flag="--samplers",  # marginals averaged
                              help="independent samplers ({default})")
    rel_iterations: float = setting(  # x eflomal's sweeps per stage (5000 / sqrt(pairs))
        1.0, Rule("float", lo=0, lo_open=True, hi=100), flag="--length",
        help="relative number of sweeps (1.0 = eflomal's schedule)")
    iterations: list[int] | None = setting(None, Rule(  # sweeps per stage; None: eflomal's
        "int", lo=0, hi=MAX_ITERATIONS, each=True, nullable=True))
    burn_in: float = setting(0.5, FRAC)  # share of the last stage's sweeps before the
    # marginals accumulate
    p_null: float = setting(0.2, FRAC, flag="--null-prior", help="NULL probability ({default})")
    lex_alpha: float = setting(0.001, POS)
    null_alpha: float = setting(0.001, POS)
    jump_alpha: float = setting(0.5, POS)
    fert_alpha: float = setting(0.5, POS)
    max_jump: int = setting(100, Rule("int", lo=1))  # jumps beyond +-max_jump share a bucket
    # (small values let long jumps pool into the edge buckets, which then attract
    # alignments: AER much worse)
    max_fert: int = setting(7, Rule("int", lo=1))  # fertilities >= max_fert share a bucket
    threads: int = setting(2, Rule("int", choices=(1, 2)), flag="--sampler-threads",
                           help="2: both directions in parallel (default)")  # 1: one after
    # the other
    lowercase: bool = setting(True, BOOL)  # words are lowercased before encoding (eflomal)
    marginal_slots: int = setting(0, Rule("int", lo=0))  # sparse link marginals kept per
    # observed token (sampler.py); 0 = auto: 3, or 2 from 2M observed tokens per direction
    # on (memory; same AER at 200k)

    def invariants(self) -> None:
        """The schedule's shape: 3 sweep counts, at least 1 for the last stage used."""
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


@dataclass(frozen=True)
class BayesDecoding(Decoding):
    """The default decoding (where no tuning split exists): DECODING. The two directions'
    mean marginal > the threshold (None: `mean_threshold` of the text's size), chosen on dev
    data only, never on a test split (docs/word.md, "Decoding the Bayesian aligner")."""

    method: str = setting("mean", Rule("str", choices=METHODS))
    threshold: float | None = None
    symmetrize: str = "none"


@dataclass
class BayesGrid(TuneGrid):
    """The bayesian task's tuning grid (the mean of the directions' marginals, not their
    product: one sampler per direction), searched on data.tune_split (never the test)."""

    methods: list[str] = setting(rule=Rule("str", choices=METHODS, each=True, nonempty=True),
                                 factory=lambda: ["mean", "viterbi", "posterior"])
    thresholds: list[float] = setting(factory=lambda: [0.3, 0.4, 0.5, 0.55, 0.6])


DECODING = Decoding(**asdict(BayesDecoding()))


@dataclass
class BayesTaskConfig(BayesConfig):
    """The bayesian task's `model` section (configs/model/bayesian.yaml)."""

    decoding: BayesDecoding = setting(factory=BayesDecoding)
    tune_grid: BayesGrid = setting(factory=BayesGrid)


TASK_SECTIONS = {"model": f"{__name__}:BayesTaskConfig"}  # the task's config sections


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_options(p.add_argument_group("bayesian model (--model bayesian)"), BayesConfig,
                "n_samplers", "rel_iterations", "p_null", "model", "threads")


def _check_device(args: argparse.Namespace) -> None:
    if args.device != "cpu":
        raise AlignersInputError(f"--device {args.device}: the Bayesian aligner's sampler "
                                 "runs on the CPU; use --device cpu")


def from_args(args: argparse.Namespace) -> BayesConfig:
    """The BayesConfig that the options describe (AlignersInputError for a bad value)."""
    cfg = from_options(BayesConfig, args)
    _check_device(args)
    return cfg


LOADED_OPTIONS = ("sampler_threads",)  # read with --load-model, below


def adjust_loaded(model, args: argparse.Namespace) -> None:
    """How a loaded model samples new text: --sampler-threads (--device must be cpu)."""
    model.model.config.threads = args.sampler_threads or BayesConfig.threads
    _check_device(args)
