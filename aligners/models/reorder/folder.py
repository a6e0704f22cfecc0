"""The reorder family's model folder: what it records of the training data (`meta`), its
atomic write (`save`: the model's own export, `_common.Saved.save`; an unwritable folder is
one AlignersInputError line) and its reading (`load_folder`, the family's `aligners.load`
loader: a folder of any reordering kind -> a ready `Reorderer`). `aligners reorder train`
and the reorder task save through here.
"""

from __future__ import annotations

from aligners.errors import AlignersInputError
from aligners.models.reorder.lexical import LexicalReordering
from aligners.models.reorder.reorderer import Reorderer
from aligners.models.reorder.train import NAMES

__all__ = ["CLASSES", "meta", "save", "load_folder"]

# export kind -> model class
CLASSES = {cls.KIND: cls for cls in NAMES.values()}


def meta(*, max_length: int, orientation: str, direction: str, lowercase: bool,
         min_count: int | None = None, context: bool = True) -> dict:
    """What a model folder records of its training data: the extraction settings and (with
    `min_count`) the feature settings, as `load_folder` reads them."""
    out = {"extract": {"max_length": int(max_length), "orientation": str(orientation),
                       "direction": str(direction), "lowercase": bool(lowercase)}}
    if min_count is not None:
        out["features"] = {"min_count": int(min_count), "context": bool(context)}
    return out


def save(model, out, **kw) -> None:
    """`model.save(out, **kw)` (atomic: never a partial folder); an OSError is one
    AlignersInputError naming the folder."""
    try:
        model.save(out, **kw)
    except OSError as err:
        raise AlignersInputError(f"cannot write the model folder: {err.strerror or err}",
                                 path=str(out)) from None


def load_folder(folder) -> Reorderer:
    """The reorder family's `aligners.load` loader: an `export.ModelFolder` of any reordering
    kind (the family's kinds) -> a `Reorderer`."""
    cls = CLASSES[folder.kind]
    model = cls.load(folder)
    cfg = folder.config
    extract = cfg.get("extract") or {}
    feats = cfg.get("features") or {}
    if not isinstance(extract, dict) or not isinstance(feats, dict):
        raise AlignersInputError("config.json: 'extract'/'features' must be objects",
                                 path=str(folder.path))
    features = None if cls is LexicalReordering else folder.json("features")
    return Reorderer(model, extract=extract, features=features,
                     context=bool(feats.get("context", True)))
