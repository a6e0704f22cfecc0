"""Explicit scaled forward-backward of the phrasal HSMM lattice on CPU (numba), per item.

Input: `SparsePhrasalPotentials` (one-word segments (B,J,I), listed longer ones as rows
(M,I)); output: log Z (B,) and the posteriors in the same layout. Cost O(B J (I^2 + P) +
M I) time, O(J (L I + P)) extra memory per item; float64 inside. The exit masses are
normalised at every n by c_n, C[n] = sum of log c_m (m < n); a posterior is entry(s) *
emission * backward(e) * exp(C[s] - C[e + 1]). Scores below -700 are probability 0.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["phrasal_forward_backward"]

_NEG = -700.0  # below it a log score is probability 0 (`phrasal_hsmm.to_sparse` drops such rows)


@njit(inline="always", cache=True, error_model="numpy")
def _p(x):
    """exp(x), or 0 for a score below _NEG."""
    return np.exp(x) if x > _NEG else 0.0


@njit(cache=True, error_model="numpy")
def _probabilities(ew, se, sn, sk, en, ep, jump, nstay, pw, pfirst, plast, Ib, Jb, L):
    """The item's potentials exponentiated once (0 = never scored): jumps A (I,I), NULL stays
    (I,), the valid phrases pv (P,) and their weights (P,), emissions E (J,L,I) (has[n, lk]:
    a segment of length lk + 1 ending at n is listed; the others are skipped: exact), NULL
    (J,) and phrase (J,P) emissions."""
    P = ep.shape[1]
    A = np.zeros((Ib, Ib))
    for k in range(Ib):
        for i in range(Ib):
            A[k, i] = _p(jump[k, i])
    ns = np.zeros(Ib)
    for k in range(Ib):
        ns[k] = _p(nstay[k])
    pv = np.zeros(P, dtype=np.bool_)
    PW = np.zeros(P)
    for p in range(P):
        f, la = pfirst[p], plast[p]
        if f >= 0 and la < Ib and f <= la and pw[p] > _NEG:
            pv[p] = True
            PW[p] = np.exp(pw[p])
    E = np.zeros((Jb, L, Ib))
    has = np.zeros((Jb, L), dtype=np.bool_)
    for n in range(Jb):
        has[n, 0] = True
        for i in range(Ib):
            E[n, 0, i] = _p(ew[n, i])
    for m in range(se.shape[0]):
        n, lk = sn[m], sk[m]
        if n < Jb and 1 <= lk <= n and lk < L:
            has[n, lk] = True
            for i in range(Ib):
                E[n, lk, i] = _p(se[m, i])
    EN = np.zeros(Jb)
    EP = np.zeros((Jb, P))
    for n in range(Jb):
        EN[n] = _p(en[n])
        for p in range(P):
            if pv[p]:
                EP[n, p] = _p(ep[n, p])
    return A, ns, pv, PW, E, has, EN, EP


@njit(cache=True, error_model="numpy")
def _forward(jinit, ninit, A, ns, pv, PW, pfirst, plast, E, has, EN, EP, Ib, Jb, L):
    """Scaled entry masses of word (J,I), NULL (J,I) and phrase (J,P) states starting at n,
    and C (J + 1,) the cumulative log scales."""
    P = PW.shape[0]
    Win = np.zeros((Jb, Ib))
    Nin = np.zeros((Jb, Ib))
    Pin = np.zeros((Jb, P))
    aex = np.zeros((Jb, Ib))  # normalised exit mass at n per last position
    C = np.zeros(Jb + 1)
    ex = np.empty(Ib)  # exit mass at n (fully written per n)
    for n in range(Jb):
        if n == 0:
            for i in range(Ib):
                Win[0, i] = _p(jinit[i])
                Nin[0, i] = _p(ninit[i])
        else:
            for k in range(Ib):
                a = aex[n - 1, k]
                if a != 0.0:
                    for i in range(Ib):
                        Win[n, i] += a * A[k, i]
                    Nin[n, k] = a * ns[k]
        for p in range(P):
            if pv[p]:
                Pin[n, p] = Win[n, pfirst[p]] * PW[p]
        for i in range(Ib):
            ex[i] = Nin[n, i] * EN[n]
        for lk in range(min(L, n + 1)):
            if not has[n, lk]:
                continue
            s = n - lk
            f = np.exp(C[s] - C[n])
            for i in range(Ib):
                ex[i] += Win[s, i] * E[n, lk, i] * f
        for p in range(P):
            if pv[p]:
                ex[plast[p]] += Pin[n, p] * EP[n, p]
        c = 0.0
        for i in range(Ib):
            c += ex[i]
        c = max(c, 1e-300)
        for i in range(Ib):
            aex[n, i] = ex[i] / c
        C[n + 1] = C[n] + np.log(c)
    return Win, Nin, Pin, C


@njit(cache=True, error_model="numpy")
def _backward(A, ns, pv, PW, pfirst, plast, E, has, EN, EP, C, Ib, Jb, L):
    """bex (J,I): the scaled mass of completing the pair after an exit at n at position k."""
    AT = np.ascontiguousarray(A.T)
    bex = np.zeros((Jb, Ib))
    for k in range(Ib):
        bex[Jb - 1, k] = 1.0
    bw = np.empty(Ib)  # entry-side backward of word states starting at s
    for n in range(Jb - 2, -1, -1):
        s = n + 1
        bw[:] = 0.0
        for lk in range(min(L, Jb - s)):
            e = s + lk
            if not has[e, lk]:
                continue
            f = np.exp(C[s] - C[e + 1])
            for i in range(Ib):
                bw[i] += E[e, lk, i] * bex[e, i] * f
        f1 = np.exp(C[s] - C[s + 1])
        for p in range(PW.shape[0]):
            if pv[p]:
                bw[pfirst[p]] += PW[p] * EP[s, p] * bex[s, plast[p]] * f1
        bn = EN[s] * f1
        # bex[n, k] = ns[k] bn bex[s, k] + sum_i A[k, i] bw[i], summed over i in order for
        # every k (the loop over k innermost: contiguous in AT, vectorised)
        for k in range(Ib):
            bex[n, k] = ns[k] * bn * bex[s, k]
        for i in range(Ib):
            b = bw[i]
            for k in range(Ib):
                bex[n, k] += AT[i, k] * b
    return bex


@njit(cache=True, error_model="numpy")
def _item(ew, se, sn, sk, en, ep, jinit, jump, ninit, nstay, pw, pfirst, plast, Ib, Jb, L,
          out_w, out_s, out_n, out_p):
    """One item's posteriors into out_* (the module's layout); returns its log Z."""
    A, ns, pv, PW, E, has, EN, EP = _probabilities(ew, se, sn, sk, en, ep, jump, nstay, pw,
                                                   pfirst, plast, Ib, Jb, L)
    Win, Nin, Pin, C = _forward(jinit, ninit, A, ns, pv, PW, pfirst, plast, E, has, EN, EP, Ib,
                                Jb, L)
    bex = _backward(A, ns, pv, PW, pfirst, plast, E, has, EN, EP, C, Ib, Jb, L)
    for e in range(Jb):
        f1 = np.exp(C[e] - C[e + 1])
        tot = 0.0
        for r in range(Ib):
            tot += Nin[e, r] * bex[e, r]
        out_n[e] = tot * EN[e] * f1
        for p in range(PW.shape[0]):
            if pv[p]:
                out_p[e, p] = Pin[e, p] * EP[e, p] * bex[e, plast[p]] * f1
        for i in range(Ib):
            out_w[e, i] = Win[e, i] * E[e, 0, i] * bex[e, i] * f1
    for m in range(se.shape[0]):
        e, lk = sn[m], sk[m]
        if e < Jb and 1 <= lk <= e and lk < L:
            s = e - lk
            f = np.exp(C[s] - C[e + 1])
            for i in range(Ib):
                out_s[m, i] = Win[s, i] * E[e, lk, i] * bex[e, i] * f
    return C[Jb]


@njit(cache=True, error_model="numpy")
def _batch(ew, se, sn, sk, off, en, ep, jinit, jump, ninit, nstay, pw, pfirst, plast, sl, tl,
           L, out_w, out_s, out_n, out_p, out_ll):
    for b in range(ew.shape[0]):
        m0, m1 = off[b], off[b + 1]
        out_ll[b] = _item(ew[b], se[m0:m1], sn[m0:m1], sk[m0:m1], en[b], ep[b], jinit[b],
                          jump[b], ninit[b], nstay[b], pw[b], pfirst[b], plast[b], sl[b], tl[b],
                          L, out_w[b], out_s[m0:m1], out_n[b], out_p[b])


def phrasal_forward_backward(spot, sl, tl, max_len: int) -> tuple:
    """The fields of a `SparsePhrasalPosteriors` (log Z (B,), word (B,J,I), segments (M,I),
    null (B,J), phrase (B,J,P)) in the potentials' dtype of CPU sparse potentials `spot`
    (segments sorted by item); sl, tl (B,) lengths; segments of length <= max_len."""
    dt = np.float64 if spot.log_emit_word.dtype == torch.float64 else np.float32

    def f64(x):  # the inputs' own float dtype (float32 or float64); sums run in float64
        return np.ascontiguousarray(x.detach().cpu().numpy(), dtype=dt)

    def i64(x):
        return np.ascontiguousarray(x.cpu().numpy(), dtype=np.int64)

    ew, se = f64(spot.log_emit_word), f64(spot.log_emit_seg)
    en, ep = f64(spot.log_emit_null), f64(spot.log_emit_phrase)
    B = ew.shape[0]
    item = i64(spot.seg_item)
    off = np.searchsorted(item, np.arange(B + 1)).astype(np.int64)
    out_w, out_s, out_n, out_p = (np.zeros(x.shape, dtype=dt) for x in (ew, se, en, ep))
    out_ll = np.zeros(B)
    _batch(ew, se, i64(spot.seg_end), i64(spot.seg_len), off, en, ep, f64(spot.log_jump_init),
           f64(spot.log_jump), f64(spot.log_null_init), f64(spot.log_null_stay),
           f64(spot.log_phrase_weight), i64(spot.phrase_first), i64(spot.phrase_last), i64(sl),
           i64(tl), int(max_len), out_w, out_s, out_n, out_p, out_ll)
    outs = (out_ll, out_w, out_s, out_n, out_p)
    return tuple(torch.from_numpy(x).to(spot.log_emit_word.dtype) for x in outs)
