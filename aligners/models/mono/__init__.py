"""Monolingual aligners (Yao et al. 2013): token CRF and semi-Markov phrasal CRF.

- `config`: `MonoConfig`, the model settings' defaults and value rules (no torch);
- `states`: the phrasal model's dense target-state ids;
- `potentials`: featurised pairs, padded batches, the shared parameters and log-potentials;
- `semicrf`: `PhraseCRFAligner` (factored semi-Markov lattice);
- `crf`: `TokenCRFAligner` (linear-chain lattice);
- `neural`: `NeuralCRFAligner` (the phrasal lattice + encoder span-pair scores, Lan et al. 2021;
  its MiniLM encoder needs `transformers`, the `neural` extra);
- `aligner`: `MonoAligner`, the ready aligner (featurise, decode, save, `aligners.load`).
No Lightning here: `aligners.training.monolingual` trains these modules. The names below are
imported on first use, so that reading `config` (the CLI parser does) imports no torch.
"""

import importlib

__all__ = ["MonoAligner", "PhraseCRFAligner", "TokenCRFAligner", "build_model", "featurise",
           "load_mono", "predict"]

_LAZY = {"MonoAligner": "aligner", "build_model": "aligner", "featurise": "aligner",
         "load_mono": "aligner", "predict": "aligner", "TokenCRFAligner": "crf",
         "PhraseCRFAligner": "semicrf"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
