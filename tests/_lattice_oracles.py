"""Brute-force enumeration oracles for the factored HMM / HSMM lattice tests (tiny sizes)."""

import itertools

import torch

__all__ = ["hmm_brute", "hsmm_brute", "segmentations"]


def hmm_brute(init, trans, emit, length, mask=None):
    """One item: init (C,), trans (C,C)|(N-1,C,C), emit (N,C). Exact enumeration over
    C**length paths -> (logZ, gamma (N,C), counts (C,C), best_path list, best_score)."""
    N, C = emit.shape
    states = [c for c in range(C) if mask is None or bool(mask[c])]
    scores, paths = [], []
    for path in itertools.product(states, repeat=length):
        s = init[path[0]] + emit[0, path[0]]
        for n in range(1, length):
            t = trans[n - 1] if trans.dim() == 3 else trans
            s = s + t[path[n - 1], path[n]] + emit[n, path[n]]
        scores.append(s)
        paths.append(path)
    scores = torch.stack(scores)
    logz = torch.logsumexp(scores, 0)
    p = torch.exp(scores - logz)
    gamma = torch.zeros(N, C, dtype=emit.dtype)
    counts = torch.zeros(C, C, dtype=emit.dtype)
    for w, path in zip(p, paths):
        for n, c in enumerate(path):
            gamma[n, c] += w
        for a, b in zip(path[:-1], path[1:]):
            counts[a, b] += w
    best = int(scores.argmax())
    return logz, gamma, counts, list(paths[best]), scores[best]


def segmentations(length, K):
    """All ways to cut range(length) into segments of length 1..K, as lists of (start, end)."""
    if length == 0:
        yield []
        return
    for k in range(1, min(K, length) + 1):
        for rest in segmentations(length - k, K):
            yield rest + [(length - k, length)]


def hsmm_brute(init, trans, seg_emit, length, mask=None):
    """One item: init (C,), trans (C,C), seg_emit (N,K,C). Enumerates all segmentations and
    labellings -> (logZ, seg_post (N,K,C), counts (C,C), best [(start,end,state)], score)."""
    N, K, C = seg_emit.shape
    states = [c for c in range(C) if mask is None or bool(mask[c])]
    scores, structs = [], []
    for segs in segmentations(length, K):
        for labels in itertools.product(states, repeat=len(segs)):
            s = init[labels[0]]
            for i, ((a, b), c) in enumerate(zip(segs, labels)):
                if i:
                    s = s + trans[labels[i - 1], c]
                s = s + seg_emit[b - 1, b - a - 1, c]
            scores.append(s)
            structs.append([(a, b, c) for (a, b), c in zip(segs, labels)])
    scores = torch.stack(scores)
    logz = torch.logsumexp(scores, 0)
    p = torch.exp(scores - logz)
    post = torch.zeros(N, K, C, dtype=seg_emit.dtype)
    counts = torch.zeros(C, C, dtype=seg_emit.dtype)
    for w, st in zip(p, structs):
        for a, b, c in st:
            post[b - 1, b - a - 1, c] += w
        for (_, _, c1), (_, _, c2) in zip(st[:-1], st[1:]):
            counts[c1, c2] += w
    best = int(scores.argmax())
    return logz, post, counts, structs[best], scores[best]
