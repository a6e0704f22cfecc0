"""Factored semi-Markov lattice: brute-force enumeration (Log and Max), batched ==
one-by-one with random lengths, equality with the generic semi-Markov lattice on the
materialised potentials, float64 gradcheck, bad shapes."""

import math

import pytest
import torch

from aligners.errors import AlignersInputError
from aligners.lattices import semimarkov
from aligners.lattices.factored_semimarkov import (
    factored_log_partition,
    factored_viterbi,
    materialise,
)


def _factors(B, N, K, C, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    emit = torch.randn(B, N - 1, K, C, generator=g, dtype=dtype)
    emit[:, :, 0] = torch.finfo(dtype).min / 4  # k = 0 slot unused
    trans = torch.randn(B, C, C, generator=g, dtype=dtype)
    start = torch.randn(B, C, generator=g, dtype=dtype)
    return emit, trans, start


def _paths(L, K, C):
    """Every segmentation of points 0..L-1 into segments of length 1..K-1 with labels."""
    def rec(t):
        if t == L - 1:
            yield []
            return
        for k in range(1, min(K - 1, L - 1 - t) + 1):
            for c in range(C):
                for rest in rec(t + k):
                    yield [(t, k, c), *rest]
    yield from rec(0)


def _score(segs, emit, trans, start):
    total, prev = 0.0, None
    for s, k, c in segs:
        total += float(emit[s, k, c]) + float(start[c] if prev is None else trans[c, prev])
        prev = c
    return total


@pytest.mark.parametrize("N,K,C", [(2, 2, 1), (3, 2, 2), (4, 3, 2), (5, 4, 3), (4, 2, 3)])
def test_brute_force_log_and_max(N, K, C):
    emit, trans, start = _factors(3, N, K, C, seed=N * 10 + K)
    lengths = torch.tensor([N, max(2, N - 1), 2])
    log_z = factored_log_partition(emit, trans, start, lengths=lengths)
    best, paths = factored_viterbi(emit, trans, start, lengths=lengths)
    for b in range(3):
        scores = [_score(p, emit[b], trans[b], start[b])
                  for p in _paths(int(lengths[b]), K, C)]
        top = max(scores)
        assert float(log_z[b]) == pytest.approx(
            top + math.log(sum(math.exp(s - top) for s in scores)), abs=1e-9)
        assert float(best[b]) == pytest.approx(top, abs=1e-9)
        assert _score(paths[b], emit[b], trans[b], start[b]) == pytest.approx(top, abs=1e-9)
        assert sum(k for _, k, _ in paths[b]) == int(lengths[b]) - 1


def test_batched_equals_one_by_one_with_random_lengths():
    g = torch.Generator().manual_seed(7)
    B, N, K, C = 6, 7, 4, 5
    emit, trans, start = _factors(B, N, K, C, seed=1)
    lengths = torch.randint(2, N + 1, (B,), generator=g)
    lengths[0] = N
    log_z = factored_log_partition(emit, trans, start, lengths=lengths)
    best, paths = factored_viterbi(emit, trans, start, lengths=lengths)
    for b in range(B):
        n = int(lengths[b])
        one = (emit[b:b + 1, : n - 1], trans[b:b + 1], start[b:b + 1])
        ln = torch.tensor([n])
        assert torch.allclose(log_z[b], factored_log_partition(*one, lengths=ln)[0])
        s1, p1 = factored_viterbi(*one, lengths=ln)
        assert torch.allclose(best[b], s1[0]) and paths[b] == p1[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_generic_semimarkov_on_materialised_potentials(dtype):
    B, N, K, C = 4, 6, 3, 4
    emit, trans, start = _factors(B, N, K, C, seed=2, dtype=dtype)
    lengths = torch.tensor([6, 3, 5, 2])
    lp = materialise(emit, trans, start)
    assert lp.shape == (B, N - 1, K, C, C)
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    ref = semimarkov.log_partition(lp, lengths=lengths)
    ours = factored_log_partition(emit, trans, start, lengths=lengths)
    assert torch.allclose(ours, ref, atol=tol)
    ref_best, _ = semimarkov.viterbi(lp, lengths=lengths)
    best, _ = factored_viterbi(emit, trans, start, lengths=lengths)
    assert torch.allclose(best, ref_best, atol=tol)
    # marginals: gradients of log Z w.r.t. the factors = generic marginals summed
    e, t, s = (x.clone().requires_grad_() for x in (emit, trans, start))
    factored_log_partition(e, t, s, lengths=lengths).sum().backward()
    marg = semimarkov.marginals(lp, lengths=lengths)
    assert torch.allclose(e.grad[:, 1:], marg[:, 1:].sum(-1), atol=tol * 10)
    assert torch.allclose(t.grad, marg[:, 1:].sum((1, 2)), atol=tol * 10)
    assert torch.allclose(s.grad, marg[:, 0, :, :, 0].sum(1), atol=tol * 10)


def test_float64_gradcheck():
    emit, trans, start = _factors(2, 4, 3, 3, seed=4)
    emit[:, :, 0] = -30.0  # finite, so that gradcheck's perturbations stay meaningful
    lengths = torch.tensor([4, 3])
    args = tuple(x.clone().requires_grad_() for x in (emit, trans, start))
    assert torch.autograd.gradcheck(
        lambda e, t, s: factored_log_partition(e, t, s, lengths=lengths), args)


def test_bad_shapes_raise_input_error():
    emit, trans, start = _factors(2, 4, 3, 3)
    for bad in [(emit[0], trans, start, torch.tensor([4, 4])),
                (emit, trans[:, :2], start, torch.tensor([4, 4])),
                (emit, trans, start, torch.tensor([5, 4])),
                (emit, trans, start, torch.tensor([4]))]:
        with pytest.raises(AlignersInputError):
            factored_log_partition(*bad[:3], lengths=bad[3])
