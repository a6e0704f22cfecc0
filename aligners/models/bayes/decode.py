"""Links from the averaged marginals of the Bayesian aligner: argmax (NULL included) or
posterior threshold per direction, atools symmetrization, and `i-j:p` posterior lines.

A forward link (i, j) is the most probable value of a_j when it beats NULL (mass
1 - sum_i p(a_j = i)); a reverse link likewise per source word. With a threshold, every
(i, j) whose marginal in that direction reaches it is a link. Symmetrized links carry
p = (p_fwd + p_rev) / 2 in `--posteriors` output; each direction carries its own.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligners.models.bayes.model import BayesMarginals
from aligners.symmetrize import symmetrize_corpus

__all__ = ["direction_links", "symmetrized_links", "posterior_lines"]


@njit(nogil=True, cache=True)
def _argmax(src_off, tgt_off, cell_off, marg, rev, best, prob):
    """Per observed token: best generator position (-1 = NULL) and its probability."""
    n = len(src_off) - 1
    t = 0
    for k in range(n):
        n_src = src_off[k + 1] - src_off[k]
        n_tgt = tgt_off[k + 1] - tgt_off[k]
        n_obs, n_gen = (n_src, n_tgt) if rev else (n_tgt, n_src)
        co = cell_off[k]
        for x in range(n_obs):
            b, pb, tot = -1, 0.0, 0.0
            for g in range(n_gen):
                c = co + (x * n_gen + g if rev else g * n_obs + x)
                p = marg[c]
                tot += p
                if p > pb:
                    b, pb = g, p
            if pb <= 1.0 - tot:
                b = -1
            best[t] = b
            prob[t] = pb
            t += 1


def direction_links(m: BayesMarginals, direction: str, *,
                    threshold: float | None = None) -> list[set[tuple[int, int]]]:
    """Per sentence, the set of (i, j) source-target links of `direction` ("fwd"/"rev").

    Cost O(cells) time; O(tokens) extra memory.
    """
    rev = direction == "rev"
    c = m.corpus
    marg = m.rev if rev else m.fwd
    out: list[set[tuple[int, int]]] = []
    if threshold is not None:
        for k in range(c.n_sentences):
            ii, jj = np.nonzero(m.cells(k, direction) >= threshold)
            out.append(set(zip(ii.tolist(), jj.tolist(), strict=True)))
        return out
    obs_off = c.src_off if rev else c.tgt_off
    best = np.empty(int(obs_off[-1]), np.int32)
    prob = np.empty(int(obs_off[-1]), np.float32)
    _argmax(c.src_off, c.tgt_off, c.cell_off, marg, rev, best, prob)
    bl = best.tolist()
    for k in range(c.n_sentences):
        links = set()
        for x in range(int(obs_off[k]), int(obs_off[k + 1])):
            g = bl[x]
            if g >= 0:
                pos = x - int(obs_off[k])
                links.add((pos, g) if rev else (g, pos))
        out.append(links)
    return out


def symmetrized_links(m: BayesMarginals, heuristic: str, *,
                      threshold: float | None = None) -> list[set[tuple[int, int]]]:
    """Both directions' links combined by an atools heuristic (aligners.symmetrize)."""
    return symmetrize_corpus(direction_links(m, "fwd", threshold=threshold),
                             direction_links(m, "rev", threshold=threshold), heuristic)


def posterior_lines(m: BayesMarginals, links: list[set[tuple[int, int]]],
                    direction: str | None = None) -> list[str]:
    """`i-j:p` lines (sorted links); p from `direction`, or the mean of both when None."""
    lines = []
    for k, ls in enumerate(links):
        f = m.cells(k, "fwd")
        r = m.cells(k, "rev")
        parts = []
        for i, j in sorted(ls):
            if direction == "fwd":
                p = f[i, j]
            elif direction == "rev":
                p = r[i, j]
            else:
                p = 0.5 * (f[i, j] + r[i, j])
            parts.append(f"{i}-{j}:{float(p):.4f}")
        lines.append(" ".join(parts))
    return lines
