"""LCLR framework: DCD == a reference QP solution; Algorithm 1/2 objective behaviour;
the two-stage baseline uses the fixed-weight structures."""

import numpy as np
import pytest
from scipy.optimize import minimize

from aligners.ilp import LinearConstraints, brute_force_ilp
from aligners.models.lclr._dcd import DualProblem, dcd_solve, dual_objective, primal_objective
from aligners.models.lclr.model import (
    LatentInstance,
    LatentTask,
    infer,
    lclr_objective,
    structure_features,
    train_lclr,
    train_two_stage,
)


class MatchTask(LatentTask):
    """Toy task: a one-to-one matching between two small sets of "words"."""

    name = "toy-match"

    def constraints(self, inst):
        n1, n2 = inst.meta["n1"], inst.meta["n2"]
        rows = [({i * n2 + j: 1.0 for j in range(n2)}, -np.inf, 1.0) for i in range(n1)]
        rows += [({i * n2 + j: 1.0 for i in range(n1)}, -np.inf, 1.0) for j in range(n2)]
        return LinearConstraints.from_rows(rows, num_variables=n1 * n2)


F_PAIR = 19  # 0 bias, 1 "mapped" count, 2..17 word-pair identity (a, b), 18 size -(n1+n2)/2


def toy_instance(w1, w2) -> LatentInstance:
    rows, cols = [], []
    for i, a in enumerate(w1):
        for j, b in enumerate(w2):
            s = i * len(w2) + j
            rows += [s, s]
            cols += [1, 2 + a * 4 + b]
    return LatentInstance(len(w1) * len(w2), np.array(rows), np.array(cols),
                          np.ones(len(rows)), np.array([0, 18]),
                          np.array([1.0, -(len(w1) + len(w2)) / 2]),
                          {"n1": len(w1), "n2": len(w2)})


def toy_data(n, seed):
    rng = np.random.default_rng(seed)
    insts, labels = [], []
    for _ in range(n):
        w1 = rng.integers(0, 4, size=int(rng.integers(1, 4))).tolist()
        if rng.random() < 0.5:
            w2 = list(rng.permutation(w1))
            labels.append(1)
        else:
            w2 = rng.integers(0, 4, size=int(rng.integers(1, 4))).tolist()
            labels.append(int(sorted(w1) == sorted(w2)))
        insts.append(toy_instance(w1, w2))
    return insts, labels


def test_infer_equals_brute_force():
    task = MatchTask()
    rng = np.random.default_rng(0)
    insts, _ = toy_data(20, 1)
    for x in insts:
        w = rng.normal(size=F_PAIR)
        h, f = infer(task, x, w)
        from aligners.models.lclr.model import variable_scores
        oracle = brute_force_ilp(variable_scores(x, w), task.constraints(x))
        assert f == pytest.approx(w[x.base_cols] @ x.base_vals + oracle.value)
        cols, vals = structure_features(x, h)
        assert f == pytest.approx(float(w[cols] @ vals))


