"""aligners: alignment and reordering models as batched semiring dynamic programs."""

__all__ = ["__version__", "load"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """`aligners.load(path)`, imported lazily so that `import aligners` stays cheap."""
    if name == "load":
        from aligners.export import load

        return load
    raise AttributeError(f"module 'aligners' has no attribute {name!r}")
