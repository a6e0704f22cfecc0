"""Training curves as pictures beside a run's `metrics.json`.

`plot_training_curves(run_dir)`: one PNG per `metrics.csv` of Lightning's CSVLogger under
`run_dir` (`training.png`, or `training-<version>.png` for several), one panel per quantity
logged at least twice against its epoch (or step). `plot_reorder`: the reorder task's
figures. matplotlib Agg. Cost: O(rows) per file.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

__all__ = ["read_curves", "plot_training_curves", "plot_reorder"]

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


def plot_reorder(results: dict, out_dir: Path) -> None:
    """The reorder task's figures from its results: the dual MLR's active set per iteration
    (`reorder_active_set.png`) and naive Bayes' error against MI feature reduction
    (`reorder_nb_feature_reduction.png`), each when the run has it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    duals = {k: v for k, v in results.get("models", {}).items() if k.startswith("dual_eps")}
    if duals:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for rec in duals.values():
            fr = [100 * h["active_fraction"] for h in rec["history"]]
            ax.plot(range(1, len(fr) + 1), fr, marker="o", ms=3, label=f"eps = {rec['eps']}")
        ax.set_xlabel("training iteration")
        ax.set_ylabel("% active phrase pairs")
        ax.set_title("Dual MLR shrinking (EMNLP Fig. 1)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "reorder_active_set.png", dpi=120)
        plt.close(fig)
    curve = results.get("mi_curve")
    if curve:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        fr = [100 * r["fraction_removed"] for r in curve]
        for key in [k for k in curve[0] if k.startswith("error_")]:
            ax.plot(fr, [100 * r[key] for r in curve], marker="o", ms=3,
                    label=f"naive Bayes {key[6:]}")
        if "lexical" in results.get("models", {}):
            ax.axhline(100 * results["models"]["lexical"]["heldout_error"], ls="--", c="gray",
                       label="lexicalized")
        if "data" in results:
            ax.axhline(100 * results["data"]["majority_error"], ls=":", c="k",
                       label="majority class")
        ax.set_xlabel("% of features removed (lowest MI first)")
        ax.set_ylabel("held-out error (%)")
        ax.set_title("Naive Bayes vs MI feature reduction (WMT Fig. 2)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "reorder_nb_feature_reduction.png", dpi=120)
        plt.close(fig)
