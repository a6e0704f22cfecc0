"""Training curves as pictures: what a run's logger wrote per iteration, drawn beside its
`metrics.json`.

`plot_training_curves(run_dir)` reads every `metrics.csv` that Lightning's CSVLogger wrote
under `run_dir` (the EM log-likelihoods of the word and phrasal tasks, the training losses of
the monolingual and reordering tasks, ...) and draws one PNG per CSV: one panel per logged
quantity against its epoch (or step), e.g. `<run>/training.png` (`training-<version>.png`
when a run logged several versions, one per model). A quantity logged fewer than twice
(a final score) is not a curve and is left out. matplotlib's Agg backend; no screen needed.
Cost: O(rows) per file.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

__all__ = ["read_curves", "plot_training_curves"]

_AXES = ("epoch", "step")


def read_curves(path: str | Path) -> tuple[str, dict[str, tuple[list[float], list[float]]]]:
    """(x axis name, {quantity: (xs, ys)}) of one CSVLogger `metrics.csv`: for each column
    other than epoch/step, its finite values with their epoch (else step); only quantities
    with two or more points."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        return "epoch", {}
    axis = next((a for a in _AXES if a in rows[0]), None)
    out: dict[str, tuple[list[float], list[float]]] = {}
    for name in rows[0]:
        if name in _AXES:
            continue
        xs, ys = [], []
        for k, row in enumerate(rows):
            try:
                y = float(row[name])
                x = float(row[axis]) if axis else float(k)
            except (TypeError, ValueError):
                continue  # empty cell: logged at another step
            if math.isfinite(y) and math.isfinite(x):
                xs.append(x)
                ys.append(y)
        if len(ys) >= 2:
            out[name] = (xs, ys)
    return axis or "row", out


def plot_training_curves(run_dir: str | Path) -> list[Path]:
    """Draw the curves of every `metrics.csv` under `run_dir`; returns the PNGs written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = Path(run_dir)
    files = sorted(run.rglob("metrics.csv"))
    written = []
    for f in files:
        axis, curves = read_curves(f)
        if not curves:
            continue
        name = "training.png" if len(files) == 1 else f"training-{f.parent.name}.png"
        n = len(curves)
        fig, axes = plt.subplots(n, 1, figsize=(6, 2.2 * n), squeeze=False)
        for ax, (label, (xs, ys)) in zip(axes[:, 0], sorted(curves.items())):
            ax.plot(xs, ys, marker="o", markersize=3)
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        axes[-1, 0].set_xlabel(axis)
        fig.suptitle(f"{run.name}: {f.relative_to(run).parent}")
        fig.tight_layout()
        fig.savefig(run / name, dpi=100)
        plt.close(fig)
        written.append(run / name)
    return written
