"""Binary integer linear programs for constrained latent structures (LCLR), solved by HiGHS.

`solve_ilp` maximises `scores · h` subject to `lower <= A h <= upper`, h in {0, 1}^N (M
constraints). Method "lp_first" (highspy): the LP relaxation first; an integral vertex is
the ILP optimum, else the model is re-solved by HiGHS branch and cut (the matchings here are
almost always integral: ~10x less CPU than the MILP). Method "milp": `scipy.optimize.milp`
(also the fallback without highspy). `brute_force_ilp` (N <= 20) is the tests' oracle.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["LinearConstraints", "ILPResult", "solve_ilp", "brute_force_ilp", "feasible",
           "METHODS"]

METHODS = ("lp_first", "milp")


@dataclass(frozen=True)
class LinearConstraints:
    """`lower <= A h <= upper` over N binary variables: A (M, N) sparse, lower/upper (M,).

    Use -inf / +inf for one-sided rows. Build with `LinearConstraints.from_rows`.
    """

    A: sp.csr_matrix
    lower: np.ndarray
    upper: np.ndarray

    @property
    def num_variables(self) -> int:
        return self.A.shape[1]

    @property
    def num_constraints(self) -> int:
        return self.A.shape[0]

    @staticmethod
    def from_rows(rows: list[tuple[dict[int, float], float, float]], *,
                  num_variables: int) -> LinearConstraints:
        """Rows `({var: coef}, lower, upper)` -> constraints over `num_variables` variables.

        Cost: O(total coefficients). Raises ValueError for a variable index out of range or
        a row with lower > upper.
        """
        data, ri, ci = [], [], []
        lo = np.empty(len(rows))
        up = np.empty(len(rows))
        for r, (coefs, a, b) in enumerate(rows):
            if a > b:
                raise ValueError(f"constraint row {r}: lower {a} > upper {b}")
            for v, c in coefs.items():
                if not 0 <= v < num_variables:
                    raise ValueError(f"constraint row {r}: variable {v} out of range "
                                     f"[0, {num_variables})")
                data.append(float(c))
                ri.append(r)
                ci.append(v)
            lo[r], up[r] = a, b
        A = sp.csr_matrix((data, (ri, ci)), shape=(len(rows), num_variables))
        return LinearConstraints(A, lo, up)


@dataclass(frozen=True)
class ILPResult:
    """The optimum: `h` (N,) int8 in {0, 1} and `value` = scores · h; `lp_integral`: the LP
    relaxation's vertex was already integral (no branch and cut ran)."""

    h: np.ndarray
    value: float
    lp_integral: bool = False


def _check(scores: np.ndarray, cons: LinearConstraints | None) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1:
        raise ValueError(f"scores must be a vector (N,), got shape {scores.shape}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite (found NaN or inf)")
    if cons is not None:
        if cons.A.shape[1] != scores.shape[0]:
            raise ValueError(f"constraints are over {cons.A.shape[1]} variables but scores "
                             f"has {scores.shape[0]}")
        if cons.lower.shape != (cons.A.shape[0],) or cons.upper.shape != (cons.A.shape[0],):
            raise ValueError("constraint bounds must have one entry per row of A")
        if np.any(cons.lower > cons.upper):
            raise ValueError("a constraint has lower > upper")
    return scores


def feasible(h: np.ndarray, cons: LinearConstraints | None, *, tol: float = 1e-9) -> bool:
    """True when binary `h` (N,) satisfies every constraint. Cost: O(nnz(A))."""
    if cons is None or cons.num_constraints == 0:
        return True
    ah = cons.A @ np.asarray(h, dtype=np.float64)
    return bool(np.all(ah >= cons.lower - tol) and np.all(ah <= cons.upper + tol))


# one reusable highspy.Highs per process (created on first use; not for concurrent threads)
_HIGHS: list = []


def _highs():
    """The process's Highs object, or None when highspy is not installed."""
    if not _HIGHS:
        try:
            import highspy
        except ImportError:
            _HIGHS.append(None)
        else:
            import os
            import sys

            sys.stdout.flush()  # HiGHS prints a banner on stdout when constructed: silence it
            try:
                saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
            except OSError:  # no file descriptor 1: nothing to silence
                h = highspy.Highs()
            else:
                os.dup2(null, 1)
                try:
                    h = highspy.Highs()
                finally:
                    os.dup2(saved, 1)
                    os.close(saved)
                    os.close(null)
            h.setOptionValue("output_flag", False)
            h.setOptionValue("presolve", "off")
            h.setOptionValue("mip_rel_gap", 0.0)
            # one thread: HiGHS's worker pool (started by the first MILP) does not survive
            # fork, and a forked child then hangs in its next solve; these ILPs are tiny
            h.setOptionValue("threads", 1)
            _HIGHS.append((highspy, h))
    return _HIGHS[0]


