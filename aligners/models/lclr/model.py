"""LCLR: learning over constrained latent representations (Chang, Goldwasser, Roth & Srikumar
2010), and its two-stage baseline ("Alignment + Learning").

Shapes: an input x has N binary latent variables h (N,) and F features; the task gives the
per-variable features phi_s(x) (N, F, sparse), a constant part phi_0(x) (F,) (bias and
h-independent features) and linear constraints C. Then

    Phi(x, h) = phi_0(x) + sum_s h_s phi_s(x),     f(x) = max_{h in C} u . Phi(x, h)

and x is positive iff f(x) >= 0. Inference is the ILP of `aligners.ilp` (a task may
override `LatentTask.solve` with an exact faster solver that is tested equal to the ILP).

Training (`train_lclr`) is the paper's Algorithm 1: fix the best structures of the positives
under u, then minimise Eq. (4) with Algorithm 2 (cutting plane: each negative keeps a global
cache H_j of its argmax structures; Eq. (5) over the caches is solved by dual coordinate
descent, `aligners.models.lclr._dcd`), until the relative decrease of Eq. (3) is below `tol`.
Loss: squared hinge, C-weighted: Eq. (3) = 1/2 |u|^2 + C sum_i max(0, 1 - y_i f(x_i))^2.

`train_two_stage` infers every structure once with fixed weights (the task's heuristic), then
trains the same squared-hinge SVM on Phi(x, h_fixed); at test time the structure is again
inferred with the fixed weights. Cost: one inference per example and per pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aligners.ilp import LinearConstraints, solve_ilp
from aligners.models.lclr._dcd import DualProblem, dcd_solve, primal_objective
from aligners.models.lclr.config import LCLRConfig

__all__ = ["FeatureIndex", "LatentInstance", "LatentTask", "LatentClassifier",
           "structure_features", "variable_scores", "infer", "lclr_objective",
           "fixed_structure_features", "train_two_stage", "train_lclr"]


class FeatureIndex:
    """Feature name -> column. `index(name)` adds unseen names while `growing`, else -1."""

    def __init__(self, names: list[str] | None = None):
        self.names: list[str] = list(names or [])
        self._ids = {n: i for i, n in enumerate(self.names)}
        self.growing = True

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        i = self._ids.get(name, -1)
        if i < 0 and self.growing:
            i = len(self.names)
            self._ids[name] = i
            self.names.append(name)
        return i


@dataclass
class LatentInstance:
    """One input: `num_vars` variables; per-variable features as COO triples
    (`var_rows` (nnz,), `var_cols`, `var_vals`); constant features (`base_cols`, `base_vals`);
    `meta`: what the task needs for constraints, fast solvers and explanations."""

    num_vars: int
    var_rows: np.ndarray
    var_cols: np.ndarray
    var_vals: np.ndarray
    base_cols: np.ndarray
    base_vals: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict)


class LatentTask:
    """A task plugs in by subclassing: `constraints(inst)` (the feasible set C),
    `variable_names(inst)` (for --explain) and, optionally, a faster exact `solve`."""

    name = "latent"

    def constraints(self, inst: LatentInstance) -> LinearConstraints | None:
        raise NotImplementedError

    def variable_names(self, inst: LatentInstance) -> list[str]:
        return [f"h{s}" for s in range(inst.num_vars)]

    def solve(self, inst: LatentInstance, scores: np.ndarray) -> np.ndarray:
        """argmax_{h in C} scores . h, scores (N,) -> h (N,) int8. Default: the HiGHS ILP."""
        return solve_ilp(scores, self.constraints(inst)).h


def _dot(w: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> np.ndarray:
    ok = (cols >= 0) & (cols < w.shape[0])
    out = np.zeros(cols.shape[0])
    out[ok] = w[cols[ok]] * vals[ok]
    return out


def variable_scores(inst: LatentInstance, w: np.ndarray) -> np.ndarray:
    """u . phi_s(x) for every variable s: (N,). Cost: O(nnz). Unknown columns count 0."""
    return np.bincount(inst.var_rows, weights=_dot(w, inst.var_cols, inst.var_vals),
                       minlength=inst.num_vars)[: inst.num_vars]


def structure_features(inst: LatentInstance, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Phi(x, h) as sparse (cols, vals), cols unique and sorted. Cost: O(nnz log nnz)."""
    on = np.asarray(h, dtype=bool)[inst.var_rows]
    cols = np.concatenate([inst.base_cols, inst.var_cols[on]]).astype(np.int64)
    vals = np.concatenate([inst.base_vals, inst.var_vals[on]]).astype(np.float64)
    keep = cols >= 0
    cols, vals = cols[keep], vals[keep]
    uniq, inv = np.unique(cols, return_inverse=True)
    return uniq, np.bincount(inv, weights=vals, minlength=len(uniq))


