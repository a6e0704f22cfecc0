"""aligners: alignment and reordering models as batched semiring dynamic programs."""

__all__ = ["__version__"]
__version__ = "0.1.0"
