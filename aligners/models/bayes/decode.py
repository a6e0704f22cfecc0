"""Links from the averaged marginals of the Bayesian aligner: argmax (NULL included) or
posterior threshold per direction, atools symmetrization, and `i-j:p` posterior lines.

The marginals are sparse (model.TokenMarginals: K slots per observed token plus NULL's
mass). A forward link (i, j) is the most probable value of a_j when it beats NULL; a reverse
link likewise per source word. With a threshold, every (i, j) whose kept marginal in that
direction reaches it is a link. Symmetrized links carry p = (p_fwd + p_rev) / 2 in
`--posteriors` output; each direction carries its own.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligners.models.bayes.model import BayesMarginals
from aligners.symmetrize import symmetrize_corpus

__all__ = ["direction_links", "symmetrized_links", "posterior_lines"]


@njit(nogil=True, cache=True)
def _best(pos, mass, null, threshold, best, prob):
    """Per observed token: the slot position with the largest mass (ties: lower position),
    -1 when it does not beat NULL (or, with threshold >= 0, falls below it); its mass."""
    for t in range(pos.shape[0]):
        b, pb = -1, 0.0
        for s in range(pos.shape[1]):
            g = pos[t, s]
            if g >= 0 and (mass[t, s] > pb or (mass[t, s] == pb and b >= 0 and g < b)):
                b, pb = g, mass[t, s]
        if threshold < 0 and pb <= null[t]:
            b = -1
        best[t] = b
        prob[t] = pb


def direction_links(m: BayesMarginals, direction: str, *,
                    threshold: float | None = None) -> list[set[tuple[int, int]]]:
    """Per sentence, the set of (i, j) source-target links of `direction` ("fwd"/"rev"):
    the argmax of each observed token's averaged marginal when it beats NULL, or with a
    threshold every kept slot whose marginal reaches it.

    Cost O(tokens * K) time and memory (K slots per token).
    """
    rev = direction == "rev"
    c = m.corpus
    tm = m.rev_slots if rev else m.fwd_slots
    obs_off = c.src_off if rev else c.tgt_off
    sent = np.repeat(np.arange(c.n_sentences), np.diff(obs_off))
    x = np.arange(int(obs_off[-1])) - obs_off[sent]
    if threshold is None:
        best = np.empty(len(sent), np.int64)
        prob = np.empty(len(sent), np.float32)
        _best(tm.pos, tm.mass, tm.null, -1.0, best, prob)
        keep = best >= 0
        k, g, xx = sent[keep], best[keep], x[keep]
    else:
        t_idx, slot = np.nonzero((tm.pos >= 0) & (tm.mass >= threshold))
        k, g, xx = sent[t_idx], tm.pos[t_idx, slot].astype(np.int64), x[t_idx]
    ii, jj = (xx, g) if rev else (g, xx)
    out: list[set[tuple[int, int]]] = [set() for _ in range(c.n_sentences)]
    for kk, i, j in zip(k.tolist(), ii.tolist(), jj.tolist(), strict=True):
        out[kk].add((i, j))
    return out


def symmetrized_links(m: BayesMarginals, heuristic: str, *,
                      threshold: float | None = None) -> list[set[tuple[int, int]]]:
    """Both directions' links combined by an atools heuristic (aligners.symmetrize)."""
    return symmetrize_corpus(direction_links(m, "fwd", threshold=threshold),
                             direction_links(m, "rev", threshold=threshold), heuristic)


def _lookup(tm, t: int, g: int) -> float:
    """p(a_t = g) from token t's slots (0 when g holds no slot)."""
    hit = np.flatnonzero(tm.pos[t] == g)
    return float(tm.mass[t, hit[0]]) if len(hit) else 0.0


def posterior_lines(m: BayesMarginals, links: list[set[tuple[int, int]]],
                    direction: str | None = None) -> list[str]:
    """`i-j:p` lines (sorted links); p from `direction`, or the mean of both when None
    (a direction whose token keeps no slot for the link contributes 0)."""
    c = m.corpus
    lines = []
    for k, ls in enumerate(links):
        s0, t0 = int(c.src_off[k]), int(c.tgt_off[k])
        parts = []
        for i, j in sorted(ls):
            f = _lookup(m.fwd_slots, t0 + j, i) if direction != "rev" else 0.0
            r = _lookup(m.rev_slots, s0 + i, j) if direction != "fwd" else 0.0
            p = f if direction == "fwd" else r if direction == "rev" else 0.5 * (f + r)
            parts.append(f"{i}-{j}:{p:.4f}")
        lines.append(" ".join(parts))
    return lines
