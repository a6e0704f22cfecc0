"""LCLR task: transliteration discovery (Chang et al. 2010, section 5.1).

Shapes: an English word e (I characters, lowercased) and a candidate word t in another script
(J characters). Variables h_ij (N = I*J, index i*J + j): character e_i maps to t_j.
Constraints (Chang et al. 2009): one-to-one (each character in at most one mapping) and
non-crossing (i < k and j > m never both mapped) -- O(I^2 J^2) ILP rows.
Features of h_ij: the unigram mapping (e_i, t_j), the bigram mappings with the neighbouring
character on either side ((e_{i-1} e_i, t_j), (e_i e_{i+1}, t_j), (e_i, t_{j-1} t_j),
(e_i, t_j t_{j+1})) and a constant "map" feature; optionally (`romanization_feature`) a
"rom" indicator of the two-stage system's Romanization-table mappings, so that LCLR sees the
same prior knowledge as a feature; constant features of x: a bias and the total length
(I + J) / 10 (so that u can price unmapped characters).

Inference: the feasible set is a monotone matching, so besides the generic HiGHS ILP
(`solver="ilp"`) an exact O(I J) dynamic program (`solver="dp"`, the default for ranking)
gives the same optimum; `tests/test_lclr_transliteration.py` checks the two against each
other and against brute force.
"""

from __future__ import annotations

import numba
import numpy as np

from aligners.ilp import LinearConstraints
from aligners.models.lclr.model import FeatureIndex, LatentInstance, LatentTask

__all__ = ["ROMANIZATION", "TransliterationTask", "monotone_matching", "rank_candidates",
           "grid_ranks"]

# Hebrew letter -> English letters that commonly transcribe it (the two-stage system's fixed
# "Romanization table" weights, as in Chang et al. 2009; vowels are written by matres lectionis).
ROMANIZATION: dict[str, str] = {
    "א": "aeiou", "ב": "bv", "ג": "gj", "ד": "d", "ה": "hae", "ו": "vwou", "ז": "zs",
    "ח": "hc", "ט": "t", "י": "yieja", "כ": "kc", "ך": "kc", "ל": "l", "מ": "m", "ם": "m",
    "נ": "n", "ן": "n", "ס": "scx", "ע": "aeo", "פ": "pf", "ף": "pf", "צ": "ztcs",
    "ץ": "ztcs", "ק": "kqcx", "ר": "r", "ש": "s", "ת": "t",
}


@numba.njit(cache=False)
def _dp(scores):
    n1, n2 = scores.shape
    best = np.zeros((n1 + 1, n2 + 1))
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            v = max(best[i - 1, j], best[i, j - 1])
            best[i, j] = max(v, best[i - 1, j - 1] + scores[i - 1, j - 1])
    h = np.zeros((n1, n2), dtype=np.int8)
    i, j = n1, n2
    while i > 0 and j > 0:
        if best[i, j] == best[i - 1, j]:
            i -= 1
        elif best[i, j] == best[i, j - 1]:
            j -= 1
        else:
            h[i - 1, j - 1] = 1
            i -= 1
            j -= 1
    return h


def monotone_matching(scores: np.ndarray) -> np.ndarray:
    """Max-weight one-to-one non-crossing matching: scores (I, J) -> h (I, J) int8.

    Cost: O(I J) time and memory. Only positive-score mappings are ever chosen.
    """
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError(f"scores must be (I, J), got shape {scores.shape}")
    if scores.size == 0:
        return np.zeros(scores.shape, dtype=np.int8)
    return _dp(scores)


