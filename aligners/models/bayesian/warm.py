"""`warm_all`: what the compiling child of `jit.py` runs to fill numba's cache."""

from __future__ import annotations

from aligners.models.bayesian.counts import warmup
from aligners.models.bayesian.decode import link_lines
from aligners.models.bayesian.model import BayesAligner, BayesConfig

__all__ = ["warm_all"]


def warm_all() -> None:
    """Compile (and cache) every kernel of `model.exact_kernels` with the argument types of
    a real run: the exact sampler on a 4-pair corpus (both pair-table halves, all three
    stages), its decoding, and `counts.warmup` (the wide-integer variants). Cost: compile
    time only."""
    pairs = [("a b c".split(), "x y z".split()), ("b c".split(), "y z".split()),
             ("a c".split(), "x z".split()), ("c".split(), "z w".split())]
    marg = BayesAligner(BayesConfig(iterations=[1, 1, 2], n_samplers=2)).align(pairs)
    for direction in ("fwd", "rev"):
        for _ in link_lines(marg, heuristic=None, direction=direction):
            pass
    for _ in link_lines(marg, heuristic="grow-diag-final-and", direction="fwd"):
        pass
    warmup()
