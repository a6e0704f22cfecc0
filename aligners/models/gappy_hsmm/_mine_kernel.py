"""Phrase-candidate mining of one batch from one direction's Viterbi alignment (numba;
tested equal to the torch reference tests/phrasal_mine_reference.py). Outputs: contiguous
spans per length in (item, start) order, gappy pairs in (item, a, c) order. Cost O(B N L)
time, no (B, N, N) arrays (a state's observations are found through its count and the last
position seen).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["mine_candidates"]


@njit(cache=True)
def _run(a, b, s, L):
    """Length (<= L) of the run of observations from s of item b aligned to the state of s
    (consecutive equal a[b, .]); 0 where s is unaligned (a < 0)."""
    st = a[b, s]
    if st < 0:
        return 0
    N = a.shape[1]
    run = 1
    while s + run < N and run < L and a[b, s + run] == st:
        run += 1
    return run


@njit(cache=True)
def _mine(obs, a, L, n_words):
    B, N = obs.shape
    n_c = np.zeros(L + 1, dtype=np.int64)
    top = 0
    for b in range(B):
        for s in range(N):
            top = max(top, a[b, s] + 1)
    cnt = np.zeros(top, dtype=np.int64)  # observations per state position
    n_g = 0
    for b in range(B):  # pass 1: sizes
        for s in range(N):
            run = _run(a, b, s, L)
            for ln in range(2, run + 1):
                n_c[ln] += 1
        n_g += _gappy(obs, a, b, cnt, n_words, None, None, 0)
    spans = [np.empty((n_c[ln], ln), dtype=np.int64) for ln in range(L + 1)]
    fill = np.zeros(L + 1, dtype=np.int64)
    keys = np.empty(n_g, dtype=np.int64)
    where = np.empty((n_g, 4), dtype=np.int64)
    m = 0
    for b in range(B):  # pass 2: the same walk, written
        for s in range(N):
            run = _run(a, b, s, L)
            for ln in range(2, run + 1):
                row = spans[ln][fill[ln]]
                for k in range(ln):
                    row[k] = obs[b, s + k]
                fill[ln] += 1
        m += _gappy(obs, a, b, cnt, n_words, keys, where, m)
    return spans, keys, where


@njit(cache=True)
def _gappy(obs, a, b, cnt, n_words, keys, where, m0):
    """Gappy pairs of item b (a < c - 1, the state's only two observations, an aligned
    observation between them) in (a, c) order; written from m0 when keys is given; returns
    how many."""
    N = obs.shape[1]
    for s in range(N):
        if a[b, s] >= 0:
            cnt[a[b, s]] = 0
    for s in range(N):
        if a[b, s] >= 0:
            cnt[a[b, s]] += 1
    m = 0
    for i in range(N):
        st = a[b, i]
        if st < 0 or cnt[st] != 2:
            continue
        between = 0
        for c in range(i + 1, N):
            if a[b, c] == st:
                if c > i + 1 and between > 0:
                    if keys is not None:
                        keys[m0 + m] = obs[b, i] * n_words + obs[b, c]
                        where[m0 + m, 0] = b
                        where[m0 + m, 1] = i
                        where[m0 + m, 2] = c
                        where[m0 + m, 3] = st
                    m += 1
                break
            if a[b, c] >= 0:
                between += 1
    return m


def mine_candidates(obs: torch.Tensor, align: torch.Tensor, lengths: torch.Tensor, *,
                    max_len: int, n_words: int):
    """Phrase instances of one batch (CPU tensors): obs (B, N) observation word ids, align
    (B, N) state position per observation (-1 NULL or pad), lengths (B,). Returns
    (contiguous: {length: words (M, length) long} of spans all aligned to one state; gappy:
    (keys (M,) long w1*V+w2, where (M, 4) long [b, a, c, state position]) of pairs a < c - 1
    aligned to one state that has exactly these two observations, with an observation
    aligned to another state between them)."""
    B, N = obs.shape
    a = torch.where(torch.arange(N)[None, :] < lengths[:, None], align.long(),
                    torch.full((B, N), -1, dtype=torch.long))
    spans, keys, where = _mine(np.ascontiguousarray(obs.numpy(), dtype=np.int64),
                               np.ascontiguousarray(a.numpy()), int(max_len), int(n_words))
    contiguous = {ln: torch.from_numpy(spans[ln]) for ln in range(2, max_len + 1)
                  if N >= ln}
    return contiguous, (torch.from_numpy(keys), torch.from_numpy(where))
