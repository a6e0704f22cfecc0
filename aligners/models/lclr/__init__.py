"""The lclr family: learning over constrained latent representations (Chang et al. 2010),
its tasks (`transliteration`, `paraphrase`: variables, constraints and feature maps) and its
model folder (`folder`: `save_lclr` / `load_lclr`, kind "lclr"). Heavy names are imported on
first use."""

from aligners.families import Family, lazy_names

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

__getattr__ = lazy_names(__name__, {"TASKS": "folder", "make_task": "folder",
    "save_lclr": "folder", "load_lclr": "folder"})
