"""The one decoding chooser of every word family's task: a grid search of (method,
threshold, heuristic) by AER on a tuning split (never a test split), and the one scorer of
an aligned text's Pharaoh lines.

`grid` = {"methods": [...], "thresholds": [...], "heuristics": [...]} (the `tune_grid` of a
model config). Viterbi takes no threshold (one candidate, `viterbi_threshold`) and a
symmetric method (`SYMMETRIC`: agreement, mean) no heuristic ("none"). Each candidate is
decoded by the family's own `Aligned.lines` (the lines `aligners align` writes) and
scored against the gold links. Ties keep the first candidate in grid order.
"""

from __future__ import annotations

from typing import Any

from aligners.metrics import evaluate_alignments
from aligners.models.aligned import SYMMETRIC, Aligned, Decoding, parse_line

__all__ = ["sym_lines", "score", "choose_decoding"]


def sym_lines(aligned: Aligned, decoding: Decoding) -> list[str]:
    """The "sym" Pharaoh lines of `aligned` under `decoding` (what `aligners align` writes)."""
    return list(aligned.lines(("sym",), decoding)["sym"])


def score(gold: list, lines) -> Any:
    """The micro scores (precision, recall, aer, f1) of Pharaoh `lines` against `gold`
    (AlignedPairs, one per line)."""
    links = [parse_line(x)[0] for x in lines]
    return evaluate_alignments([p.alignment for p in gold], links, breakdowns=False).micro


def choose_decoding(aligned: Aligned, gold: list, grid: dict, methods, *,
                    viterbi_threshold: float = 0.5) -> tuple[dict, float]:
    """({"method", "threshold", "symmetrize"} with the lowest AER of `aligned` (a tuning
    split's text) against `gold`, that AER); each candidate checked against the family's
    `methods`. Cost: one `lines` call and one scoring per candidate."""
    best = None
    for method in grid["methods"]:
        thresholds = [viterbi_threshold] if method == "viterbi" else list(grid["thresholds"])
        heuristics = ["none"] if method in SYMMETRIC else list(grid["heuristics"])
        for th, h in ((th, h) for th in thresholds for h in heuristics):
            aer = score(gold, sym_lines(aligned, Decoding(method, th, h).check(methods))).aer
            if best is None or aer < best[0] - 1e-12:
                best = (aer, {"method": method, "threshold": th, "symmetrize": h})
    if best is None:
        raise ValueError("tune_grid has no candidate decoding (empty methods or thresholds)")
    return best[1], best[0]
