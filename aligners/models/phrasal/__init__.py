"""Phrasal and gappy hidden semi-Markov word aligner by agreement (Bansal et al. 2011)."""

from aligners.models.phrasal.init import build_phrasal_aligner
from aligners.models.phrasal.model import Layout, PhrasalAligner, PhrasalConfig, make_layout
from aligners.models.phrasal.phrase_lists import PhraseList

__all__ = [
    "Layout",
    "PhraseList",
    "PhrasalAligner",
    "PhrasalConfig",
    "build_phrasal_aligner",
    "make_layout",
]
