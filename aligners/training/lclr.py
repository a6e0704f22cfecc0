"""`task: lclr`: LCLR vs the two-stage baseline (Chang et al. 2010), one runner per LCLR task.

`python train.py experiment=lclr_paraphrase` (MSRP) / `lclr_entailment` (RTE-5): see
`aligners.training._lclr_pairs`. `python train.py experiment=lclr_transliteration`: samples
the paper's protocol from `cfg.data` (positives from the train split, a fraction of the random
pairings of their words as negatives; test names from the test split, each ranked against all
test candidates), picks C for each system by k-fold cross-validation on the training names
only (each fold's names ranked against `data.cv_candidates` candidates: the fold's own plus
unused train-split names; `model.C_fixed` skips it),
trains the two-stage system ("Alignment + Learning": structures from the fixed Romanization
weights, then the squared-hinge SVM) and LCLR (initialised from the two-stage weights, as the
paper), saves both model folders (`two_stage/`, `lclr/`; `aligners.load` reads them) and writes
`metrics.json` (split -> {lclr_acc, lclr_mrr, two_stage_acc, two_stage_mrr, ...}).

No Lightning loop runs (the paper's dual method replaces it): `cfg.trainer` and `cfg.callbacks`
are not used; `cfg.logger` receives every metric.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from hydra.utils import instantiate
from omegaconf import DictConfig

from aligners.errors import AlignersInputError
from aligners.metrics import write_metrics_json
from aligners.models.lclr import make_task, save_lclr
from aligners.models.lclr.config import lclr_settings
from aligners.models.lclr.model import fixed_structure_features
from aligners.models.lclr.transliteration import grid_ranks
from aligners.training._lclr_pairs import lclr, run_pairs, summary, two_stage
from aligners.training.baseline import registry_split

__all__ = ["KINDS", "translit_protocol", "translit_distractors",
           "fit_transliteration", "cross_validate", "train", "evaluate"]

KINDS: tuple[str, ...] = ()  # train.py is train-and-test; saved models are scored by `classify`


def _load(cfg: DictConfig, split: str) -> list:
    return registry_split(cfg, lclr_settings(cfg)[1].name, split)


def _distinct(names: list, limit: int) -> list[tuple[str, str]]:
    """The first `limit` names whose source and target are both unseen so far."""
    out, seen_s, seen_t = [], set(), set()
    for p in names:
        s, t = p.source.lower(), p.target
        if s in seen_s or t in seen_t:
            continue
        seen_s.add(s)
        seen_t.add(t)
        out.append((p.source, p.target))
        if len(out) == limit:
            break
    if len(out) < limit:
        raise AlignersInputError(f"only {len(out)} distinct names, {limit} asked for")
    return out


def translit_protocol(train_names: list, test_names: list, *, positives: int,
                      negative_fraction: float, test_size: int, seed: int):
    """The paper's sets: `positives` names drawn (seeded) from the train split, negatives =
    `negative_fraction` of all ordered pairings (i, j != i) of their words; the first
    `test_size` distinct names of the test split. Returns (pairs, labels, test pairs)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(train_names))
    pos = _distinct([train_names[k] for k in order], positives)
    n = len(pos)
    pick = rng.choice(n * (n - 1), size=int(round(negative_fraction * n * (n - 1))),
                      replace=False)
    neg = []
    for k in np.sort(pick):
        a, b = divmod(int(k), n - 1)
        neg.append((pos[a][0], pos[b + (b >= a)][1]))
    return pos + neg, [1] * len(pos) + [0] * len(neg), _distinct(test_names, test_size)


def translit_distractors(train_names: list, pairs, *, count: int, seed: int) -> list[str]:
    """`count` target names of the train split (seeded draw) whose source and target are
    both outside the sampled training pairs: the extra wrong candidates that make a
    cross-validation fold's candidate pool as large as the test's. Train split only."""
    used_s = {s.lower() for s, _ in pairs}
    used_t = {t for _, t in pairs}
    pool = list(dict.fromkeys(p.target for p in train_names
                              if p.source.lower() not in used_s and p.target not in used_t))
    if count > len(pool):
        raise AlignersInputError(f"only {len(pool)} unused training names, {count} asked for")
    rng = np.random.default_rng(seed + 1)
    return [pool[k] for k in np.sort(rng.choice(len(pool), size=count, replace=False))]


