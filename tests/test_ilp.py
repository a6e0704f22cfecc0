"""ILP inference (aligners.ilp): HiGHS optimum == brute-force enumeration."""

import numpy as np
import pytest

from aligners.ilp import LinearConstraints, brute_force_ilp, feasible, solve_ilp


def _matching(n1: int, n2: int, *, noncrossing: bool) -> LinearConstraints:
    """One-to-one (each side at most one link) [+ non-crossing] over n1*n2 link variables."""
    var = {(i, j): i * n2 + j for i in range(n1) for j in range(n2)}
    rows = [({var[i, j]: 1.0 for j in range(n2)}, -np.inf, 1.0) for i in range(n1)]
    rows += [({var[i, j]: 1.0 for i in range(n1)}, -np.inf, 1.0) for j in range(n2)]
    if noncrossing:
        for i in range(n1):
            for k in range(i + 1, n1):
                for j in range(n2):
                    for m in range(j):
                        rows.append(({var[i, j]: 1.0, var[k, m]: 1.0}, -np.inf, 1.0))
    return LinearConstraints.from_rows(rows, num_variables=n1 * n2)


def _graph_alignment() -> tuple[int, LinearConstraints]:
    """The paper's eqs (6)-(11) on a 2+2-word pair with one edge each: 4 word maps,
    2+2 word deletions, 1 edge map, 1+1 edge deletions = 11 variables."""
    wm = {(a, b): a * 2 + b for a in range(2) for b in range(2)}
    d1, d2 = {0: 4, 1: 5}, {0: 6, 1: 7}
    em, ed1, ed2 = 8, 9, 10
    rows = [({**{wm[a, b]: 1.0 for b in range(2)}, d1[a]: 1.0}, 1.0, 1.0) for a in range(2)]
    rows += [({**{wm[a, b]: 1.0 for a in range(2)}, d2[b]: 1.0}, 1.0, 1.0) for b in range(2)]
    rows += [({em: 1.0, ed1: 1.0}, 1.0, 1.0), ({em: 1.0, ed2: 1.0}, 1.0, 1.0)]
    rows += [({wm[0, 0]: 1.0, wm[1, 1]: 1.0, em: -1.0}, -np.inf, 1.0),
             ({wm[0, 0]: 1.0, em: -1.0}, 0.0, np.inf), ({wm[1, 1]: 1.0, em: -1.0}, 0.0, np.inf)]
    return 11, LinearConstraints.from_rows(rows, num_variables=11)


@pytest.mark.parametrize("seed", range(12))
def test_matching_optimum_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n1, n2 = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    cons = _matching(n1, n2, noncrossing=bool(seed % 2))
    scores = rng.normal(size=n1 * n2)
    got, want = solve_ilp(scores, cons), brute_force_ilp(scores, cons)
    assert got.value == pytest.approx(want.value, abs=1e-9)
    assert feasible(got.h, cons)
    assert got.value == pytest.approx(float(scores @ got.h))


@pytest.mark.parametrize("seed", range(8))
def test_graph_alignment_equals_brute_force_and_holds_constraints(seed):
    rng = np.random.default_rng(100 + seed)
    n, cons = _graph_alignment()
    scores = rng.normal(size=n)
    got, want = solve_ilp(scores, cons), brute_force_ilp(scores, cons)
    assert got.value == pytest.approx(want.value, abs=1e-9)
    assert feasible(got.h, cons)
    h = got.h
    assert h[0] + h[1] + h[4] == 1  # word 0 of G1 mapped once or deleted (eq. 6)
    assert h[8] <= h[0] and h[8] <= h[3]  # the edge map needs both word maps (eq. 11)


def test_unconstrained_and_empty():
    s = np.array([1.0, -2.0, 0.5])
    assert solve_ilp(s).h.tolist() == [1, 0, 1]
    assert solve_ilp(np.zeros(0)).value == 0.0


