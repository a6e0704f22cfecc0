"""Links from the averaged marginals of the Bayesian aligner: argmax (NULL included) or
posterior threshold per direction, atools symmetrization, the two directions' mean posterior
(the default decoding), and `i-j:p` posterior lines.

The marginals are sparse (slots.TokenMarginals: K slots per observed token plus NULL's
mass). A forward link (i, j) is the most probable value of a_j when it beats NULL; a reverse
link likewise per source word. With a threshold, every (i, j) whose kept marginal in that
direction reaches it is a link. Symmetrized links carry p = (p_fwd + p_rev) / 2 in
`--posteriors` output; each direction carries its own.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from aligners.data.pharaoh import link_line
from aligners.models.bayesian.slots import BayesMarginals
from aligners.symmetrize import symmetrize

__all__ = ["token_links", "mean_links", "link_lines"]


@njit(nogil=True, cache=True)
def _best(pos, mass, null, best):
    """Per observed token: the slot position with the largest mass (ties: lower position),
    -1 when it does not beat NULL."""
    for t in range(pos.shape[0]):
        b, pb = -1, 0.0
        for s in range(pos.shape[1]):
            g = pos[t, s]
            if g >= 0 and (mass[t, s] > pb or (mass[t, s] == pb and b >= 0 and g < b)):
                b, pb = g, mass[t, s]
        best[t] = b if pb > null[t] else -1


def token_links(m: BayesMarginals, direction: str, *,
                threshold: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The links of `direction` ("fwd"/"rev") as arrays (sentence, i, j) int32, sorted by
    sentence: the argmax of each observed token's averaged marginal when it beats NULL, or
    with a threshold every kept slot whose marginal reaches it.

    Cost O(tokens * K) time and memory (K slots per token); no per-link Python objects.
    """
    rev = direction == "rev"
    c = m.corpus
    tm = m.rev_slots if rev else m.fwd_slots
    obs_off = c.src_off if rev else c.tgt_off
    if threshold is None:
        best = np.empty(int(obs_off[-1]), np.int32)
        _best(tm.pos, tm.mass, tm.null, best)
        t_idx = np.flatnonzero(best >= 0)
        g = best[t_idx]
        del best
    else:
        t_idx, slot = np.nonzero((tm.pos >= 0) & (tm.mass >= threshold))
        g = tm.pos[t_idx, slot].astype(np.int32)
    sent = (np.searchsorted(obs_off, t_idx, side="right") - 1).astype(np.int32)
    x = (t_idx - obs_off[sent]).astype(np.int32)
    return (sent, x, g) if rev else (sent, g, x)


@njit(inline="always", cache=True)
def _add_slots(buf, pos, mass, t0, n_tok, tok_stride, pos_stride):
    """buf[x * tok_stride + pos * pos_stride] += mass for every kept slot of the n_tok tokens
    from t0 (x: the token's place in its sentence)."""
    for x in range(n_tok):
        for s in range(pos.shape[1]):
            g = pos[t0 + x, s]
            if g >= 0:
                buf[x * tok_stride + g * pos_stride] += mass[t0 + x, s]


@njit(nogil=True, cache=True)
def _mean_kernel(src_off, tgt_off, fpos, fmass, rpos, rmass, threshold, sent, ii, jj):
    """Per sentence, the dense I x J sum of the forward slots (per target token: source
    positions) and the reverse slots (per source token: target positions); cells whose sum
    exceeds 2 * threshold are written to sent/ii/jj in (i, j) order. Returns their number.
    Cost O(sum_k I_k J_k + tokens * K); one buffer of the longest pair's cells."""
    n = src_off.shape[0] - 1
    big = 1
    for k in range(n):
        big = max(big, (src_off[k + 1] - src_off[k]) * (tgt_off[k + 1] - tgt_off[k]))
    buf = np.zeros(big, np.float32)
    out = 0
    for k in range(n):
        n_i, n_j = src_off[k + 1] - src_off[k], tgt_off[k + 1] - tgt_off[k]
        _add_slots(buf, fpos, fmass, tgt_off[k], n_j, 1, n_j)  # cell (g, j): g * n_j + j
        _add_slots(buf, rpos, rmass, src_off[k], n_i, n_j, 1)  # cell (i, g): i * n_j + g
        for c in range(n_i * n_j):
            if buf[c] > 2.0 * threshold:
                sent[out], ii[out], jj[out] = k, c // n_j, c % n_j
                out += 1
            buf[c] = 0.0
    return out


