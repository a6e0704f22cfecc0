"""Dense views of the Bayesian aligner's sparse state, for tests on small corpora (O(cells)
memory): the link marginals per sentence or in the corpus cell layout, and the per-cell
pair ids of an encoded bitext (the sampler reads pair_lo / pair_hi)."""

from __future__ import annotations

import numpy as np


def cells(m, k: int, direction: str = "fwd") -> np.ndarray:
    """(I, J) float32 link marginals of sentence k of BayesMarginals m for one direction
    (0 where no slot is kept)."""
    c = m.corpus
    i, j = int(c.src_off[k + 1] - c.src_off[k]), int(c.tgt_off[k + 1] - c.tgt_off[k])
    fwd = direction == "fwd"
    tm = m.fwd_slots if fwd else m.rev_slots
    t0 = int(c.tgt_off[k] if fwd else c.src_off[k])
    out = np.zeros((j, i) if fwd else (i, j), np.float32)
    for x in range(len(out)):
        keep = tm.pos[t0 + x] >= 0
        out[x, tm.pos[t0 + x][keep]] = tm.mass[t0 + x][keep]
    return out.T if fwd else out


def dense(m, direction: str = "fwd") -> np.ndarray:
    """(cells,) dense marginals of one direction in the corpus cell layout."""
    return np.concatenate([cells(m, k, direction).ravel()
                           for k in range(m.corpus.n_sentences)] or [np.zeros(0)])


def pair_ids(c) -> np.ndarray:
    """(cells,) int64 pair ids of an EncodedBitext (not folded)."""
    return c.pair_lo.astype(np.int64) | (c.pair_hi.astype(np.int64) << 16)
