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
# the same on a GPU, where each batch costs a fixed ~2,000 kernel launches: fewer, larger
# batches (BENCHMARKS.md, "GPU: the one-command benchmark on an H100")
GPU_CELLS = 16_000_000


def default_cells(device: str) -> int:
    """The default batch budget on `device` ("cpu", "cuda", "cuda:1", ...)."""
    return DEFAULT_CELLS if str(device).split(":")[0] == "cpu" else GPU_CELLS


__all__ = [
    "DEFAULT_CELLS",
    "GPU_CELLS",
    "default_cells",
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
