"""aligners: alignment and reordering models as batched semiring dynamic programs.

    import aligners
    aligners.families()                          # the model families, one record each
    aligners.align(src_lines, tgt_lines)         # train a word aligner, get its links
    model = aligners.load("model/")              # any saved model, ready to use
    model.align(src_lines, tgt_lines)            # word and monolingual aligners alike
"""

from aligners.families import lazy_names

__all__ = ["__version__", "load", "families", "align"]
__version__ = "0.1.0"

# the public API, imported lazily so that `import aligners` stays cheap
__getattr__ = lazy_names("aligners", {"load": "export", "families": "families",
                                      "align": "models.aligned"})
