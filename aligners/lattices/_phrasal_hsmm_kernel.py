"""Explicit scaled forward-backward of the phrasal HSMM lattice on CPU (numba), per item.

Shapes as `aligners.lattices.phrasal_hsmm.PhrasalPotentials`: log_emit_word (B,J,L,I),
log_emit_null (B,J), log_emit_phrase (B,J,P), jumps (B,I) / (B,I,I), phrase weights and
positions (B,P). Returns the segment posteriors (same shapes as the emissions) and log Z (B,).
Cost O(B J (I^2 + L I + P)) time, O(J (I + P)) extra memory per item; float64 inside
(inputs and posteriors float32 or float64).

Scaling: the exit masses (paths covering target words 0..n whose last state ends at n, per
last source position) are normalised at every n by c_n; C[n] = sum of log c_m over m < n.
A segment starting at s and ending at e is weighted by exp(C[s] - C[e]) (forward) and the
backward masses are scaled by the same c_n, so every posterior is
entry(s) * emission * backward(e) * exp(C[s] - C[e + 1]). Scores below -700 (the semiring
zero) are never exponentiated (probability 0). Tested equal to the autograd posteriors of
the scaled forward and to brute-force enumeration (tests/test_lattice_phrasal_hsmm.py).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["phrasal_forward_backward"]

_NEG = -700.0  # below this a log score is treated as probability 0


@njit(cache=True, error_model="numpy")
def _item(ew, en, ep, jinit, jump, ninit, nstay, pw, pfirst, plast, Ib, Jb,
          out_w, out_n, out_p):
    L = ew.shape[1]
    P = ep.shape[1]
    A = np.zeros((Ib, Ib))
    for k in range(Ib):
        for i in range(Ib):
            if jump[k, i] > _NEG:
                A[k, i] = np.exp(jump[k, i])
    ns = np.zeros(Ib)
    for k in range(Ib):
        if nstay[k] > _NEG:
            ns[k] = np.exp(nstay[k])
    pv = np.zeros(P, dtype=np.bool_)
    PW = np.zeros(P)
    for p in range(P):
        f, la = pfirst[p], plast[p]
        if f >= 0 and la < Ib and f <= la and pw[p] > _NEG:
            pv[p] = True
            PW[p] = np.exp(pw[p])
    # emission probabilities, exponentiated once (0 = never scored)
    E = np.zeros((Jb, L, Ib))
    for n in range(Jb):
        for lk in range(min(L, n + 1)):
            for i in range(Ib):
                if ew[n, lk, i] > _NEG:
                    E[n, lk, i] = np.exp(ew[n, lk, i])
    EN = np.zeros(Jb)
    EP = np.zeros((Jb, P))
    for n in range(Jb):
        if en[n] > _NEG:
            EN[n] = np.exp(en[n])
        for p in range(P):
            if pv[p] and ep[n, p] > _NEG:
                EP[n, p] = np.exp(ep[n, p])
    Win = np.zeros((Jb, Ib))  # scaled entry mass of a word state starting at n
    Nin = np.zeros((Jb, Ib))
    Pin = np.zeros((Jb, P))
    aex = np.zeros((Jb, Ib))  # normalised exit mass at n per last position
    C = np.zeros(Jb + 1)
    for n in range(Jb):
        if n == 0:
            for i in range(Ib):
                if jinit[i] > _NEG:
                    Win[0, i] = np.exp(jinit[i])
                if ninit[i] > _NEG:
                    Nin[0, i] = np.exp(ninit[i])
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
        ex = np.zeros(Ib)
        for i in range(Ib):
            ex[i] = Nin[n, i] * EN[n]
        for lk in range(min(L, n + 1)):
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
    # backward: bex[n, k] = mass of completing the pair after an exit at n at position k
    bex = np.zeros((Jb, Ib))
    for k in range(Ib):
        bex[Jb - 1, k] = 1.0
    for n in range(Jb - 2, -1, -1):
        s = n + 1
        bw = np.zeros(Ib)  # entry-side backward of word states starting at s
        for lk in range(min(L, Jb - s)):
            e = s + lk
            f = np.exp(C[s] - C[e + 1])
            for i in range(Ib):
                bw[i] += E[e, lk, i] * bex[e, i] * f
        f1 = np.exp(C[s] - C[s + 1])
        for p in range(P):
            if pv[p]:
                bw[pfirst[p]] += PW[p] * EP[s, p] * bex[s, plast[p]] * f1
        bn = EN[s] * f1
        for k in range(Ib):
            acc = ns[k] * bn * bex[s, k]
            for i in range(Ib):
                acc += A[k, i] * bw[i]
            bex[n, k] = acc
    # posteriors
    for e in range(Jb):
        f1 = np.exp(C[e] - C[e + 1])
        tot = 0.0
        for r in range(Ib):
            tot += Nin[e, r] * bex[e, r]
        out_n[e] = tot * EN[e] * f1
        for p in range(P):
            if pv[p]:
                out_p[e, p] = Pin[e, p] * EP[e, p] * bex[e, plast[p]] * f1
        for lk in range(min(L, e + 1)):
            s = e - lk
            f = np.exp(C[s] - C[e + 1])
            for i in range(Ib):
                out_w[e, lk, i] = Win[s, i] * E[e, lk, i] * bex[e, i] * f
    return C[Jb]


@njit(cache=True, error_model="numpy")
def _batch(ew, en, ep, jinit, jump, ninit, nstay, pw, pfirst, plast, sl, tl,
           out_w, out_n, out_p, out_ll):
    for b in range(ew.shape[0]):
        out_ll[b] = _item(ew[b], en[b], ep[b], jinit[b], jump[b], ninit[b], nstay[b], pw[b],
                          pfirst[b], plast[b], sl[b], tl[b], out_w[b], out_n[b], out_p[b])


def phrasal_forward_backward(pot, sl, tl):
    """(log Z (B,) float64, word (B,J,L,I), null (B,J), phrase (B,J,P)) numpy posteriors (in
    the potentials' dtype, float32 unless float64) of CPU potentials `pot` (torch tensors);
    sl, tl (B,) lengths."""
    dt = np.float64 if pot.log_emit_word.dtype == torch.float64 else np.float32

    def f64(x):  # the inputs' own float dtype (float32 or float64); sums run in float64
        return np.ascontiguousarray(x.detach().cpu().numpy(), dtype=dt)

    ew, en, ep = f64(pot.log_emit_word), f64(pot.log_emit_null), f64(pot.log_emit_phrase)
    B = ew.shape[0]
    out_w, out_n, out_p = (np.zeros(x.shape, dtype=dt) for x in (ew, en, ep))
    out_ll = np.zeros(B)
    i64 = np.int64
    _batch(ew, en, ep, f64(pot.log_jump_init), f64(pot.log_jump), f64(pot.log_null_init),
           f64(pot.log_null_stay), f64(pot.log_phrase_weight),
           np.ascontiguousarray(pot.phrase_first.cpu().numpy(), dtype=i64),
           np.ascontiguousarray(pot.phrase_last.cpu().numpy(), dtype=i64),
           np.ascontiguousarray(sl.cpu().numpy(), dtype=i64),
           np.ascontiguousarray(tl.cpu().numpy(), dtype=i64), out_w, out_n, out_p, out_ll)
    return out_ll, out_w, out_n, out_p
