"""The word HMM family: the E-steps of one direction, IBM Model 1 and the Och-Ney HMM
(`directional`), their joint two-direction training by agreement with the sparse lexical
M-step (`agreement.WordAligner`), its defaults and CLI options (`config`) and its aligned
model and folder (`folder`: `aligners.load(folder)` -> a ready `TrainedWordAligner`).
No Lightning in here; the data path is `aligners.data.bitext`.
"""

from aligners.families import Family

__all__ = ["FAMILY"]

FAMILY = Family(
    name="hmm",
    summary="IBM1 -> HMM, both directions trained jointly by agreement",
    paper="Liang, Taskar & Klein 2006",
    verb="align",
    config="aligners.models.hmm.config:WordAlignConfig",
    model="aligners.models.hmm.folder:TrainedWordAligner",
    read_kinds=("word-aligner",),  # folders written before the one-name records
    order=1,
)
