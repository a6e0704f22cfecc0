"""Lattices: potentials -> log_partition / marginals / argmax / sample; no parameters.

Chain lattices with torch-struct 0.5 conventions (see each module's docstring):
``linear_chain`` (``(B, N-1, C, C)``), ``semimarkov`` (``(B, N-1, K, C, C)``) and their
drop-in distribution classes in ``distributions``. Factored alignment lattices:
``hmm`` (``init (B,C)``, ``trans (B,C,C)``, ``emit (B,N,C)``), ``hsmm`` (segments) and
``alignment_hmm`` (the Och-Ney alignment HMM, I word + I NULL states, jump-score rows) and
``factored_semimarkov`` (segment score + label transition, ``emit (B,N-1,K,C)``; the transition
may be a ``jump_transition.JumpTransition``: bucket weights + a jump bucket function, O(C)).

One private core (``_core``): the log zero ``aligners.semirings.semiring_zero``, one masking
rule for variable lengths, one vectorised backtrack, and ``sample_categorical``, the one
categorical sampler (public: models may use it too).
"""

from aligners.lattices import linear_chain, semimarkov
from aligners.lattices._core import sample_categorical
from aligners.lattices.alignment_hmm import (
    AlignmentHMMPosteriors,
    AlignmentHMMViterbi,
    alignment_hmm_posteriors,
    alignment_hmm_viterbi,
)
from aligners.lattices.distributions import LinearChainCRF, SemiMarkovCRF, StructDistribution
from aligners.lattices.factored_semimarkov import factored_log_partition, factored_viterbi
from aligners.lattices.hmm import (
    HMMPosteriors,
    hmm_log_likelihood,
    hmm_posteriors,
    hmm_sample,
    hmm_viterbi,
)
from aligners.lattices.hsmm import (
    HSMMPosteriors,
    HSMMSamples,
    HSMMViterbi,
    hsmm_log_likelihood,
    hsmm_posteriors,
    hsmm_sample,
    hsmm_viterbi,
)
from aligners.lattices.linear_chain import LinearChain
from aligners.lattices.semimarkov import SemiMarkov

__all__ = [
    "AlignmentHMMPosteriors",
    "AlignmentHMMViterbi",
    "HMMPosteriors",
    "HSMMPosteriors",
    "HSMMSamples",
    "HSMMViterbi",
    "LinearChain",
    "LinearChainCRF",
    "SemiMarkov",
    "SemiMarkovCRF",
    "StructDistribution",
    "alignment_hmm_posteriors",
    "alignment_hmm_viterbi",
    "factored_log_partition",
    "factored_viterbi",
    "hmm_log_likelihood",
    "hmm_posteriors",
    "hmm_sample",
    "hmm_viterbi",
    "hsmm_log_likelihood",
    "hsmm_posteriors",
    "hsmm_sample",
    "hsmm_viterbi",
    "linear_chain",
    "sample_categorical",
    "semimarkov",
]