def _random_problem(seed, C):
    rng = np.random.default_rng(seed)
    prob = DualProblem(6, C)
    for e in range(8):
        y = 1 if e % 2 else -1
        for _ in range(1 if y > 0 else int(rng.integers(1, 4))):
            cols = np.sort(rng.choice(6, size=3, replace=False))
            prob.add(example=e, y=y, cols=cols, vals=rng.normal(size=3))
    return prob


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_dcd_matches_reference_qp(C):
    prob = _random_problem(3, C)
    w, _ = dcd_solve(prob, num_examples=8, tol=1e-10, max_epochs=100000)
    alpha = np.array(prob.alpha)
    ref = minimize(lambda a: dual_objective(prob, a, num_examples=8), np.zeros(len(alpha)),
                   method="L-BFGS-B", bounds=[(0, None)] * len(alpha),
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    d_dcd = dual_objective(prob, alpha, num_examples=8)
    assert d_dcd <= ref.fun + 1e-7
    assert d_dcd == pytest.approx(ref.fun, abs=1e-6)
    # strong duality: the primal at w equals minus the dual optimum
    assert primal_objective(prob, w, num_examples=8) == pytest.approx(-d_dcd, abs=1e-6)
    # and the primal QP in (w, slack) form, solved by SLSQP, has the same minimiser
    items = [(prob.example[k], prob.y[k], np.zeros(6)) for k in range(len(prob.y))]
    for k, (_, _, x) in enumerate(items):
        for p in range(prob.indptr[k], prob.indptr[k + 1]):
            x[prob.indices[p]] += prob.data[p]
    cons = [{"type": "ineq", "fun": (lambda v, e=e, y=y, x=x: v[6 + e] - 1 + y * (x @ v[:6]))}
            for e, y, x in items]
    ref_p = minimize(lambda v: 0.5 * v[:6] @ v[:6] + C * v[6:] @ v[6:],
                     np.r_[np.zeros(6), np.ones(8)],
                     method="SLSQP", constraints=cons,
                     bounds=[(None, None)] * 6 + [(0, None)] * 8,
                     options={"ftol": 1e-14, "maxiter": 1000})
    assert ref_p.success or ref_p.status == 8  # 8: SLSQP stalls at the optimum (checked below)
    assert primal_objective(prob, w, num_examples=8) == pytest.approx(ref_p.fun, abs=1e-6)
    np.testing.assert_allclose(w, ref_p.x[:6], atol=1e-4)


def test_dcd_bad_c():
    with pytest.raises(ValueError, match="C must be > 0"):
        dcd_solve(DualProblem(3, 0.0), num_examples=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lclr_objective_never_increases(seed):
    task = MatchTask()
    insts, labels = toy_data(40, seed)
    w0 = np.random.default_rng(seed).normal(scale=0.3, size=F_PAIR)
    clf, hist = train_lclr(task, insts, labels, w0=w0, num_features=F_PAIR, C=1.0,
                           tol=0.0, max_outer=6, dcd_tol=1e-9, max_epochs=100000)
    objs = hist["raw_objective"]
    start = hist["objective"][0]
    for prev, cur in zip([start] + objs[:-1], objs):
        assert cur <= prev + 1e-6 * max(1.0, abs(prev))
    for rounds in hist["cutting"]:  # Eq. (5) over growing caches: non-decreasing lower bounds
        assert all(b >= a - 1e-6 for a, b in zip(rounds, rounds[1:]))
    assert hist["cache"] == sorted(hist["cache"])
    assert lclr_objective(task, insts, labels, clf.weights, C=1.0) == pytest.approx(
        hist["objective"][-1])


def test_two_stage_uses_fixed_structures_and_lclr_fits_better():
    task = MatchTask()
    insts, labels = toy_data(60, 7)
    align = np.zeros(F_PAIR)
    align[1] = 1.0  # a uniform heuristic: any maximum matching (ties broken by the solver)
    two = train_two_stage(task, insts, labels, align_weights=align, num_features=F_PAIR, C=1.0)
    for x in insts[:10]:
        h = infer(task, x, align)[0]
        assert np.array_equal(two.structure(x), h)
        cols, vals = structure_features(x, h)
        assert two.score(x) == pytest.approx(float(two.weights[cols] @ vals))
    joint, _ = train_lclr(task, insts, labels, w0=two.weights, num_features=F_PAIR, C=1.0)
    acc = lambda m: np.mean([m.predict(x) == y for x, y in zip(insts, labels)])  # noqa: E731
    assert acc(joint) > acc(two)
    assert joint.explain(insts[0]) == [f"h{s}" for s in np.flatnonzero(joint.structure(insts[0]))]


def test_bad_labels():
    task = MatchTask()
    insts, _ = toy_data(2, 0)
    with pytest.raises(ValueError, match="labels"):
        train_two_stage(task, insts, [2, 0], align_weights=np.zeros(F_PAIR),
                        num_features=F_PAIR)
