"""aligners: alignment and reordering models as batched semiring dynamic programs.

    import aligners
    aligners.families()                          # the model families, one record each
    aligners.align(src_lines, tgt_lines)         # train a word aligner, get its links
    model = aligners.load("model/")              # any saved model, ready to use
    model.align(src_lines, tgt_lines)            # word and monolingual aligners alike
"""

__all__ = ["__version__", "load", "families", "align"]
__version__ = "0.1.0"

_LAZY = {"load": "aligners.export", "families": "aligners.families",
         "align": "aligners.models.aligned"}


def __getattr__(name: str):
    """The public API, imported lazily so that `import aligners` stays cheap."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aligners' has no attribute {name!r}")
