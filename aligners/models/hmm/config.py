"""The word aligner's defaults, in one place (no torch import: the CLI parser reads them).

`WordAlignConfig` (training schedule and model) and `WordDecoding` (decoding defaults) are
the single source of every default: `aligners align`'s options are built from them here
(`add_arguments`, `from_args`), and a test checks that `configs/model/hmm.yaml` restates
them unchanged.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

from aligners.cli_types import MAX_ITERATIONS, float_in, int_at_least
from aligners.data import DEFAULT_CELLS
from aligners.models.aligned import Decoding, TuneGrid

__all__ = ["WordAlignConfig", "WordDecoding", "HMMGrid", "HMMTaskConfig", "METHODS",
           "DECODING", "add_arguments", "from_args"]


@dataclass
class WordAlignConfig:
    """Training schedule and model defaults (Liang et al. 2006: 5 + 5 joint iterations)."""

    ibm1_iterations: int = 5
    hmm_iterations: int = 5
    agreement: bool = True
    p0: float = 0.1  # HMM NULL probability (chosen on the Hansards trial set)
    max_jump: int = 10  # jump widths beyond +-max_jump share a bucket
    alpha: float = 0.0  # symmetric Dirichlet prior of the lexical tables (0 = plain EM)
    null_alpha: float = 0.0
    lattice: str = "och_ney"  # or "generic": aligners.lattices.hmm on 2I states (slower)


@dataclass
class WordDecoding:
    """Decoding defaults (chosen on the Hansards trial set): links whose product of the two
    directions' posteriors exceeds `threshold`, no further symmetrization
    (`aligners.inference`)."""

    method: str = "agreement"  # or "posterior", "viterbi"
    threshold: float = 0.3
    symmetrize: str = "none"  # an atools heuristic; `aligners align` uses
    # grow-diag-final-and for non-agreement decodings unless told otherwise


@dataclass
class HMMGrid(TuneGrid):
    """The hmm task's tuning grid (finer thresholds below 0.5)."""

    thresholds: list[float] = field(
        default_factory=lambda: [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5])


@dataclass
class HMMTaskConfig(WordAlignConfig):
    """The hmm task's `model` section (configs/model/hmm.yaml): the model, the batch budget,
    the default decoding and the tuning grid."""

    name: str = "hmm"
    batch_cells: int = DEFAULT_CELLS
    decoding: WordDecoding = field(default_factory=WordDecoding)
    tune_grid: HMMGrid = field(default_factory=HMMGrid)


METHODS = ("agreement", "posterior", "viterbi")  # the decodings this family supports
DECODING = Decoding(WordDecoding.method, WordDecoding.threshold, WordDecoding.symmetrize)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The word HMM's `aligners align` options (also the start of `--model gappy-hsmm`)."""
    c = WordAlignConfig()
    m = p.add_argument_group("word HMM (--model hmm; also the start of gappy-hsmm)")
    m.add_argument("--ibm1-iterations", type=int_at_least(0, MAX_ITERATIONS), default=None,
                   help=f"default {c.ibm1_iterations} (gappy-hsmm: by corpus size)")
    m.add_argument("--hmm-iterations", type=int_at_least(0, MAX_ITERATIONS), default=None,
                   help=f"default {c.hmm_iterations} (gappy-hsmm: by corpus size)")
    m.add_argument("--no-agreement", action="store_true", help="train the directions apart")
    m.add_argument("--p0", type=float_in(0.0, 1.0, high_open=True), default=c.p0,
                   help="HMM NULL probability, in [0, 1) (default %(default)s)")
    m.add_argument("--max-jump", type=int_at_least(1), default=c.max_jump,
                   help="default %(default)s")
    m.add_argument("--alpha", type=float_in(0.0, math.inf, high_open=True), default=c.alpha,
                   help="Dirichlet prior (VB), 0 = EM (default %(default)s)")


def from_args(args: argparse.Namespace) -> WordAlignConfig:
    """The WordAlignConfig that `add_arguments`' options describe (unset: the defaults)."""
    given = {k: getattr(args, k) for k in ("ibm1_iterations", "hmm_iterations")
             if getattr(args, k) is not None}
    return WordAlignConfig(**given, agreement=not args.no_agreement, p0=args.p0,
                           max_jump=args.max_jump, alpha=args.alpha)
