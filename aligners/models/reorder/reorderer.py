"""A ready reorderer: a trained classifier plus the extraction and features it was trained on.

`aligners.load(folder)` returns a `Reorderer` for every reordering kind (the family's
loader, `folder.load_folder`). `predict_corpus` streams `(src, tgt, links)` triples, extracts the
phrase pairs as in training and returns their orientation log-probabilities: the one
prediction path of `aligners reorder predict` and of the reorder task's `evaluate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from aligners.errors import AlignersInputError
from aligners.models.reorder.lexical import LexicalReordering

__all__ = ["Reorderer"]

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
            from aligners.features.reorder import ReorderFeaturizer

            if features is None:
                raise AlignersInputError("a featurised reordering model needs features.json")
            self.featurizer, codes = ReorderFeaturizer.from_described(features, context=context)
            self._order = np.argsort(codes, kind="stable")
            self._back = np.argsort(self._order)  # sorted-code column -> the model's column
            self.codes = codes[self._order]

    def predict_corpus(self, triples: Iterable[tuple[Sequence[str], Sequence[str], list]]):
        """`(log_p (E, K), labels (E,))` of every phrase pair of `triples` (extracted with the
        training settings; labels are the extracted orientations). Memory O(triples)."""
        from aligners.features.reorder import (
            ReorderFeaturizer,
            collect_examples,
            csr_to_torch,
            to_csr,
        )

        kw = {"max_length": self.max_length, "mode": self.mode, "direction": self.direction}
        if self.featurizer is None:
            raw = collect_examples(triples, ReorderFeaturizer(), **kw)
            return self.model.predict_log_proba(raw.keys), raw.labels
        raw = collect_examples(triples, self.featurizer, grow=False, **kw)
        X = to_csr(raw, np.arange(len(raw)), self.codes)[:, self._back].tocsr()
        return self.model.predict_log_proba(csr_to_torch(X)), raw.labels