def _prepare(pairs, mcfg):
    """The task (feature index frozen after `pairs`), instances, Romanization weights and
    the two-stage structures of `pairs` (none depends on C)."""
    task = make_task("transliteration", solver=str(mcfg.solver),
                     romanization_feature=bool(mcfg.romanization_feature))
    insts = [task.instance(a, b) for a, b in pairs]
    align = task.romanization_weights()
    task.features.growing = False
    align = np.pad(align, (0, len(task.features) - len(align)))
    return task, insts, align, fixed_structure_features(task, insts, align)


def fit_transliteration(pairs, labels, *, C: float, mcfg, seed: int, log=None,
                        prepared=None):
    """Two-stage and LCLR classifiers for (pairs, labels) with one C; returns both + history.
    `prepared`: `_prepare(pairs, mcfg)`'s result, reused across C values."""
    task, insts, align, fixed = prepared if prepared is not None else _prepare(pairs, mcfg)
    two = two_stage(task, insts, labels, C, mcfg, seed, fixed, align)
    joint, hist = lclr(task, insts, labels, C, mcfg, seed, two.weights, log)
    return two, joint, hist


def _grid_mrr(clf, grid) -> float:
    return float(np.mean(1.0 / grid_ranks(clf, grid)))


def cross_validate(pairs, labels, *, grid, folds: int, mcfg, seed: int, log=print,
                   distractors: list[str] = ()):
    """k-fold CV over the positive names (pairings that touch a held-out name are dropped
    from training); score = held-out MRR ranking the fold's names against the fold's
    candidates plus `distractors` (unused train-split names, so that the pool is as large as
    the test's). Per fold the features, instances and two-stage structures are built once
    for every C. Returns {system: best C} and the table {system: {C: mean MRR}}."""
    pos = [p for p, y in zip(pairs, labels, strict=True) if y == 1]
    fold_of = {p: k % folds for k, p in enumerate(pos)}
    src_fold = {s: fold_of[(s, t)] for s, t in pos}
    tgt_fold = {t: fold_of[(s, t)] for s, t in pos}
    scores = {system: {float(C): [] for C in grid} for system in ("two_stage", "lclr")}
    for f in range(folds):
        keep = [k for k, (s, t) in enumerate(pairs) if src_fold[s] != f and tgt_fold[t] != f]
        held = [p for p in pos if fold_of[p] == f]
        sub = [pairs[k] for k in keep]
        prepared = _prepare(sub, mcfg)
        task = prepared[0]
        pool = [t for _, t in held] + list(distractors)
        inst_grid = [[task.instance(s, c) for c in pool] for s, _ in held]
        for C in grid:
            two, joint, _ = fit_transliteration(sub, [labels[k] for k in keep], C=float(C),
                                                mcfg=mcfg, seed=seed, prepared=prepared)
            scores["two_stage"][float(C)].append(_grid_mrr(two, inst_grid))
            scores["lclr"][float(C)].append(_grid_mrr(joint, inst_grid))
        if log is not None:
            log(f"cv fold {f + 1}/{folds} done")
    table = {system: {C: float(np.mean(v)) for C, v in row.items()}
             for system, row in scores.items()}
    if log is not None:
        for C in table["lclr"]:
            log(f"cv C={C:g}: two-stage MRR {table['two_stage'][C]:.4f}, "
                f"LCLR MRR {table['lclr'][C]:.4f}")
    best = {system: max(row, key=row.get) for system, row in table.items()}
    return best, table


def _logger(cfg: DictConfig):
    conf = cfg.get("logger")
    if not conf:
        return []
    confs = [conf] if "_target_" in conf else list(conf.values())
    return [instantiate(c) for c in confs]


