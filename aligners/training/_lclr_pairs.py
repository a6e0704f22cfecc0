"""LCLR runners for sentence-pair tasks (paraphrase on MSRP, entailment on RTE-5).

Both systems share the task's variables, constraints and features; the two-stage system
aligns with the fixed `HEURISTIC` weights, LCLR learns them (initialised from the two-stage
weights, as the paper). C: k-fold cross-validation of the two-stage system on the training
split only (LCLR reuses that C, or runs its own CV when `model.lclr_cv` is true). Parses are
cached as JSON lines under `model.parse_cache` (default `$ALIGNERS_CACHE/parses`).
Cost: one ILP per pair for the two-stage system; (#positives + rounds x #negatives) ILPs per
LCLR outer iteration.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from aligners.features.parse import default_cache_dir, merge_graphs, parse_all, split_sentences
from aligners.models.lclr import make_task, save_lclr
from aligners.models.lclr.config import lclr_settings
from aligners.models.lclr.model import fixed_structure_features, train_lclr, train_two_stage

__all__ = ["run_pairs", "load_pairs"]


def load_pairs(cfg: DictConfig, split: str, loader) -> tuple[list[tuple[str, str]], list[int]]:
    items = loader(cfg, split)
    d = lclr_settings(cfg)[1]
    limit = {d.train_split: d.train_limit, d.test_split: d.test_limit}.get(split)
    if limit:
        items = items[: int(limit)]
    return [(p.text1, p.text2) for p in items], [int(p.label) for p in items]


def _graphs(cfg, pairs, split, log, split_on: bool):
    """text -> graph for every text of `pairs`; paragraphs are parsed sentence by sentence
    when the task says so (entailment: RTE-5's texts)."""
    m, d = lclr_settings(cfg)
    cache_dir = m.parse_cache or (default_cache_dir() / "parses")
    texts = list(dict.fromkeys([a for a, _ in pairs] + [b for _, b in pairs]))
    parts = {t: (split_sentences(t) or [t]) if split_on else [t] for t in texts}
    flat = [s for t in texts for s in parts[t]]
    gs = parse_all(flat, cache=Path(cache_dir) / f"lg-{d.name}-{split}.jsonl", log=log)
    by = dict(zip(flat, gs, strict=True))
    return {t: merge_graphs([by[s] for s in parts[t]]) for t in texts}


def _accuracy(clf, insts, labels, timings=None) -> float:
    """Accuracy; `timings` gets (wall, CPU) seconds per scored pair."""
    right = 0
    for x, y in zip(insts, labels, strict=True):
        t0, c0 = time.perf_counter(), time.process_time()
        s = clf.score(x)
        if timings is not None:
            timings.append((time.perf_counter() - t0, time.process_time() - c0))
        right += int((s >= 0) == bool(y))
    return right / max(1, len(labels))


def _two_stage(task, insts, labels, C, m, seed, fixed):
    F = len(task.features)
    return train_two_stage(task, insts, labels, align_weights=task.heuristic_weights()[:F],
                           num_features=F, C=C, tol=float(m.dcd_tol), seed=seed, fixed=fixed)


def _cv(task, insts, labels, grid, folds, m, seed, system, log, fixed):
    """k-fold CV accuracy per C on the training split (the two-stage structures are fixed
    once: only the SVM depends on C)."""
    rng = np.random.default_rng(seed)
    fold = rng.permutation(len(insts)) % folds
    table = {}
    for C in grid:
        accs = []
        for f in range(folds):
            tr = [k for k in range(len(insts)) if fold[k] != f]
            te = [k for k in range(len(insts)) if fold[k] == f]
            sub = [insts[k] for k in tr]
            suby = [labels[k] for k in tr]
            clf = _two_stage(task, sub, suby, float(C), m, seed, [fixed[k] for k in tr])
            if system == "lclr":
                clf, _ = train_lclr(task, sub, suby, w0=clf.weights,
                                    num_features=len(task.features), C=float(C),
                                    tol=float(m.tol), max_outer=int(m.max_outer),
                                    max_cutting=int(m.max_cutting),
                                    dcd_tol=float(m.dcd_tol), seed=seed)
                accs.append(_accuracy(clf, [insts[k] for k in te], [labels[k] for k in te]))
            else:
                w = clf.weights
                right = [float(w[fixed[k][0]] @ fixed[k][1] >= 0) == labels[k] for k in te]
                accs.append(float(np.mean(right)))
        table[float(C)] = float(np.mean(accs))
        log(f"cv {system} C={C}: accuracy {table[float(C)]:.4f}")
    return max(table, key=table.get), table


def run_pairs(cfg: DictConfig, out: Path, loader, log=print) -> dict[str, dict[str, float]]:
    """Train/test both systems on `cfg.data` (train_split -> test_split); save; metrics."""
    m, d = lclr_settings(cfg)
    seed = int(cfg.seed)
    train_pairs, train_y = load_pairs(cfg, d.train_split, loader)
    test_pairs, test_y = load_pairs(cfg, d.test_split, loader)
    task = make_task(str(m.task), node_info=bool(m.node_info))
    graphs = _graphs(cfg, train_pairs, d.train_split, log, task.split_sentences)
    graphs.update(_graphs(cfg, test_pairs, d.test_split, log, task.split_sentences))
    task.graphs = graphs
    t0 = time.perf_counter()
    train = [task.instance(a, b) for a, b in train_pairs]
    task.heuristic_weights()  # the heuristic's feature names exist before freezing
    task.features.growing = False
    test = [task.instance(a, b) for a, b in test_pairs]
    feat_s = time.perf_counter() - t0
    log(f"{m.task}: {len(train)} train / {len(test)} test pairs, {len(task.features)} features "
        f"({feat_s:.0f} s)")
    grid = [float(c) for c in m.C_grid]
    t0 = time.perf_counter()
    fixed = fixed_structure_features(task, train, task.heuristic_weights())
    align_s = time.perf_counter() - t0
    cv = {}
    C_two = C_lclr = grid[0]
    if len(grid) > 1:
        C_two, cv["two_stage"] = _cv(task, train, train_y, grid, int(m.cv_folds), m, seed,
                                     "two_stage", log, fixed)
        C_lclr = C_two
        if m.lclr_cv:
            C_lclr, cv["lclr"] = _cv(task, train, train_y, grid, int(m.cv_folds), m, seed,
                                     "lclr", log, fixed)
    t0 = time.perf_counter()
    two = _two_stage(task, train, train_y, C_two, m, seed, fixed)
    two_s = time.perf_counter() - t0 + align_s
    t0, c0 = time.perf_counter(), time.process_time()
    w0 = two.weights if C_lclr == C_two else _two_stage(task, train, train_y, C_lclr, m,
                                                        seed, fixed).weights
    joint, hist = train_lclr(task, train, train_y, w0=w0, num_features=len(task.features),
                             C=C_lclr, tol=float(m.tol), max_outer=int(m.max_outer),
                             max_cutting=int(m.max_cutting), dcd_tol=float(m.dcd_tol),
                             seed=seed, log=log)
    lclr_s, lclr_cpu = time.perf_counter() - t0, time.process_time() - c0
    save_lclr(out / "two_stage", two, system="two_stage", meta={"C": C_two})
    save_lclr(out / "lclr", joint, system="lclr", meta={"C": C_lclr})
    timings: list[tuple[float, float]] = []
    metrics = {
        "test": {"two_stage_acc": _accuracy(two, test, test_y),
                 "lclr_acc": _accuracy(joint, test, test_y, timings),
                 "majority_acc": float(max(np.mean(test_y), 1 - np.mean(test_y)))},
        "train": {"two_stage_C": C_two, "lclr_C": C_lclr,
                  "lclr_outer_iterations": len(hist["objective"]) - 1,
                  "lclr_objective": hist["objective"][-1], "two_stage_seconds": two_s,
                  "lclr_seconds": lclr_s, "lclr_cpu_seconds": lclr_cpu,
                  "featurise_seconds": feat_s},
    }
    wall = np.array([t for t, _ in timings])
    cpu = np.array([c for _, c in timings])
    metrics["inference"] = {"pairs_per_s_wall": float(len(wall) / wall.sum()),
                            "pairs_per_s_cpu": float(len(cpu) / max(cpu.sum(), 1e-9)),
                            "ms_median": float(1e3 * np.median(wall)),
                            "ms_p90": float(1e3 * np.percentile(wall, 90)),
                            "ms_p99": float(1e3 * np.percentile(wall, 99)),
                            "ms_max": float(1e3 * wall.max()),
                            "cpu_ms_median": float(1e3 * np.median(cpu)),
                            "cpu_ms_p90": float(1e3 * np.percentile(cpu, 90)),
                            "variables_mean": float(np.mean([x.num_vars for x in test]))}
    for system, row in cv.items():
        for C, v in row.items():
            metrics.setdefault("cv", {})[f"{system}_acc_C{C:g}"] = v
    return metrics
