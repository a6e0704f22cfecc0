"""The gappy HSMM's defaults and `aligners align` options, in one place (no torch import).

`PhrasalConfig` is the phrasal model (Bansal et al. 2011, sec. 7.2); `GappyHSMMConfig` is the
whole family's: the word HMM start (Model 1 + HMM, both directions, without agreement) and
the phrasal model trained by agreement on top of it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

from aligners.cli_types import MAX_ITERATIONS, float_in, int_at_least
from aligners.data import DEFAULT_CELLS
from aligners.models.aligned import Decoding, TuneGrid
from aligners.models.hmm.config import WordAlignConfig
from aligners.models.hmm.config import from_args as word_from_args

__all__ = ["MAX_PHRASE_LEN", "RANK_RULES", "METHODS", "DECODING", "REGIMENS", "regimen",
           "PhrasalConfig", "GappyHSMMConfig", "GappyTaskConfig", "add_arguments", "from_args"]

MAX_PHRASE_LEN = 16  # longest phrase the span hash supports
RANK_RULES = ("probability", "count")  # how `rank_phrases` orders the mined candidates
METHODS = ("agreement", "posterior", "viterbi")  # the decodings this family supports
OPTIONS_OF = ("hmm",)  # the word HMM's options set this family's start
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


# The regimen chosen on Hansards dev (trial + first 100 test pairs; Bansal et al. sec. 7.2)
# at 20k and at 200k training pairs (configs/experiment/bansal2011_hansards{_20k,}.yaml):
# (from this many pairs on, {dotted field: value}). Between the two measured sizes the
# switch is at 100k (no dev run there); below 20k the phrase-list minimum counts stay 1
# (an absolute minimum could empty the lists of a small bitext).
REGIMENS = (
    (0, {"start.ibm1_iterations": 5, "start.hmm_iterations": 4, "phrasal.p0": 0.2,
         "phrasal.iterations": 5, "phrasal.min_count": 1, "phrasal.gappy_min_count": 1}),
    (20_000, {"phrasal.min_count": 5, "phrasal.gappy_min_count": 10}),
    (100_000, {"start.ibm1_iterations": 3, "start.hmm_iterations": 3,
               "phrasal.iterations": 2}),
)
SIZED = tuple(dict.fromkeys(k for _, r in REGIMENS for k in r))


def regimen(n_pairs: int) -> dict:
    """{dotted field: value} of the dev-chosen regimen for a bitext of `n_pairs` pairs."""
    out = {}
    for start, settings in REGIMENS:
        if n_pairs >= start:
            out.update(settings)
    return out


@dataclass
class GappyHSMMConfig:
    """The family's training: `start` (word HMM, no agreement), then `phrasal`. `sized`
    names the fields (`start.x`, `phrasal.y`) that `for_pairs` sets from the dev-chosen
    regimen of the bitext's size (`aligners align` leaves there every such option not
    given)."""

    start: WordAlignConfig = field(default_factory=lambda: WordAlignConfig(agreement=False))
    phrasal: PhrasalConfig = field(default_factory=PhrasalConfig)
    sized: tuple[str, ...] = SIZED

    def for_pairs(self, n_pairs: int) -> GappyHSMMConfig:
        """This config with its `sized` fields set for a bitext of `n_pairs` pairs."""
        parts = {"start": {}, "phrasal": {}}
        for key, value in regimen(n_pairs).items():
            if key in self.sized:
                part, _, name = key.partition(".")
                parts[part][name] = value
        return GappyHSMMConfig(start=replace(self.start, **parts["start"]),
                               phrasal=replace(self.phrasal, **parts["phrasal"]), sized=())


@dataclass
class GappyTaskConfig:
    """The top-level keys of the gappy-hsmm task's `model` section
    (configs/model/gappy_hsmm.yaml; its `word`, `start` and `phrasal` sections are
    WordAlignConfig, WordAlignConfig and PhrasalConfig)."""

    name: str = "gappy-hsmm"
    batch_cells: int = DEFAULT_CELLS
    dev_from_test: int = 100  # dev = tuning split + first 100 test pairs (sec. 7.2)
    tune_grid: TuneGrid = field(default_factory=TuneGrid)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The phrasal options of `aligners align --model gappy-hsmm` (the word HMM's options set
    its start)."""
    g = p.add_argument_group("gappy HSMM (--model gappy-hsmm)")
    g.add_argument("--phrasal-iterations", type=int_at_least(0, MAX_ITERATIONS), default=None,
                   help="EM iterations of the phrasal model (default: by corpus size, "
                        "the regimen chosen on Hansards dev: 5 below 100k pairs, 2 from there "
                        "on; the start's --ibm1-iterations / --hmm-iterations 5 / 4, then "
                        "3 / 3; phrasal NULL probability 0.2; see "
                        "aligners.models.gappy_hsmm.config.REGIMENS)")
    g.add_argument("--phrasal-p0", type=float_in(0.0, 1.0, high_open=True), default=None,
                   help="the phrasal model's NULL probability, in [0, 1) (default: by "
                        f"corpus size, 0.2; the paper's: {PhrasalConfig.p0})")
    g.add_argument("--no-gappy", action="store_true", help="contiguous phrases only")


def from_args(args: argparse.Namespace) -> GappyHSMMConfig:
    """The GappyHSMMConfig that the options describe; what they leave unset is `sized`."""
    start = word_from_args(args)
    start.agreement = False
    flags = {"start.ibm1_iterations": args.ibm1_iterations,
             "start.hmm_iterations": args.hmm_iterations, "phrasal.p0": args.phrasal_p0,
             "phrasal.iterations": args.phrasal_iterations}
    given = {k.partition(".")[2]: v for k, v in flags.items()
             if k.startswith("phrasal.") and v is not None}
    sized = tuple(k for k in SIZED if flags.get(k) is None)
    return GappyHSMMConfig(start=start, phrasal=PhrasalConfig(gappy=not args.no_gappy, **given),
                           sized=sized)
