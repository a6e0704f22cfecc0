"""Monolingual aligners (Yao et al. 2013): token CRF and semi-Markov phrasal CRF.

- `states`: the phrasal model's dense target-state ids;
- `potentials`: featurised pairs, padded batches, the shared parameters and log-potentials;
- `semicrf`: `PhraseCRFAligner` (factored semi-Markov lattice);
- `crf`: `TokenCRFAligner` (linear-chain lattice);
- `neural`: `NeuralCRFAligner` (the phrasal lattice + encoder span-pair scores, Lan et al. 2021;
  its MiniLM encoder needs `transformers`, the `neural` extra);
- `aligner`: `MonoAligner`, the ready aligner (featurise, decode, save, `aligners.load`).
No Lightning here: `aligners.training.monolingual` trains these modules.
"""

from aligners.models.mono.aligner import MonoAligner, build_model, featurise, load_mono, predict
from aligners.models.mono.crf import TokenCRFAligner
from aligners.models.mono.semicrf import PhraseCRFAligner

__all__ = ["MonoAligner", "PhraseCRFAligner", "TokenCRFAligner", "build_model", "featurise",
           "load_mono", "predict"]
