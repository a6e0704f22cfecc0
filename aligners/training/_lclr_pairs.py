"""LCLR runners for sentence-pair tasks (paraphrase on MSRP, entailment on RTE-5).

Both systems share the task's variables, constraints and features; the two-stage system
aligns with the fixed `HEURISTIC` weights, LCLR learns them (initialised from the two-stage
weights, as the paper). Protocol, per seed (`model.seeds` seeds from `cfg.seed`): C by
repeated k-fold cross-validation on the training split only (`cv_folds` folds x
`cv_repeats` seeded shuffles, held-out accuracy averaged; the two-stage system's CV, and
LCLR's own when `model.lclr_cv`, else LCLR reuses the two-stage C), both systems trained on
the whole training split, tested; the test figure is the mean ± sd over the seeds (printed
as a table; metrics.json keeps every seed's). Parses are cached as JSON lines under
`model.parse_cache` (default `$ALIGNERS_CACHE/parses`).
Cost: one ILP per pair for the two-stage structures (once for all seeds and C values);
(#positives + rounds x #negatives) ILPs per LCLR outer iteration, times
folds x repeats x |C_grid| with `lclr_cv`.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from aligners.features.parse import default_cache_dir, merge_graphs, parse_all, split_sentences
from aligners.models.lclr import make_task
from aligners.models.lclr.config import lclr_settings
from aligners.models.lclr.model import fixed_structure_features, train_lclr, train_two_stage

__all__ = ["run_pairs", "load_pairs", "two_stage", "lclr", "cv_splits", "summary", "table"]


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


def _accuracy(clf, insts, labels) -> float:
    """The fraction of `insts` whose sign of `clf.score` matches its label."""
    right = sum(int((clf.score(x) >= 0) == bool(y)) for x, y in zip(insts, labels, strict=True))
    return right / max(1, len(labels))


def two_stage(task, insts, labels, C, m, seed, fixed, align=None):
    """The two-stage system on `fixed` structures, its stage-one weights `align` (default:
    the task's heuristic) and LCLRConfig `m`'s solver settings; both LCLR runners use it."""
    F = len(task.features)
    align = task.heuristic_weights()[:F] if align is None else align
    return train_two_stage(task, insts, labels, align_weights=align, num_features=F, C=C,
                           tol=float(m.dcd_tol), seed=seed, fixed=fixed)


def cv_splits(n: int, folds: int, repeats: int, seed: int) -> list[tuple[np.ndarray, ...]]:
    """Repeated k-fold CV: `repeats` shuffles (seeded) of range(n), each cut into `folds`
    folds; (train indices, held-out indices) for every repeat x fold."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(repeats):
        fold = rng.permutation(n) % folds
        out += [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(folds)]
    return out


def lclr(task, insts, labels, C, m, seed, w0, log=None):
    """LCLR from `w0` with LCLRConfig `m`'s settings; both LCLR runners use it."""
    return train_lclr(task, insts, labels, w0=w0, num_features=len(task.features), C=C,
                      tol=float(m.tol), max_outer=int(m.max_outer),
                      max_cutting=int(m.max_cutting), dcd_tol=float(m.dcd_tol), seed=seed,
                      log=log)


def _cv(task, insts, labels, grid, splits, m, seed, system, log, fixed):
    """Mean held-out accuracy per C over the repeated-CV `splits` of the training split
    (the two-stage structures are fixed once: only the SVM depends on C); best C (the
    smallest among ties) and the table."""
    table = {}
    for C in grid:
        accs = []
        for tr, te in splits:
            sub, suby = [insts[k] for k in tr], [labels[k] for k in tr]
            clf = two_stage(task, sub, suby, float(C), m, seed, [fixed[k] for k in tr])
            if system == "lclr":
                clf, _ = lclr(task, sub, suby, float(C), m, seed, clf.weights)
                accs.append(_accuracy(clf, [insts[k] for k in te], [labels[k] for k in te]))
            else:
                w = clf.weights
                right = [float(w[fixed[k][0]] @ fixed[k][1] >= 0) == labels[k] for k in te]
                accs.append(float(np.mean(right)))
        table[float(C)] = float(np.mean(accs))
        log(f"cv {system} C={C:g}: accuracy {table[float(C)]:.4f} ({len(splits)} splits)")
    return max(table, key=table.get), table


def _prepare(cfg, loader, log):
    """Task with graphs and a frozen feature index, train/test instances and labels, the
    two-stage structures of the training pairs, and their build times."""
    m, d = lclr_settings(cfg)
    train_pairs, train_y = load_pairs(cfg, d.train_split, loader)
    test_pairs, test_y = load_pairs(cfg, d.test_split, loader)
    task = make_task(str(m.task), node_info=bool(m.node_info),
                     drop_features=list(m.drop_features))
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
    t0 = time.perf_counter()
    fixed = fixed_structure_features(task, train, task.heuristic_weights())
    return task, (train, train_y), (test, test_y), fixed, {
        "featurise_seconds": feat_s, "align_seconds": time.perf_counter() - t0}


def _one_seed(task, data, fixed, m, seed, log):
    """The whole pipeline for one seed: repeated CV on the training split -> C per system,
    both systems trained on all of it, tested. Returns (two, joint, row)."""
    (train, train_y), (test, test_y) = data
    grid = [float(c) for c in m.C_grid]
    splits = cv_splits(len(train), int(m.cv_folds), int(m.cv_repeats), seed)
    C_two = C_lclr = grid[0]
    if len(grid) > 1:
        C_two, _ = _cv(task, train, train_y, grid, splits, m, seed, "two_stage", log, fixed)
        C_lclr = C_two
        if m.lclr_cv:
            C_lclr, _ = _cv(task, train, train_y, grid, splits, m, seed, "lclr", log, fixed)
    t0 = time.perf_counter()
    two = two_stage(task, train, train_y, C_two, m, seed, fixed)
    two_s = time.perf_counter() - t0
    w0 = two.weights if C_lclr == C_two else two_stage(task, train, train_y, C_lclr, m,
                                                        seed, fixed).weights
    t0, c0 = time.perf_counter(), time.process_time()
    joint, hist = lclr(task, train, train_y, C_lclr, m, seed, w0, log)
    row = {"two_stage_C": C_two, "lclr_C": C_lclr, "two_stage_seconds": two_s,
           "lclr_seconds": time.perf_counter() - t0,
           "lclr_cpu_seconds": time.process_time() - c0,
           "lclr_outer_iterations": len(hist["objective"]) - 1,
           "two_stage_acc": _accuracy(two, test, test_y)}
    row["lclr_acc"] = _accuracy(joint, test, test_y)
    log(f"seed {seed}: C two-stage {C_two:g} LCLR {C_lclr:g}; test accuracy two-stage "
        f"{100 * row['two_stage_acc']:.2f}, LCLR {100 * row['lclr_acc']:.2f}")
    return two, joint, row


def _inference(joint, test) -> dict[str, float]:
    """Per-pair ILP inference time of `joint` on the test pairs (wall and CPU) and size."""
    wall, cpu = [], []
    for x in test:
        t0, c0 = time.perf_counter(), time.process_time()
        joint.score(x)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    wall, cpu = np.array(wall), np.array(cpu)
    cons = [joint.task.constraints(x) for x in test]
    return {"pairs_per_s_wall": float(len(wall) / wall.sum()),
            "pairs_per_s_cpu": float(len(cpu) / max(cpu.sum(), 1e-9)),
            "ms_median": float(1e3 * np.median(wall)),
            "ms_p90": float(1e3 * np.percentile(wall, 90)),
            "ms_max": float(1e3 * wall.max()),
            "cpu_ms_median": float(1e3 * np.median(cpu)),
            "variables_mean": float(np.mean([x.num_vars for x in test])),
            "constraints_mean": float(np.mean([c.num_constraints for c in cons]))}


def summary(rows: list[dict], keys=("two_stage_acc", "lclr_acc")) -> dict[str, float]:
    """Mean and sample sd (ddof 1; 0 for one seed) of the per-seed test figures `keys`, and
    each seed's figures."""
    out = {}
    for key in keys:
        v = np.array([r[key] for r in rows])
        out[key] = float(v.mean())
        out[f"{key}_sd"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    for r in rows:
        for key in keys:
            out[f"{key}_seed{r['seed']}"] = r[key]
    return out


def table(rows: list[dict]) -> str:
    """The mean +- sd table printed at the end of a run (accuracy in %)."""
    s = summary(rows)
    lines = ["seed | C two-stage | C LCLR | two-stage acc % | LCLR acc %"]
    lines += [f"{r['seed']} | {r['two_stage_C']:g} | {r['lclr_C']:g} | "
              f"{100 * r['two_stage_acc']:.2f} | {100 * r['lclr_acc']:.2f}" for r in rows]
    lines.append(f"mean ± sd ({len(rows)} seeds) | | | "
                 f"{100 * s['two_stage_acc']:.2f} ± {100 * s['two_stage_acc_sd']:.2f} | "
                 f"{100 * s['lclr_acc']:.2f} ± {100 * s['lclr_acc_sd']:.2f}")
    return "\n".join(lines)


def run_pairs(cfg: DictConfig, loader, log=print):
    """Both systems on `cfg.data` (train_split -> test_split) for `model.seeds` seeds:
    metrics (test: mean, sd and per seed) and the first seed's {system: (model, its C)}."""
    import resource

    m, _ = lclr_settings(cfg)
    task, train, test, fixed, times = _prepare(cfg, loader, log)
    rows, models = [], None
    for seed in range(int(cfg.seed), int(cfg.seed) + int(m.seeds)):
        two, joint, row = _one_seed(task, (train, test), fixed, m, seed, log)
        rows.append({"seed": seed, **row})
        models = models or (two, joint, row)
    two, joint, first = models
    test_y = test[1]
    metrics = {"test": {**summary(rows), "seeds": len(rows),
                        "majority_acc": float(max(np.mean(test_y), 1 - np.mean(test_y)))},
               "train": dict(times), "inference": _inference(joint, test[0])}
    for key in ("two_stage_seconds", "lclr_seconds", "lclr_cpu_seconds",
                "lclr_outer_iterations"):
        metrics["train"][key] = float(np.mean([r[key] for r in rows]))
    for r in rows:
        for key in ("two_stage_C", "lclr_C"):
            metrics["train"][f"{key}_seed{r['seed']}"] = r[key]
    metrics["train"].update(cv_folds=int(m.cv_folds), cv_repeats=int(m.cv_repeats),
                            lclr_cv=int(bool(m.lclr_cv)))
    metrics["train"]["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    log(table(rows))
    return metrics, {"two_stage": (two, first["two_stage_C"]), "lclr": (joint, first["lclr_C"])}
