"""See DESIGN.md for what lives here."""

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

__all__ = [
    "HMMPosteriors",
    "HSMMPosteriors",
    "HSMMSamples",
    "HSMMViterbi",
    "hmm_log_likelihood",
    "hmm_posteriors",
    "hmm_sample",
    "hmm_viterbi",
    "hsmm_log_likelihood",
    "hsmm_posteriors",
    "hsmm_sample",
    "hsmm_viterbi",
]