class TransliterationTask(LatentTask):
    """Character-mapping variables with one-to-one and non-crossing constraints."""

    name = "transliteration"

    def __init__(self, features: FeatureIndex | None = None, *, solver: str = "dp",
                 romanization_feature: bool = False):
        if solver not in ("dp", "ilp"):
            raise ValueError(f"solver must be 'dp' or 'ilp', got {solver!r}")
        self.features = features if features is not None else FeatureIndex()
        self.solver = solver
        self.romanization_feature = bool(romanization_feature)

    def config(self) -> dict:
        return {"solver": self.solver, "romanization_feature": self.romanization_feature}

    @staticmethod
    def normalise(word: str) -> str:
        return "".join(word.lower().split())

    def instance(self, source: str, target: str) -> LatentInstance:
        """Featurise (source, target). Cost: O(I J) dictionary look-ups."""
        e, t = self.normalise(source), self.normalise(target)
        if not e or not t:
            raise ValueError(f"empty name in pair ({source!r}, {target!r})")
        index = self.features.index
        ep, tp = f"^{e}$", f"^{t}$"
        rows, cols = [], []
        mapped = index("map")
        rom = index("rom") if self.romanization_feature else -1
        for i, a in enumerate(e):
            left, right = ep[i: i + 2], ep[i + 1: i + 3]
            for j, b in enumerate(t):
                s = i * len(t) + j
                for name in (f"u|{a}|{b}", f"el|{left}|{b}", f"er|{right}|{b}",
                             f"tl|{a}|{tp[j: j + 2]}", f"tr|{a}|{tp[j + 1: j + 3]}"):
                    c = index(name)
                    if c >= 0:
                        rows.append(s)
                        cols.append(c)
                rows.append(s)
                cols.append(mapped)
                if rom >= 0 and a in ROMANIZATION.get(b, ""):
                    rows.append(s)
                    cols.append(rom)
        base_cols = np.array([index("bias"), index("len")], dtype=np.int64)
        base_vals = np.array([1.0, (len(e) + len(t)) / 10.0])
        return LatentInstance(len(e) * len(t), np.array(rows, dtype=np.int64),
                              np.array(cols, dtype=np.int64), np.ones(len(rows)),
                              base_cols, base_vals, {"source": e, "target": t})

    def constraints(self, inst: LatentInstance) -> LinearConstraints:
        n1, n2 = len(inst.meta["source"]), len(inst.meta["target"])
        rows = [({i * n2 + j: 1.0 for j in range(n2)}, -np.inf, 1.0) for i in range(n1)]
        rows += [({i * n2 + j: 1.0 for i in range(n1)}, -np.inf, 1.0) for j in range(n2)]
        for i in range(n1):
            for k in range(i + 1, n1):
                for j in range(1, n2):
                    for m in range(j):
                        rows.append(({i * n2 + j: 1.0, k * n2 + m: 1.0}, -np.inf, 1.0))
        return LinearConstraints.from_rows(rows, num_variables=n1 * n2)

    def solve(self, inst: LatentInstance, scores: np.ndarray) -> np.ndarray:
        if self.solver == "ilp":
            return super().solve(inst, scores)
        n1, n2 = len(inst.meta["source"]), len(inst.meta["target"])
        return monotone_matching(np.asarray(scores).reshape(n1, n2)).reshape(-1)

    def variable_names(self, inst: LatentInstance) -> list[str]:
        e, t = inst.meta["source"], inst.meta["target"]
        return [f"{i}:{a}-{j}:{b}" for i, a in enumerate(e) for j, b in enumerate(t)]

    def romanization_weights(self) -> np.ndarray:
        """The two-stage alignment weights: 1 on unigram mappings in `ROMANIZATION`, else 0.
        Grows the feature index with those names. Shape (F,)."""
        ids = [self.features.index(f"u|{en}|{he}") for he, ens in ROMANIZATION.items()
               for en in ens]
        w = np.zeros(len(self.features))
        w[[i for i in ids if i >= 0]] = 1.0
        return w


def rank_candidates(clf, sources: list[str], candidates: list[str], *,
                    distractors: list[str] = ()) -> np.ndarray:
    """Rank of the right candidate for each source: candidates[k] is the answer of
    sources[k], `distractors` (D) are extra wrong candidates for every source; shapes S
    sources, S candidates -> ranks (S,) int, 1 = best. Ties count against the answer
    (rank = 1 + #other candidates scoring >= it). Cost: S (S + D) inferences."""
    if len(sources) != len(candidates):
        raise ValueError("need exactly one answer candidate per source")
    pool = list(candidates) + list(distractors)
    return grid_ranks(clf, ([clf.task.instance(src, c) for c in pool] for src in sources))


def grid_ranks(clf, grid) -> np.ndarray:
    """`rank_candidates` over built instances: row k of `grid` (an iterable of rows) holds
    source k against the pool, its answer at k. Ranks (S,) int; one inference an instance."""
    ranks = []
    for k, row in enumerate(grid):
        s = np.array([clf.score(x) for x in row])
        ranks.append(1 + int(np.sum(np.delete(s, k) >= s[k])))
    return np.array(ranks, dtype=np.int64)
