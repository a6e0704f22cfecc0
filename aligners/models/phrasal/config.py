"""The gappy HSMM's defaults and `aligners align` options, in one place (no torch import).

`PhrasalConfig` is the phrasal model (Bansal et al. 2011, sec. 7.2); `GappyHSMMConfig` is the
whole family's: the word HMM start (Model 1 + HMM, both directions, without agreement) and
the phrasal model trained by agreement on top of it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from aligners.cli_types import float_in, int_at_least
from aligners.models.aligned import Decoding
from aligners.models.word.config import WordAlignConfig
from aligners.models.word.config import from_args as word_from_args

__all__ = ["MAX_PHRASE_LEN", "RANK_RULES", "METHODS", "DECODING", "PhrasalConfig",
           "GappyHSMMConfig", "add_arguments", "from_args"]

MAX_PHRASE_LEN = 16  # longest phrase the span hash supports
RANK_RULES = ("probability", "count")  # how `rank_phrases` orders the mined candidates
METHODS = ("agreement", "posterior", "viterbi")  # the decodings this family supports
DECODING = Decoding("agreement", 0.3, "none")  # chosen on the Hansards trial set


@dataclass
class PhrasalConfig:
    """Defaults of the paper (sec. 7.2): p0 0.3, phrases <= 5 words, eta = lambda = 1,
    1000 contiguous + 200 gappy phrases per language, 5 iterations."""

    p0: float = 0.3
    max_phrase_len: int = 5
    eta: float = 1.0
    lam: float = 1.0
    n_contiguous: int = 1000
    n_gappy: int = 200
    gappy: bool = True
    agreement: bool = True
    iterations: int = 5
    discount: float = 0.5  # of the discounted probability that ranks mined phrases
    min_count: int = 1  # occurrences a contiguous phrase needs to be ranked
    rank: str = "probability"  # or "count" (phrase_lists.RANK_RULES)
    gappy_discount: float | None = None  # None: `discount`
    gappy_min_count: int = 1  # occurrences a gappy phrase needs to be ranked
    gappy_rank: str | None = None  # None: `rank`

    def __post_init__(self):
        checks = [(0.0 <= self.p0 < 1.0, "p0 must be in [0, 1)"),
                  (1 <= self.max_phrase_len <= MAX_PHRASE_LEN,
                   f"max_phrase_len must be in 1..{MAX_PHRASE_LEN}"),
                  (self.eta > 0 and self.lam > 0, "eta and lam must be > 0"),
                  (self.n_contiguous >= 0 and self.n_gappy >= 0, "phrase counts must be >= 0"),
                  (self.iterations >= 0, "iterations must be >= 0"),
                  (self.discount >= 0, "discount must be >= 0"),
                  (self.min_count >= 1 and self.gappy_min_count >= 1, "min counts must be >= 1"),
                  ((self.gappy_discount or 0) >= 0, "gappy_discount must be >= 0"),
                  (self.rank in RANK_RULES and (self.gappy_rank or self.rank) in RANK_RULES,
                   f"rank and gappy_rank must be one of {RANK_RULES}")]
        for ok, msg in checks:
            if not ok:
                raise ValueError(f"PhrasalConfig: {msg}")


@dataclass
class GappyHSMMConfig:
    """The family's training: `start` (word HMM, no agreement), then `phrasal`."""

    start: WordAlignConfig = field(default_factory=lambda: WordAlignConfig(agreement=False))
    phrasal: PhrasalConfig = field(default_factory=PhrasalConfig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The phrasal options of `aligners align --model gappy-hsmm` (the word HMM's options set
    its start)."""
    g = p.add_argument_group("gappy HSMM (--model gappy-hsmm)")
    g.add_argument("--phrasal-iterations", type=int_at_least(0),
                   default=PhrasalConfig.iterations,
                   help="EM iterations of the phrasal model (default: the paper's %(default)s)")
    g.add_argument("--phrasal-p0", type=float_in(0.0, 1.0, high_open=True), default=None,
                   help=f"the phrasal model's NULL probability, in [0, 1) (default: the "
                        f"paper's {PhrasalConfig.p0})")
    g.add_argument("--no-gappy", action="store_true", help="contiguous phrases only")


def from_args(args: argparse.Namespace) -> GappyHSMMConfig:
    """The GappyHSMMConfig that the options describe."""
    start = word_from_args(args)
    start.agreement = False
    p0 = {} if args.phrasal_p0 is None else {"p0": args.phrasal_p0}
    return GappyHSMMConfig(start=start, phrasal=PhrasalConfig(
        iterations=args.phrasal_iterations, gappy=not args.no_gappy, **p0))
