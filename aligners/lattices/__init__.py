"""Lattices: potentials -> log_partition / marginals / argmax / sample; no parameters.

Chain lattices (torch-struct 0.5 conventions): ``linear_chain``, ``semimarkov`` and their
drop-in distributions ``LinearChainCRF``, ``SemiMarkovCRF``. Alignment lattices: ``hmm``,
``hsmm``, ``alignment_hmm``, ``factored_semimarkov`` (with ``jump_transition``),
``phrasal_hsmm``. Shapes: each module.
"""

from aligners.lattices import linear_chain, semimarkov
from aligners.lattices._core import sample_categorical
from aligners.lattices.alignment_hmm import alignment_hmm_posteriors, alignment_hmm_viterbi
from aligners.lattices.factored_semimarkov import factored_log_partition, factored_viterbi
from aligners.lattices.hmm import (
    hmm_log_likelihood,
    hmm_posteriors,
    hmm_sample,
    hmm_viterbi,
)
from aligners.lattices.hsmm import (
    hsmm_log_likelihood,
    hsmm_posteriors,
    hsmm_sample,
    hsmm_viterbi,
)
from aligners.lattices.linear_chain import LinearChain, LinearChainCRF
from aligners.lattices.semimarkov import SemiMarkov, SemiMarkovCRF

__all__ = [
    "LinearChain",
    "LinearChainCRF",
    "SemiMarkov",
    "SemiMarkovCRF",
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
