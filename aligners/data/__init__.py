"""Readers, writers, the one bitext path and the dataset registry.

Light entry points are re-exported here (no torch import). The bitext path -- vocabulary
(`aligners.data.vocab.WordIds`), length bucketing, pair-id index and disk cache
(`aligners.data.bitext`, which needs torch) -- and the registry (`aligners.data.datasets`)
are imported from their modules.
"""

from aligners.data.gold import read_alignment_file, read_naacl, write_naacl
from aligners.data.parallel import read_parallel, write_parallel
from aligners.data.paths import data_root, dataset_dir
from aligners.data.pharaoh import format_pharaoh, parse_pharaoh_line, read_pharaoh, write_pharaoh
from aligners.data.types import AlignedPair, Alignment, Link

# padded source x target cells per batch of the bitext path (`aligners.data.bitext`); kept
# here, free of torch, so that the CLI's argument parser can show it
DEFAULT_CELLS = 1_000_000

__all__ = [
    "DEFAULT_CELLS",
    "AlignedPair",
    "Alignment",
    "Link",
    "data_root",
    "dataset_dir",
    "format_pharaoh",
    "parse_pharaoh_line",
    "read_alignment_file",
    "read_naacl",
    "read_parallel",
    "read_pharaoh",
    "write_naacl",
    "write_parallel",
    "write_pharaoh",
]
