"""The word aligner's defaults, in one place (no torch import: the CLI parser reads them).

`WordAlignConfig` (training schedule and model) and `WordDecoding` (decoding defaults) are
the single source of every default: `aligners align`'s argparse defaults are read from
them, and a test checks that `configs/model/hmm_agreement.yaml` restates them unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WordAlignConfig", "WordDecoding"]


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
    directions' posteriors exceeds 0.3, no further symmetrization (`aligners.inference`)."""

    method: str = "agreement"  # or "posterior", "viterbi"
    threshold: float = 0.3
    symmetrize: str = "none"  # an atools heuristic; `aligners align` uses
    # grow-diag-final-and for non-agreement decodings unless told otherwise
