"""See DESIGN.md for what lives here."""

from aligners.lattices.hmm import (
    HMMPosteriors,
    hmm_log_likelihood,
    hmm_posteriors,
    hmm_sample,
    hmm_viterbi,
)

__all__ = [
    "HMMPosteriors",
    "hmm_log_likelihood",
    "hmm_posteriors",
    "hmm_sample",
    "hmm_viterbi",
]
