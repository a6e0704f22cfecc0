"""The LCLR task table and the LCLR model folder.

`TASKS` maps a task name to its `LatentTask` class; every task builds an input from two
strings with `task.instance(text1, text2)`. `save_lclr` / `load_lclr` write and read the
`kind="lclr"` model folder of `aligners.export` (weights as float64 tensors, the feature
names as `features.json`); `aligners.load(path)` returns a ready `LatentClassifier`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import torch

from aligners.errors import AlignersInputError
from aligners.export import ModelFolder, write_model
from aligners.models.lclr import FAMILY
from aligners.models.lclr.model import FeatureIndex, LatentClassifier, LatentTask

__all__ = ["TASKS", "make_task", "save_lclr", "load_lclr"]

TASKS: dict[str, str] = {
    "transliteration": "aligners.models.lclr.transliteration:TransliterationTask",
    "paraphrase": "aligners.models.lclr.paraphrase:ParaphraseTask",
    "entailment": "aligners.models.lclr.paraphrase:EntailmentTask",
}


def make_task(name: str, *, features: FeatureIndex | None = None, **config) -> LatentTask:
    """A fresh task `name` (sharing `features` when given) configured by `config`."""
    if name not in TASKS:
        raise AlignersInputError(f"unknown LCLR task {name!r}; choose one of {sorted(TASKS)}")
    module, _, cls = TASKS[name].partition(":")
    return getattr(importlib.import_module(module), cls)(features, **config)


def save_lclr(folder: str | Path, clf: LatentClassifier, *, system: str,
              meta: dict | None = None) -> Path:
    """Write `clf` (system = "lclr" or "two_stage") as an `aligners.export` model folder."""
    task = clf.task
    tensors = {"weights": torch.from_numpy(np.asarray(clf.weights, np.float64))}
    if clf.align_weights is not None:
        tensors["align_weights"] = torch.from_numpy(np.asarray(clf.align_weights, np.float64))
    config = {"task": task.name, "system": system, "task_config": task.config(),
              "meta": meta or {}}
    return write_model(folder, kind=FAMILY.kind, tensors=tensors, config=config,
                       extras={"features": task.features.names})


def load_lclr(folder: ModelFolder) -> LatentClassifier:
    """The lclr family's `aligners.load` loader: a ready classifier (the feature index is
    frozen)."""
    names = folder.json("features")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise AlignersInputError("features.json must be a list of feature names",
                                 path=str(folder.path))
    features = FeatureIndex(names)
    features.growing = False
    cfg = folder.config
    task = make_task(str(cfg.get("task")), features=features, **dict(cfg.get("task_config", {})))
    w = folder.tensor("weights").double().numpy()
    if w.shape != (len(names),):
        raise AlignersInputError(f"weights have shape {tuple(w.shape)}, expected "
                                 f"({len(names)},)", path=str(folder.path))
    align = folder.tensors.get("align_weights")
    return LatentClassifier(task, w, None if align is None else align.double().numpy())