def mean_links(m: BayesMarginals, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The links whose mean of the two directions' kept marginals exceeds `threshold`, as
    arrays (sentence, i, j) int32 sorted by sentence, i, j (see the module doc)."""
    c = m.corpus
    cap = m.fwd_slots.pos.size + m.rev_slots.pos.size
    sent, ii, jj = (np.empty(cap, np.int32) for _ in range(3))
    n = _mean_kernel(c.src_off, c.tgt_off, m.fwd_slots.pos, m.fwd_slots.mass,
                     m.rev_slots.pos, m.rev_slots.mass, float(threshold), sent, ii, jj)
    return sent[:n], ii[:n], jj[:n]


def _per_sentence(links, lo: int, hi: int):
    """Yield, per sentence lo..hi-1, its links as a list of (i, j) (link arrays (sentence,
    i, j) sorted by sentence)."""
    sent, i, j = links
    bounds = np.searchsorted(sent, np.arange(lo, hi + 1))
    a = int(bounds[0])
    ii, jj = i[a:bounds[-1]].tolist(), j[a:bounds[-1]].tolist()
    for b, e in zip((bounds[:-1] - a).tolist(), (bounds[1:] - a).tolist(), strict=True):
        yield list(zip(ii[b:e], jj[b:e], strict=True))


def link_lines(m: BayesMarginals, *, heuristic: str | None = None, direction: str = "fwd",
               threshold: float | None = None, posteriors: bool = False,
               mean: float | None = None, span: tuple[int, int] | None = None):
    """Yield one output line per sentence (of `span` = [start, end) when given): `direction`'s
    links, or (with `heuristic`) both directions symmetrized, or (with `mean`, a threshold)
    the mean decoding's links; `i-j` or, with posteriors, `i-j:p` (see `_posterior_line`).

    Streams: per-link Python objects exist for one sentence at a time. Cost O(tokens * K).
    """
    lo, hi = span if span is not None else (0, m.corpus.n_sentences)
    if mean is not None:
        for k, links in enumerate(_per_sentence(mean_links(m, mean), lo, hi), lo):
            yield _posterior_line(m, k, links, None) if posteriors else link_line(links)
        return
    dirs = [direction] if heuristic is None else ["fwd", "rev"]
    sources = [_per_sentence(token_links(m, d, threshold=threshold), lo, hi) for d in dirs]
    for k, parts in enumerate(zip(*sources, strict=True), lo):
        links = set(parts[0]) if heuristic is None else symmetrize(parts[0], parts[1],
                                                                   heuristic)
        if posteriors:
            yield _posterior_line(m, k, links, None if heuristic else direction)
        else:
            yield link_line(sorted(links))


def _slot_dict(tm, t: int) -> dict[int, float]:
    return {int(g): float(p) for g, p in zip(tm.pos[t], tm.mass[t], strict=True) if g >= 0}


def _posterior_line(m: BayesMarginals, k: int, links, direction: str | None) -> str:
    c = m.corpus
    s0, t0 = int(c.src_off[k]), int(c.tgt_off[k])
    fwd, rev = {}, {}
    links, probs = sorted(links), []
    for i, j in links:
        p = 0.0
        if direction != "rev":
            if j not in fwd:
                fwd[j] = _slot_dict(m.fwd_slots, t0 + j)
            p += fwd[j].get(i, 0.0)
        if direction != "fwd":
            if i not in rev:
                rev[i] = _slot_dict(m.rev_slots, s0 + i)
            p += rev[i].get(j, 0.0)
        probs.append(p if direction else 0.5 * p)
    return link_line(links, probs)