def _translit_seed(cfg: DictConfig, m, d, seed: int):
    """The transliteration protocol for one seed (the draw of the training pairs, the CV
    distractors and folds, training): (row of test figures, C and CV MRRs, two, joint)."""
    pairs, labels, test = translit_protocol(
        _load(cfg, d.train_split), _load(cfg, d.test_split), positives=int(d.train_positives),
        negative_fraction=float(d.negative_fraction), test_size=int(d.test_names), seed=seed)
    print(f"transliteration, seed {seed}: {sum(labels)} positive / {len(labels) - sum(labels)} "
          f"negative training pairs, {len(test)} test names x {len(test)} candidates")
    grid = list(m.C_grid)
    fixed_C = m.C_fixed  # {two_stage: C, lclr: C}: chosen by an earlier CV run
    if fixed_C:
        best, table = {k: float(fixed_C[k]) for k in ("two_stage", "lclr")}, {}
    elif len(grid) > 1:
        folds = int(m.cv_folds)
        extra = max(0, int(d.cv_candidates) - -(-sum(labels) // folds))
        distract = translit_distractors(_load(cfg, d.train_split), pairs, count=extra,
                                        seed=seed) if extra else []
        best, table = cross_validate(pairs, labels, grid=grid, folds=folds, mcfg=m,
                                     seed=seed, distractors=distract)
    else:
        best, table = {"two_stage": float(grid[0]), "lclr": float(grid[0])}, {}
    t0 = time.perf_counter()
    prepared = _prepare(pairs, m)
    two, _, _ = fit_transliteration(pairs, labels, C=best["two_stage"], mcfg=m, seed=seed,
                                    prepared=prepared)
    _, joint, hist = fit_transliteration(pairs, labels, C=best["lclr"], mcfg=m, seed=seed,
                                         log=print, prepared=prepared)
    row = {"seed": seed, "names": len(test), "lclr_C": best["lclr"],
           "two_stage_C": best["two_stage"], "lclr_outer_iterations": len(hist["objective"]) - 1,
           "lclr_objective": hist["objective"][-1], "seconds": time.perf_counter() - t0}
    task = prepared[0]
    test_grid = [[task.instance(s, c) for _, c in test] for s, _ in test]
    for system, clf in (("two_stage", two), ("lclr", joint)):
        ranks = grid_ranks(clf, test_grid)
        row[f"{system}_acc"] = float(np.mean(ranks == 1))
        row[f"{system}_mrr"] = float(np.mean(1.0 / ranks))
    return row, table, two, joint


_TRANSLIT_TEST = ("two_stage_acc", "lclr_acc", "two_stage_mrr", "lclr_mrr")


def _transliteration(cfg: DictConfig):
    """`model.seeds` seeds from `cfg.seed`: test = mean ± sd (and each seed's figures);
    train = the first seed's C and CV table, iterations and seconds averaged; models: the
    first seed's."""
    m, d = lclr_settings(cfg)
    rows, first = [], None
    for seed in range(int(cfg.seed), int(cfg.seed) + int(m.seeds)):
        row, table, two, joint = _translit_seed(cfg, m, d, seed)
        rows.append(row)
        first = first or (row, table, two, joint)
    row, table, two, joint = first
    metrics = {"test": {**summary(rows, _TRANSLIT_TEST), "seeds": len(rows),
                        "names": row["names"]},
               "train": {"lclr_C": row["lclr_C"], "two_stage_C": row["two_stage_C"],
                         "lclr_objective": row["lclr_objective"], "cv_folds": int(m.cv_folds)}}
    for key in ("lclr_outer_iterations", "seconds"):
        metrics["train"][key] = float(np.mean([r[key] for r in rows]))
    for r in rows:
        for key in ("two_stage_C", "lclr_C"):
            metrics["train"][f"{key}_seed{r['seed']}"] = r[key]
    for system, cv_row in table.items():
        for C, v in cv_row.items():
            metrics.setdefault("cv", {})[f"{system}_mrr_C{C:g}"] = v
    return metrics, {"two_stage": (two, row["two_stage_C"]), "lclr": (joint, row["lclr_C"])}


def _pairs(cfg: DictConfig):
    return run_pairs(cfg, _load)


RUNNERS = {"transliteration": _transliteration, "paraphrase": _pairs, "entailment": _pairs}


def train(cfg: DictConfig) -> dict:
    """Run the LCLR task `cfg.model.task`; writes models and metrics.json; returns metrics."""
    name = lclr_settings(cfg)[0].task
    if name not in RUNNERS:
        raise AlignersInputError(f"model.task must be one of {sorted(RUNNERS)}, got {name!r}")
    out = Path(cfg.paths.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    metrics, systems = RUNNERS[name](cfg)  # the two systems: {name: (classifier, its C)}
    for system, (clf, C) in systems.items():
        save_lclr(out / system, clf, system=system, meta={"C": C})
    write_metrics_json(out / "metrics.json", metrics)
    for lg in _logger(cfg):
        lg.log_metrics({f"{s}/{k}": v for s, row in metrics.items() for k, v in row.items()})
        lg.save()
    for split, row in metrics.items():
        print(split + ": " + ", ".join(f"{k} {v:.4g}" for k, v in sorted(row.items())))
    return metrics


def evaluate(cfg: DictConfig) -> dict:
    """Not a separate job for LCLR: `train.py` trains both systems and scores the test split
    in one run (the protocol needs the pair); a saved model scores new data through
    `aligners classify --model RUN/lclr`. One clear error instead of silently retraining."""
    raise AlignersInputError("task lclr has no separate evaluate: `python train.py "
                             "experiment=lclr_<task>` trains and tests in one run; score a saved "
                             "model with `aligners classify --model RUN/lclr ...`")
