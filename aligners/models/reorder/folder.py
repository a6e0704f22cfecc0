"""The reorder family's models by name and their folders: `build` (an untrained model of
`NAMES`, which `aligners reorder train` and the reorder task's `LitReorderer` train with
`_common.Fitting`), what a folder records of the training data (`meta`; the model's own
`save` writes it), its reading (`load_folder`, the family's `aligners.load` loader: a folder
of any reordering kind -> a ready `Reorderer`) and `Reorderer`, a trained classifier plus
the extraction and features it was trained on, whose `predict_corpus` is the one prediction
path of `aligners reorder predict` and of the reorder task's `evaluate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from aligners.errors import AlignersInputError
from aligners.features.reorder import ReorderFeaturizer, collect_examples, csr_to_torch, to_csr
from aligners.models.reorder._common import settings
from aligners.models.reorder.dual_mlr import DualMLR
from aligners.models.reorder.lexical import LexicalReordering
from aligners.models.reorder.mlr import PrimalMLR
from aligners.models.reorder.naive_bayes import NaiveBayes

__all__ = ["NAMES", "CLASSES", "build", "Reorderer", "meta", "load_folder"]

NAMES = {"lexical": LexicalReordering, "naive_bayes": NaiveBayes, "primal": PrimalMLR,
         "dual": DualMLR}
CLASSES = {cls.KIND: cls for cls in NAMES.values()}  # export kind -> model class


def build(name: str, *, num_features: int = 0, num_classes: int = 3, **hp):
    """The untrained model `name` (one of `NAMES`) with the settings `hp` (`settings`) that
    its class declares (`HPARAMS`)."""
    if name not in NAMES:
        raise AlignersInputError(f"reordering model {name!r}; expected one of {sorted(NAMES)}")
    cls = NAMES[name]
    s = {**settings(**hp), "num_features": num_features, "num_classes": num_classes}
    return cls(**{k: s[k] for k in cls.HPARAMS})


class Reorderer:
    """`model` (one of CLASSES) + `extract` settings (max_length, orientation, direction,
    lowercase) + the frozen featurizer of a featurised model (None for the lexical table)."""

    def __init__(self, model, *, extract: dict, features: list | None = None,
                 context: bool = True):
        self.model = model
        self.kind = model.KIND
        self.max_length = int(extract.get("max_length", 7))
        self.mode = str(extract.get("orientation", extract.get("mode", "wbe")))
        self.direction = str(extract.get("direction", "backward"))
        self.lowercase = bool(extract.get("lowercase", False))
        self.featurizer = self.codes = None
        if self.kind != LexicalReordering.KIND:
            if features is None:
                raise AlignersInputError("a featurised reordering model needs features.json")
            self.featurizer, codes = ReorderFeaturizer.from_described(features, context=context)
            order = np.argsort(codes, kind="stable")
            self._back = np.argsort(order)  # sorted-code column -> the model's column
            self.codes = codes[order]

    def predict_corpus(self, triples: Iterable[tuple[Sequence[str], Sequence[str], list]]):
        """`(log_p (E, K), labels (E,))` of every phrase pair of `triples` (extracted with the
        training settings; labels are the extracted orientations). Memory O(triples)."""
        kw = {"max_length": self.max_length, "mode": self.mode, "direction": self.direction}
        if self.featurizer is None:
            raw = collect_examples(triples, ReorderFeaturizer(), **kw)
            return self.model.predict_log_proba(raw.keys), raw.labels
        raw = collect_examples(triples, self.featurizer, grow=False, **kw)
        X = to_csr(raw, np.arange(len(raw)), self.codes)[:, self._back].tocsr()
        return self.model.predict_log_proba(csr_to_torch(X)), raw.labels


def meta(*, max_length: int, orientation: str, direction: str, lowercase: bool,
         min_count: int | None = None, context: bool = True) -> dict:
    """What a model folder records of its training data: the extraction settings and (with
    `min_count`) the feature settings, as `load_folder` reads them."""
    out = {"extract": {"max_length": int(max_length), "orientation": str(orientation),
                       "direction": str(direction), "lowercase": bool(lowercase)}}
    if min_count is not None:
        out["features"] = {"min_count": int(min_count), "context": bool(context)}
    return out


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