def infer(task: LatentTask, inst: LatentInstance, w: np.ndarray) -> tuple[np.ndarray, float]:
    """(h*, f(x)) = argmax / max_{h in C} u . Phi(x, h). Cost: one task solve + O(nnz)."""
    scores = variable_scores(inst, w)
    h = task.solve(inst, scores)
    return h, float(_dot(w, inst.base_cols, inst.base_vals).sum() + scores @ h)


@dataclass
class LatentClassifier:
    """f(x) = u . Phi(x, h(x)): joint (LCLR) when `align_weights` is None (h maximises the
    same u), two-stage otherwise (h maximises the fixed `align_weights`)."""

    task: LatentTask
    weights: np.ndarray
    align_weights: np.ndarray | None = None

    def structure(self, inst: LatentInstance) -> np.ndarray:
        w = self.weights if self.align_weights is None else self.align_weights
        return infer(self.task, inst, w)[0]

    def score(self, inst: LatentInstance) -> float:
        """f(x). Cost: one inference."""
        if self.align_weights is None:
            return infer(self.task, inst, self.weights)[1]
        cols, vals = structure_features(inst, self.structure(inst))
        return float(_dot(self.weights, cols, vals).sum())

    def predict(self, inst: LatentInstance) -> int:
        return 1 if self.score(inst) >= 0 else 0

    def explain(self, inst: LatentInstance) -> list[str]:
        """Names of the active latent variables of x's structure."""
        names = self.task.variable_names(inst)
        return [names[s] for s in np.flatnonzero(self.structure(inst))]


def _signs(labels) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1 or not np.all(np.isin(y, (0, 1, -1))):
        raise ValueError("labels must be a vector of 0/1 (or -1/+1)")
    return np.where(y > 0, 1, -1)


def lclr_objective(task: LatentTask, insts: list[LatentInstance], labels, w: np.ndarray, *,
                   C: float, argmax: list | None = None) -> float:
    """Eq. (3): 1/2 |u|^2 + C sum_i max(0, 1 - y_i f(x_i))^2. Cost: one inference each.
    `argmax`, when given a list, receives (h_i, f(x_i)) for every input (reused by
    `train_lclr` for the next iteration's first inferences under the same u)."""
    y = _signs(labels)
    out = [infer(task, x, w) for x in insts]
    if argmax is not None:
        argmax[:] = out
    f = np.array([v for _, v in out])
    return 0.5 * float(w @ w) + C * float(np.sum(np.maximum(0.0, 1.0 - y * f) ** 2))


