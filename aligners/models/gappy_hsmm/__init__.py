"""The gappy-hsmm family: phrasal and gappy hidden semi-Markov word aligner by agreement
(Bansal et al. 2011). Heavy names (torch) are imported on first use."""

import importlib

from aligners.families import Family

__all__ = [
    "FAMILY",
    "Layout",
    "PhraseList",
    "PhrasalAligner",
    "PhrasalConfig",
    "build_phrasal_aligner",
    "make_layout",
]

FAMILY = Family(
    name="gappy-hsmm",
    summary="phrasal + gappy hidden semi-Markov model by agreement, on a word HMM start",
    paper="Bansal, Quirk & Moore 2011",
    verb="align",
    config="aligners.models.gappy_hsmm.config:GappyHSMMConfig",
    model="aligners.models.gappy_hsmm.io:PhrasalBundle",
    read_kinds=("phrasal-hsmm",),  # folders written before the one-name records
    order=2,
)

_LAZY = {"build_phrasal_aligner": "init", "Layout": "model", "PhrasalAligner": "model",
         "make_layout": "model", "PhrasalConfig": "config", "PhraseList": "phrase_lists"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
