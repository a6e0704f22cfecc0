"""Reader of the RWTH German-English Europarl gold alignments (Vilar et al. 2006; 508 pairs).

`test.de-en`: `German ||| English` lines; `deen.talp`: 1-based links, German first, `i-j`
sure and `ipj` possible. German is the source. Pairs get their 1-based line number as id.
"""

from __future__ import annotations

from pathlib import Path

from aligners.data import gold
from aligners.data.parallel import read_parallel
from aligners.data.types import AlignedPair

__all__ = ["load_rwth_deen"]


def load_rwth_deen(d: Path, split: str, lenient: bool) -> list[AlignedPair]:
    """The 508 test pairs with 0-based (German, English) links. Cost O(file size)."""
    texts = list(read_parallel(d / "test.de-en"))
    als = gold.read_onebased(d / "deen.talp", lenient=lenient,
                             src_lengths=[len(s) for s, _ in texts],
                             tgt_lengths=[len(t) for _, t in texts])
    return [AlignedPair(tuple(s), tuple(t), al, str(n))
            for n, ((s, t), al) in enumerate(zip(texts, als, strict=True), start=1)]