def fixed_structure_features(task: LatentTask, insts: list[LatentInstance],
                             align_weights: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Phi(x_i, h_i) with h_i = argmax under the fixed `align_weights` (the two-stage
    system's first stage). Cost: one inference per input."""
    return [structure_features(x, infer(task, x, align_weights)[0]) for x in insts]


def train_two_stage(task: LatentTask, insts: list[LatentInstance], labels, *,
                    align_weights: np.ndarray, num_features: int, C: float = 1.0,
                    tol: float = LCLRConfig.dcd_tol, max_epochs: int = 1000, seed: int = 0,
                    fixed: list | None = None) -> LatentClassifier:
    """Alignment + Learning: h_i = argmax under `align_weights`, then the squared-hinge SVM
    on Phi(x_i, h_i) by DCD. `fixed`: the precomputed `fixed_structure_features` (they do
    not depend on C). Cost: N inferences (none with `fixed`) + DCD."""
    y = _signs(labels)
    if fixed is None:
        fixed = fixed_structure_features(task, insts, align_weights)
    if len(fixed) != len(y):
        raise ValueError(f"{len(fixed)} fixed structures for {len(y)} labels")
    prob = DualProblem(num_features, C)
    for e, ((cols, vals), yy) in enumerate(zip(fixed, y, strict=True)):
        prob.add(example=e, y=int(yy), cols=cols, vals=vals)
    w, _ = dcd_solve(prob, num_examples=len(insts), tol=tol, max_epochs=max_epochs, seed=seed)
    return LatentClassifier(task, w, np.asarray(align_weights, np.float64).copy())


def train_lclr(task: LatentTask, insts: list[LatentInstance], labels, *, w0: np.ndarray,
               num_features: int, C: float = 1.0, tol: float = LCLRConfig.tol,
               max_outer: int = LCLRConfig.max_outer, max_cutting: int = LCLRConfig.max_cutting,
               dcd_tol: float = LCLRConfig.dcd_tol, max_epochs: int = 1000,
               seed: int = 0, log=None) -> tuple[LatentClassifier, dict]:
    """Algorithm 1 with Algorithm 2 inside. Returns the classifier and a history dict:
    `objective` (Eq. (3) after each outer iteration, starting with w0's; an iteration whose
    inexact inner solve raised it is undone), `raw_objective` (Eq. (3) before that guard),
    `cutting` (per outer iteration, Eq. (5)'s value after each cutting-plane round),
    `cache` (total cached negative structures after each outer iteration).
    Cost per outer iteration: (#positives + rounds x #negatives) inferences + DCD solves.
    """
    y = _signs(labels)
    n = len(insts)
    w = np.zeros(num_features)
    w0 = np.asarray(w0, np.float64)
    w[: min(len(w0), num_features)] = w0[:num_features]
    pos = [i for i in range(n) if y[i] > 0]
    neg = [i for i in range(n) if y[i] < 0]
    cache: dict[int, dict[bytes, tuple[np.ndarray, np.ndarray]]] = {j: {} for j in neg}
    last: list = []  # (h, f) of every input under the current u
    hist = {"objective": [lclr_objective(task, insts, y, w, C=C, argmax=last)],
            "raw_objective": [],
            "cutting": [], "cache": []}
    neg_alpha: dict[tuple[int, bytes], float] = {}
    for _outer in range(max_outer):
        fixed = {i: structure_features(insts[i], last[i][0]) for i in pos}  # argmax under u
        rounds = []
        pos_alpha: dict[int, float] = {}
        w_prev = w.copy()
        for _round in range(max_cutting):
            added = 0
            for j in neg:
                h = last[j][0] if _round == 0 else infer(task, insts[j], w)[0]
                key = np.packbits(h.astype(np.uint8)).tobytes() + len(h).to_bytes(4, "little")
                if key not in cache[j]:
                    cache[j][key] = structure_features(insts[j], h)
                    added += 1
            if added == 0 and rounds:
                break
            prob = DualProblem(num_features, C)
            keys = []
            for i in pos:  # positives restart from 0 in each outer iteration (new structures)
                prob.add(example=i, y=1, cols=fixed[i][0], vals=fixed[i][1],
                         alpha=pos_alpha.get(i, 0.0))
                keys.append(i)
            for j in neg:
                for key, (cols, vals) in cache[j].items():
                    prob.add(example=j, y=-1, cols=cols, vals=vals,
                             alpha=neg_alpha.get((j, key), 0.0))
                    keys.append((j, key))
            w, _ = dcd_solve(prob, num_examples=n, tol=dcd_tol, max_epochs=max_epochs,
                             seed=seed + len(rounds))
            for k, a in zip(keys, prob.alpha, strict=True):
                if isinstance(k, tuple):
                    neg_alpha[k] = a
                else:
                    pos_alpha[k] = a
            rounds.append(primal_objective(prob, w, num_examples=n))
        hist["cutting"].append(rounds)
        hist["cache"].append(sum(len(c) for c in cache.values()))
        new_last: list = []
        obj = lclr_objective(task, insts, y, w, C=C, argmax=new_last)
        hist["raw_objective"].append(obj)
        if obj > hist["objective"][-1]:  # only an inexact inner solve can do this: keep old u
            w, obj = w_prev, hist["objective"][-1]
        else:
            last = new_last
        hist["objective"].append(obj)
        if log is not None:
            log(f"lclr outer {_outer + 1}: objective {obj:.6g}, cutting rounds {len(rounds)}, "
                f"cache {hist['cache'][-1]}")
        prev = hist["objective"][-2]
        if prev - obj <= tol * max(abs(prev), 1e-12):
            break
    return LatentClassifier(task, w), hist
