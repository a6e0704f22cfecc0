"""The RTE-5 reader now lives in `aligners.data.labeled` (`read_rte5`); this name stays
importable for `aligners.data.datasets` and the LCLR tests."""

from aligners.data.labeled import read_rte5

__all__ = ["read_rte5"]
