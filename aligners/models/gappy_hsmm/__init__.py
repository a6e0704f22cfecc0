"""The gappy-hsmm family: phrasal and gappy hidden semi-Markov word aligner by agreement
(Bansal et al. 2011): its record (nothing heavy is imported here)."""

from aligners.families import Family

__all__ = ["FAMILY"]

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