def test_bad_input_clear_errors():
    cons = _matching(2, 2, noncrossing=False)
    with pytest.raises(ValueError, match="over 4 variables but scores has 3"):
        solve_ilp(np.ones(3), cons)
    with pytest.raises(ValueError, match="finite"):
        solve_ilp(np.array([1.0, np.nan, 0.0, 0.0]), cons)
    with pytest.raises(ValueError, match="vector"):
        solve_ilp(np.ones((2, 2)), cons)
    infeasible = LinearConstraints.from_rows([({0: 1.0, 1: 1.0}, 3.0, 3.0)], num_variables=2)
    with pytest.raises(ValueError, match="infeasible"):
        solve_ilp(np.ones(2), infeasible)
    with pytest.raises(ValueError, match="infeasible"):
        brute_force_ilp(np.ones(2), infeasible)
    with pytest.raises(ValueError, match="out of range"):
        LinearConstraints.from_rows([({5: 1.0}, 0.0, 1.0)], num_variables=2)
    with pytest.raises(ValueError, match="lower"):
        LinearConstraints.from_rows([({0: 1.0}, 2.0, 1.0)], num_variables=2)


def _odd_cycle() -> LinearConstraints:
    """x0+x1 <= 1, x1+x2 <= 1, x0+x2 <= 1: the LP relaxation's optimum (1/2, 1/2, 1/2)
    is fractional for equal positive scores, so "lp_first" must fall back to branch and cut."""
    rows = [({0: 1.0, 1: 1.0}, -np.inf, 1.0), ({1: 1.0, 2: 1.0}, -np.inf, 1.0),
            ({0: 1.0, 2: 1.0}, -np.inf, 1.0)]
    return LinearConstraints.from_rows(rows, num_variables=3)


def test_lp_first_falls_back_to_branch_and_cut_on_a_fractional_vertex():
    pytest.importorskip("highspy")
    cons = _odd_cycle()
    got = solve_ilp(np.ones(3), cons)
    assert got.value == pytest.approx(1.0) and feasible(got.h, cons)
    assert not got.lp_integral  # the LP vertex (1/2, 1/2, 1/2) was rejected
    easy = solve_ilp(np.array([1.0, -1.0, -1.0]), cons)
    assert easy.lp_integral and easy.h.tolist() == [1, 0, 0]
    # the same Highs object solves an LP again after a MILP
    assert solve_ilp(np.ones(3), cons).value == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(10))
def test_methods_agree_with_brute_force(seed, monkeypatch):
    """lp_first (highspy), milp (scipy) and lp_first without highspy (scipy fallback)."""
    from aligners import ilp
    rng = np.random.default_rng(200 + seed)
    cases = [_odd_cycle(), _graph_alignment()[1], _matching(3, 3, noncrossing=True)]
    for cons in cases:
        scores = rng.normal(size=cons.num_variables) + (seed % 3 == 0)
        want = brute_force_ilp(scores, cons).value
        for method in ilp.METHODS:
            got = solve_ilp(scores, cons, method=method)
            assert got.value == pytest.approx(want, abs=1e-9) and feasible(got.h, cons)
        monkeypatch.setattr(ilp, "_HIGHS", [None])
        got = solve_ilp(scores, cons)
        assert got.value == pytest.approx(want, abs=1e-9) and not got.lp_integral
        monkeypatch.undo()


def test_unknown_method():
    with pytest.raises(ValueError, match="method must be one of"):
        solve_ilp(np.ones(3), _odd_cycle(), method="greedy")


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_solves_after_the_parent_ran_branch_and_cut():
    """HiGHS runs single-threaded: a worker pool started by a MILP would not survive fork and
    the child's next solve would hang (seen with 2 benchmark worker processes)."""
    import os
    import signal
    import time
    pytest.importorskip("highspy")
    cons = _odd_cycle()
    assert not solve_ilp(np.ones(3), cons).lp_integral  # the parent ran branch and cut
    pid = os.fork()
    if pid == 0:  # child: exit 0 iff both solves are right
        ok = (solve_ilp(np.ones(3), cons).value == 1.0
              and solve_ilp(np.array([1.0, -1.0, -1.0]), cons).value == 1.0)
        os._exit(0 if ok else 1)
    for _ in range(300):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung in HiGHS")
