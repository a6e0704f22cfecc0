"""Readers, writers, vocabularies, batching and the dataset registry."""

from aligners.data.paths import data_root, dataset_dir
from aligners.data.types import AlignedPair, Alignment, Link

__all__ = ["AlignedPair", "Alignment", "Link", "data_root", "dataset_dir"]
