"""Binary integer linear programs for constrained latent structures (LCLR), solved by HiGHS.

Shapes: N binary variables h, M linear constraints. `solve_ilp` maximises `scores · h`
subject to `lower <= A h <= upper`, h in {0, 1}^N, through `scipy.optimize.milp` (HiGHS
branch and cut). Cost: exponential in N in the worst case; the structures used here (one-to-one
matchings with linking constraints) are solved at the root node in practice, O(M N) per
LP pivot.

`brute_force_ilp` enumerates all 2^N assignments (N <= 20): the oracle of the tests.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["LinearConstraints", "ILPResult", "solve_ilp", "brute_force_ilp", "feasible"]


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
    """The optimum: `h` (N,) int8 in {0, 1} and `value` = scores · h."""

    h: np.ndarray
    value: float


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


def solve_ilp(scores: np.ndarray, cons: LinearConstraints | None = None, *,
              time_limit: float | None = None, presolve: bool = False) -> ILPResult:
    """argmax_h scores · h s.t. cons, h binary. scores (N,), cons over N variables.

    Cost: one HiGHS MILP (see the module docstring). With no constraints the optimum is
    read off directly (h_s = 1 iff score_s > 0). Raises ValueError for bad shapes, non-finite
    scores or infeasible constraints.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    scores = _check(scores, cons)
    n = scores.shape[0]
    if n == 0:
        if cons is not None and cons.num_constraints and not feasible(np.zeros(0), cons):
            raise ValueError("the constraints are infeasible")
        return ILPResult(np.zeros(0, dtype=np.int8), 0.0)
    if cons is None or cons.num_constraints == 0:
        h = (scores > 0).astype(np.int8)
        return ILPResult(h, float(scores @ h))
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
