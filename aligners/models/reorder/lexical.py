"""Lexicalized reordering: relative frequencies per phrase pair with Moses-style smoothing.

p(o | f, e) = (count(f, e, o) + s_o) / (sum_o' count(f, e, o') + sum_o' s_o'),
s_o = sigma * (N_o + 0.1) / N (Moses `lexical-reordering-score` with smoothing by the class
counts N_o of the training data; sigma = 0.5 by default). An unseen phrase pair therefore
gets the (smoothed) class prior. Phrase pairs are held as 64-bit keys
(`aligners.features.reorder.phrase_key`), so the table costs 8 + 4K bytes per pair.
"""

from collections.abc import Iterable

import numpy as np
import torch

from aligners.errors import AlignersInputError
from aligners.models.reorder._common import Saved
from aligners.models.reorder.config import LexicalConfig

__all__ = ["LexicalReordering"]


class LexicalReordering(Saved):
    """Relative-frequency orientation table. U unique phrase pairs, K classes."""

    KIND = "reorder-lexical"
    HPARAMS = {"num_classes": int, "smoothing": float}
    FLOAT32 = ("counts",)

    def __init__(self, *, num_classes: int = 3, smoothing: float = LexicalConfig.smoothing):
        self.num_classes = num_classes
        self.smoothing = smoothing
        self.keys = np.zeros(0, dtype=np.int64)  # (U,) sorted
        self.counts = np.zeros((0, num_classes), dtype=np.float64)  # (U, K)
        self.class_counts = np.zeros(num_classes, dtype=np.float64)  # (K,)

    def fit(self, keys: np.ndarray, labels: np.ndarray) -> "LexicalReordering":
        """Count (E,) phrase keys with (E,) class ids. Cost O(E log E)."""
        keys = np.asarray(keys, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        if keys.shape != labels.shape:
            raise AlignersInputError("keys and labels differ in length")
        uniq, inverse = np.unique(keys, return_inverse=True)
        counts = np.zeros((len(uniq), self.num_classes), dtype=np.float64)
        np.add.at(counts, (inverse, labels), 1.0)
        self.keys, self.counts = uniq, counts
        self.class_counts = np.bincount(labels, minlength=self.num_classes).astype(np.float64)
        return self

    def smoothing_vector(self) -> np.ndarray:
        """(K,) s_o = sigma * (N_o + 0.1) / N."""
        total = max(self.class_counts.sum(), 1.0)
        return self.smoothing * (self.class_counts + 0.1) / total

    def predict_log_proba(self, keys: np.ndarray) -> torch.Tensor:
        """(E,) keys -> (E, K) log p(o | pair); unseen pairs get the smoothed prior."""
        keys = np.asarray(keys, dtype=np.int64)
        s = self.smoothing_vector()
        out = np.tile(s / s.sum(), (len(keys), 1))
        if len(self.keys):
            pos = np.searchsorted(self.keys, keys).clip(max=len(self.keys) - 1)
            hit = self.keys[pos] == keys
            num = self.counts[pos[hit]] + s
            out[hit] = num / num.sum(axis=1, keepdims=True)
        return torch.from_numpy(np.log(out))

    def write_moses_table(self, out, phrases: Iterable[tuple[str, str, int]]) -> int:
        """Write `src ||| tgt ||| p_mono p_swap p_other` once per known pair to the text
        handle `out`; return lines.

        `phrases` streams `(src phrase, tgt phrase, key)` (e.g. a second pass over the
        training extract); the first occurrence of each known key is written. This is the
        table format of Moses' `wbe-msd-backward-fe` models.
        """
        num = self.counts + self.smoothing_vector()
        probs = num / num.sum(axis=1, keepdims=True)  # (U, K) of every known phrase pair
        written = np.zeros(len(self.keys), dtype=bool)
        for src, tgt, key in phrases:
            pos = int(np.searchsorted(self.keys, key))
            if pos >= len(self.keys) or self.keys[pos] != key or written[pos]:
                continue
            written[pos] = True
            out.write(f"{src} ||| {tgt} ||| {' '.join(f'{p:.6f}' for p in probs[pos])}\n")
        return int(written.sum())

    def state(self) -> dict[str, torch.Tensor]:
        return {"keys": torch.from_numpy(self.keys), "counts": torch.from_numpy(self.counts),
                "class_counts": torch.from_numpy(self.class_counts)}

    def set_state(self, state: dict[str, torch.Tensor], path: str | None = None) -> None:
        self.keys = state["keys"].numpy().astype(np.int64)
        self.counts = state["counts"].numpy().astype(np.float64)
        self.class_counts = state["class_counts"].numpy().astype(np.float64)
        if self.counts.shape != (len(self.keys), self.num_classes):
            raise AlignersInputError("counts do not match keys", path=path)