def _solve_highs(scores: np.ndarray, cons: LinearConstraints, time_limit: float | None,
                 presolve: bool) -> ILPResult:
    highspy, h = _highs()
    n, m = scores.shape[0], cons.num_constraints
    A = cons.A.tocsr()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = -scores
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.ones(n)
    inf = highspy.kHighsInf
    lp.row_lower_ = np.where(np.isfinite(cons.lower), cons.lower, -inf)
    lp.row_upper_ = np.where(np.isfinite(cons.upper), cons.upper, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    h.setOptionValue("time_limit", float(time_limit) if time_limit is not None else inf)
    h.setOptionValue("presolve", "on" if presolve else "off")
    h.passModel(lp)
    h.run()
    st = h.getModelStatus()
    if st == highspy.HighsModelStatus.kInfeasible:
        raise ValueError("the constraints are infeasible")
    if st == highspy.HighsModelStatus.kOptimal:
        x = np.asarray(h.getSolution().col_value)
        hx = np.rint(x).astype(np.int8)
        if np.all(np.abs(x - hx) <= 1e-7) and feasible(hx, cons, tol=1e-6):
            return ILPResult(hx, float(scores @ hx), lp_integral=True)
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32),
                            np.full(n, highspy.HighsVarType.kInteger))
    h.run()
    st = h.getModelStatus()
    if st == highspy.HighsModelStatus.kInfeasible:
        raise ValueError("the constraints are infeasible")
    if st != highspy.HighsModelStatus.kOptimal:
        raise ValueError(f"HiGHS did not solve the ILP: {h.modelStatusToString(st)}")
    hx = np.rint(np.asarray(h.getSolution().col_value)).astype(np.int8)
    assert feasible(hx, cons, tol=1e-6), "HiGHS returned an infeasible point"
    return ILPResult(hx, float(scores @ hx))


def solve_ilp(scores: np.ndarray, cons: LinearConstraints | None = None, *,
              time_limit: float | None = None, presolve: bool = False,
              method: str = "lp_first") -> ILPResult:
    """argmax_h scores · h s.t. cons, h binary. scores (N,), cons over N variables.

    Cost: one HiGHS LP, plus one MILP on a fractional vertex ("lp_first"), or one MILP
    ("milp"). No constraints: h_s = 1 iff score_s > 0. ValueError for bad shapes, non-finite
    scores, infeasible constraints or an unknown method.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    scores = _check(scores, cons)
    n = scores.shape[0]
    if n == 0:
        if cons is not None and cons.num_constraints and not feasible(np.zeros(0), cons):
            raise ValueError("the constraints are infeasible")
        return ILPResult(np.zeros(0, dtype=np.int8), 0.0)
    if cons is None or cons.num_constraints == 0:
        h = (scores > 0).astype(np.int8)
        return ILPResult(h, float(scores @ h))
    if method == "lp_first" and _highs() is not None:
        return _solve_highs(scores, cons, time_limit, presolve)
    # presolve off: on these small matching ILPs it costs more than it saves (MSRP: 3.8 vs
    # 5.9 ms of CPU per pair, benchmarks/lclr.py)
    # mip_rel_gap 0: the exact optimum (HiGHS's default 1e-4 gap may stop slightly short)
    options = {"disp": False, "presolve": bool(presolve), "mip_rel_gap": 0.0}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    res = milp(-scores, integrality=np.ones(n), bounds=Bounds(0, 1),
               constraints=LinearConstraint(cons.A, cons.lower, cons.upper), options=options)
    if res.status == 2:
        raise ValueError("the constraints are infeasible")
    if res.x is None or res.status not in (0,):
        raise ValueError(f"HiGHS did not solve the ILP: {res.message}")
    h = np.rint(res.x).astype(np.int8)
    assert feasible(h, cons, tol=1e-6), "HiGHS returned an infeasible point"
    return ILPResult(h, float(scores @ h))


def brute_force_ilp(scores: np.ndarray, cons: LinearConstraints | None = None) -> ILPResult:
    """The oracle: enumerate all 2^N binary h (N <= 20). Ties go to the first in
    lexicographic order. Raises ValueError when N > 20 or nothing is feasible."""
    scores = _check(scores, cons)
    n = scores.shape[0]
    if n > 20:
        raise ValueError(f"brute force is limited to 20 variables, got {n}")
    best = None
    for bits in itertools.product((0, 1), repeat=n):
        h = np.array(bits, dtype=np.int8)
        if not feasible(h, cons):
            continue
        v = float(scores @ h)
        if best is None or v > best.value + 1e-12:
            best = ILPResult(h, v)
    if best is None:
        raise ValueError("the constraints are infeasible")
    return best
