"""The word aligner's defaults, rules and `aligners align` options, in one place (no torch
import: the CLI parser reads them).

`WordAlignConfig` (training schedule and model) and `WordDecoding` (decoding defaults) are
the single source of every default and value rule (`aligners.config_checks.setting`); the
`aligners align` options are generated from their fields (`aligners.cli_types`), and
`HMMTaskConfig` is the Hydra schema that `configs/model/hmm.yaml` extends.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass

from aligners.cli_types import add_options, from_options
from aligners.config_checks import FRAC, ITERATIONS, NONNEG, UNIT, Rule, setting
from aligners.data import DEFAULT_CELLS
from aligners.models.aligned import Decoding, TuneGrid

__all__ = ["WordAlignConfig", "WordDecoding", "WordGrid", "HMMGrid", "HMMTaskConfig", "METHODS",
           "DECODING", "TASK_SECTIONS", "add_arguments", "from_args"]

METHODS = ("agreement", "posterior", "viterbi")  # the decodings this family supports
_SIZED = "default {default} (gappy-hsmm: by corpus size)"


@dataclass
class WordAlignConfig:
    """Training schedule and model defaults (Liang et al. 2006: 5 + 5 joint iterations)."""

    ibm1_iterations: int = setting(5, ITERATIONS, flag="--ibm1-iterations", help=_SIZED)
    hmm_iterations: int = setting(5, ITERATIONS, flag="--hmm-iterations", help=_SIZED)
    agreement: bool = setting(True, Rule("bool"), flag="--no-agreement",
                              help="train the directions apart")
    p0: float = setting(0.1, FRAC, flag="--p0",  # Hansards trial set: 0.1 < 0.2 < 0.3
                        help="HMM NULL probability, in [0, 1) (default {default})")
    max_jump: int = setting(10, Rule("int", lo=1), flag="--max-jump",  # wider jumps: one
                            help="default {default}")  # bucket
    alpha: float = setting(0.0, NONNEG, flag="--alpha",  # the lexical tables' symmetric
                           help="Dirichlet prior (VB), 0 = EM (default {default})")  # prior
    null_alpha: float = setting(0.0, NONNEG)
    lattice: str = setting("och_ney", Rule("str", choices=("och_ney",)))  # the only one
    # (aligners.lattices.alignment_hmm); kept so that saved config.json files stay as they were


@dataclass(frozen=True)
class WordDecoding(Decoding):
    """Decoding defaults (chosen on the Hansards trial set): links whose product of the two
    directions' posteriors exceeds `threshold`, no further symmetrization
    (`aligners.inference`); `aligners align` uses grow-diag-final-and for the other
    methods unless told otherwise."""

    method: str = setting("agreement", Rule("str", choices=METHODS))
    threshold: float = setting(0.3, UNIT)
    symmetrize: str = "none"


@dataclass
class WordGrid(TuneGrid):
    """The tuning grid of the word HMM's decodings (the hmm and gappy-hsmm tasks)."""

    methods: list[str] = setting(rule=Rule("str", choices=METHODS, each=True, nonempty=True),
                                 factory=lambda: list(METHODS))


@dataclass
class HMMGrid(WordGrid):
    """The hmm task's tuning grid (finer thresholds below 0.5), searched on
    data.tune_split (never the test split)."""

    thresholds: list[float] = setting(factory=lambda: [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4,
                                                       0.5])


@dataclass
class HMMTaskConfig(WordAlignConfig):
    """The hmm task's `model` section (configs/model/hmm.yaml): the model, the batch budget,
    the default decoding and the tuning grid."""

    batch_cells: int = setting(DEFAULT_CELLS, Rule("int", lo=1))
    decoding: WordDecoding = setting(factory=WordDecoding)
    tune_grid: HMMGrid = setting(factory=HMMGrid)


DECODING = Decoding(**asdict(WordDecoding()))
TASK_SECTIONS = {"model": f"{__name__}:HMMTaskConfig"}  # the hmm task's config sections


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The word HMM's `aligners align` options (also the start of `--model gappy-hsmm`)."""
    add_options(p.add_argument_group("word HMM (--model hmm; also the start of gappy-hsmm)"),
                WordAlignConfig)


def from_args(args: argparse.Namespace) -> WordAlignConfig:
    """The WordAlignConfig that `add_arguments`' options describe (unset: the defaults)."""
    return from_options(WordAlignConfig, args)
