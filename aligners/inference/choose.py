"""The one decoding chooser: a grid search of (method, threshold, heuristic) by AER on a
tuning split (never a test split), shared by every word family's task.

`grid` = {"methods": [...], "thresholds": [...], "heuristics": [...]} (the `tune_grid` of a
model config). Viterbi takes no threshold (one candidate, `viterbi_threshold`) and a
symmetric method (`SYMMETRIC`: agreement, mean) no heuristic ("none").
`score(method, threshold, heuristics)` decodes once and returns the AER of each heuristic, so
a family decodes each (method, threshold) once. Ties keep the first candidate in grid order.
Cost: one decoding per (method, threshold) plus one scoring per candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aligners.models.aligned import SYMMETRIC

__all__ = ["choose_decoding"]


def choose_decoding(grid: dict, score: Callable[[str, float, list[str]], Sequence[float]], *,
                    viterbi_threshold: float = 0.5) -> tuple[dict, float]:
    """({"method", "threshold", "symmetrize"} with the lowest AER, that AER)."""
    best = None
    for method in grid["methods"]:
        thresholds = [viterbi_threshold] if method == "viterbi" else list(grid["thresholds"])
        heuristics = ["none"] if method in SYMMETRIC else list(grid["heuristics"])
        for th in thresholds:
            for h, aer in zip(heuristics, score(method, th, heuristics), strict=True):
                if best is None or aer < best[0] - 1e-12:
                    best = (aer, {"method": method, "threshold": th, "symmetrize": h})
    if best is None:
        raise ValueError("tune_grid has no candidate decoding (empty methods or thresholds)")
    return best[1], best[0]
