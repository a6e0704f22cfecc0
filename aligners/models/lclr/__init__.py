"""The lclr family: learning over constrained latent representations (Chang et al. 2010),
its tasks (`transliteration`, `paraphrase`: variables, constraints and feature maps) and its
model folder (`folder`: `save_lclr` / `load_lclr`, kind "lclr"). Heavy names are imported on
first use."""

import importlib

from aligners.families import Family

__all__ = ["FAMILY", "TASKS", "make_task", "save_lclr", "load_lclr"]

FAMILY = Family(
    name="lclr",
    summary="LCLR and the two-stage baseline over ILP-constrained latent alignments",
    paper="Chang et al. 2010",
    verb="classify",
    config="aligners.models.lclr.config:LCLRConfig",
    sections={"model": "aligners.models.lclr.config:LCLRConfig",
              "data": "aligners.models.lclr.config:LCLRData"},
    loader="aligners.models.lclr.folder:load_lclr",
    evaluates=False,  # `python evaluate.py` re-runs train-and-test; `classify` applies a model
)

_LAZY = {"TASKS": "folder", "make_task": "folder", "save_lclr": "folder", "load_lclr": "folder"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
