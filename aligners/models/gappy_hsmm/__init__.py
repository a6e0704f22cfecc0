"""The gappy-hsmm family: phrasal and gappy hidden semi-Markov word aligner by agreement
(Bansal et al. 2011). Heavy names (torch) are imported on first use."""

from aligners.families import Family, lazy_names

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
    model="aligners.models.gappy_hsmm.folder:PhrasalBundle",
    read_kinds=("phrasal-hsmm",),  # folders written before the one-name records
    order=2,
)

__getattr__ = lazy_names(__name__, {"build_phrasal_aligner": "init", "Layout": "layout",
    "PhrasalAligner": "model", "make_layout": "layout", "PhrasalConfig": "config",
    "PhraseList": "phrase_lists"})
