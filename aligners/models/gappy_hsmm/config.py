"""The gappy HSMM's defaults and `aligners align` options, in one place (no torch import).

`PhrasalConfig` is the phrasal model (Bansal et al. 2011, sec. 7.2); `GappyHSMMConfig` is the
whole family's: the word HMM start (Model 1 + HMM, both directions, without agreement) and
the phrasal model trained by agreement on top of it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace

from aligners.cli_types import add_options, from_options, given
from aligners.config_checks import BOOL, FRAC, ITERATIONS, NONNEG, POS, Rule, check, maybe, setting
from aligners.data import DEFAULT_CELLS
from aligners.models.hmm.config import DECODING, METHODS, WordAlignConfig, WordGrid

__all__ = ["MAX_PHRASE_LEN", "RANK_RULES", "METHODS", "DECODING", "REGIMENS", "PhrasalConfig",
           "GappyHSMMConfig", "StartConfig", "GappyTaskConfig", "TASK_SECTIONS", "add_arguments",
           "from_args"]

MAX_PHRASE_LEN = 16  # longest phrase the span hash supports
RANK_RULES = ("probability", "count")  # how `rank_phrases` orders the mined candidates
_RANK, _MIN_COUNT = Rule("str", choices=RANK_RULES), Rule("int", lo=1, nullable=True)
OPTIONS_OF = ("hmm",)  # the word HMM's options set this family's start; its DECODING and
# METHODS are the word HMM's (chosen on the Hansards trial set)
_ITERATIONS_HELP = (
    "EM iterations of the phrasal model (default: by corpus size, the regimen chosen on "
    "Hansards dev: 5 below 100k pairs, 2 from there on; the start's --ibm1-iterations / "
    "--hmm-iterations 5 / 4, then 3 / 3; phrasal NULL probability 0.2; see "
    "aligners.models.gappy_hsmm.config.REGIMENS)")


@dataclass
class PhrasalConfig:
    """Defaults of the paper (sec. 7.2): p0 0.3, phrases <= 5 words, eta = lambda = 1,
    1000 contiguous + 200 gappy phrases per language, 5 iterations. A `SIZED` field may be
    None: by corpus size (`GappyHSMMConfig.for_pairs`). Checked when made (`check`)."""

    p0: float | None = setting(0.3, maybe(FRAC), flag="--phrasal-p0", help=(
        "the phrasal model's NULL probability, in [0, 1) (default: by corpus size, 0.2; the "
        "paper's: {default})"))
    max_phrase_len: int = setting(5, Rule("int", lo=1, hi=MAX_PHRASE_LEN))
    eta: float = setting(1.0, POS)
    lam: float = setting(1.0, POS)
    n_contiguous: int = setting(1000, Rule("int", lo=0))
    n_gappy: int = setting(200, Rule("int", lo=0))
    gappy: bool = setting(True, BOOL, flag="--no-gappy", help="contiguous phrases only")
    agreement: bool = setting(True, BOOL)
    iterations: int | None = setting(5, maybe(ITERATIONS), flag="--phrasal-iterations",
                                     help=_ITERATIONS_HELP)
    discount: float = setting(0.5, NONNEG)  # of the discounted probability ranking phrases
    min_count: int | None = setting(1, _MIN_COUNT)  # occurrences a contiguous phrase needs
    rank: str = setting("probability", _RANK)  # or "count" (phrase_lists.RANK_RULES)
    gappy_discount: float | None = setting(None, maybe(NONNEG))  # None: `discount`
    gappy_min_count: int | None = setting(1, _MIN_COUNT)  # occurrences a gappy phrase needs
    gappy_rank: str | None = setting(None, maybe(_RANK))  # None: `rank`

    def __post_init__(self):
        check(self)


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


@dataclass
class GappyHSMMConfig:
    """The family's training: `start` (word HMM, no agreement), then `phrasal`. `sized`
    names the fields (`start.x`, `phrasal.y`) that `for_pairs` sets from the dev-chosen
    regimen of the bitext's size (`aligners align` leaves there every such option not
    given), as it sets every such field that is None."""

    start: WordAlignConfig = setting(factory=lambda: WordAlignConfig(agreement=False),
                                     section=WordAlignConfig)
    phrasal: PhrasalConfig = setting(factory=PhrasalConfig)
    sized: tuple[str, ...] = SIZED

    def for_pairs(self, n_pairs: int) -> GappyHSMMConfig:
        """This config with its `sized` fields set for a bitext of `n_pairs` pairs."""
        parts = {"start": {}, "phrasal": {}}
        for since, settings in REGIMENS:  # a later regimen overrides an earlier one
            for key, value in settings.items() if n_pairs >= since else ():
                part, _, name = key.partition(".")
                if key in self.sized or getattr(getattr(self, part), name) is None:
                    parts[part][name] = value
        return GappyHSMMConfig(start=replace(self.start, **parts["start"]),
                               phrasal=replace(self.phrasal, **parts["phrasal"]), sized=())


@dataclass
class StartConfig:
    """The task's `model.start`: the phrasal model's start (sec. 7.1) is `model.word` with
    these iteration counts (null: by corpus size, `REGIMENS`) and without agreement."""

    ibm1_iterations: int | None = setting(5, maybe(ITERATIONS))
    hmm_iterations: int | None = setting(5, maybe(ITERATIONS))


@dataclass
class GappyTaskConfig:
    """The gappy-hsmm task's `model` section (configs/model/gappy_hsmm.yaml): the word HMM
    baseline (`word`), the phrasal model's start and the phrasal model; the `SIZED` keys
    may be null there (by corpus size, `REGIMENS`)."""

    batch_cells: int = setting(DEFAULT_CELLS, Rule("int", lo=1))
    dev_from_test: int = setting(100, Rule("int", lo=0))  # dev = tuning split + first 100
    # test pairs (sec. 7.2)
    word: WordAlignConfig = setting(factory=WordAlignConfig)
    start: StartConfig = setting(factory=StartConfig)
    phrasal: PhrasalConfig = setting(factory=PhrasalConfig)
    tune_grid: WordGrid = setting(factory=WordGrid)


TASK_SECTIONS = {"model": f"{__name__}:GappyTaskConfig"}  # the task's config sections


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The phrasal options of `aligners align --model gappy-hsmm` (the word HMM's options set
    its start)."""
    add_options(p.add_argument_group("gappy HSMM (--model gappy-hsmm)"), PhrasalConfig,
                "iterations", "p0", "gappy")


def from_args(args: argparse.Namespace) -> GappyHSMMConfig:
    """The GappyHSMMConfig that the options describe; what they leave unset is `sized`."""
    set_here = {"start": given(WordAlignConfig, args), "phrasal": given(PhrasalConfig, args)}
    sized = tuple(k for k in SIZED if k.partition(".")[2] not in set_here[k.partition(".")[0]])
    return GappyHSMMConfig(start=from_options(WordAlignConfig, args, agreement=False),
                           phrasal=from_options(PhrasalConfig, args), sized=sized)
