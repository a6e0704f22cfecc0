"""A synthetic bitext for the word-alignment tests (no data files needed)."""

import numpy as np

__all__ = ["toy_corpus"]


def toy_corpus(n=60, seed=0):
    """Synthetic bitext: target = a word-by-word translation with local swaps and fillers."""
    rng = np.random.default_rng(seed)
    lex = {f"s{k}": f"t{k}" for k in range(12)}
    src, tgt = [], []
    for _ in range(n):
        s = [f"s{k}" for k in rng.integers(0, 12, size=rng.integers(2, 7))]
        t = [lex[w] for w in s]
        if len(t) > 2 and rng.random() < 0.5:
            k = int(rng.integers(0, len(t) - 1))
            t[k], t[k + 1] = t[k + 1], t[k]
        if rng.random() < 0.3:
            t.insert(int(rng.integers(0, len(t) + 1)), "filler")
        src.append(s)
        tgt.append(t)
    return src, tgt
