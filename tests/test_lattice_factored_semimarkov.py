"""Factored semi-Markov lattice: brute-force enumeration (Log and Max), batched ==
one-by-one with random lengths, equality with the generic semi-Markov lattice on the
materialised potentials, float64 gradcheck, bad shapes; the bucketed jump transition
(`JumpTransition`) against a loop-built dense transition, brute force, the dense path (values,
gradients, Viterbi incl. ties), batched == one-by-one and gradcheck."""

import math

import pytest
import torch

from aligners.errors import AlignersInputError
from aligners.lattices import semimarkov
from aligners.lattices.factored_semimarkov import (
    factored_log_partition,
    factored_marginals,
    factored_viterbi,
)
from aligners.lattices.jump_transition import JumpLayout, JumpTransition
from aligners.semirings import semiring_zero


def materialise(emit: torch.Tensor, trans, start: torch.Tensor) -> torch.Tensor:
    """The generic (B, N-1, K, C, C) log-potentials these factors stand for (the module
    docstring of `factored_semimarkov`; a `JumpTransition` is made dense)."""
    if isinstance(trans, JumpTransition):
        trans = trans.dense()
    zero = semiring_zero(emit.dtype)
    lp = emit.unsqueeze(-1) + trans[:, None, None]
    lp0 = torch.full_like(lp[:, 0], zero)
    lp0[..., 0] = emit[:, 0] + start[:, None, :]
    return torch.cat([lp0.unsqueeze(1), lp[:, 1:]], dim=1)


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


# ---- bucketed jump transitions (aligners.lattices.jump_transition) ----

def _jump_spec(B, C, P, seed, max_len=3, dtype=torch.float64, nb=18):
    """Random labels: NULL at 0, spans of length 1..max_len ending in 0..P-1 (starts may be
    negative), the last labels of some rows absent (padding); random bucket weights."""
    g = torch.Generator().manual_seed(seed)
    kind = torch.full((B, C), 2, dtype=torch.long)
    kind[:, 0] = 1
    for b in range(1, B, 2):
        kind[b, C - 1 - b // 2:] = 0
    end = torch.randint(0, P, (B, C), generator=g)
    start = end - torch.randint(0, max_len, (B, C), generator=g)
    weights = torch.randn(nb, generator=g, dtype=dtype)
    return kind, start, end, weights


def _dense_by_loops(kind, start, end, weights, D=4):
    """The bucket function of the module docstring, one label pair at a time."""
    B, C = kind.shape
    out = torch.full((B, C, C), semiring_zero(weights.dtype), dtype=weights.dtype)
    for b in range(B):
        for c in range(C):
            for p in range(C):
                kc, kp = int(kind[b, c]), int(kind[b, p])
                if kc == 0 or kp == 0:
                    continue
                if kc == 1:
                    k = 0
                elif kp == 1:
                    k = 1
                elif c == p:
                    k = 11
                else:
                    k = 2 + D + max(-D, min(D, int(start[b, c]) - int(end[b, p]) - 1))
                out[b, c, p] = weights[k]
    return out


@pytest.mark.parametrize("C,P,max_len", [(6, 3, 2), (12, 9, 3), (25, 12, 5)])
def test_jump_transition_dense_and_messages_equal_the_loops(C, P, max_len):
    kind, start, end, w = _jump_spec(4, C, P, seed=C, max_len=max_len)
    jt = JumpTransition(w, JumpLayout.build(kind, start, end))
    ref = _dense_by_loops(kind, start, end, w)
    assert torch.equal(jt.dense(), ref)
    for b in range(4):
        for c in range(C):
            assert torch.equal(jt.row(torch.full((4,), c))[b], ref[b, c])
    g = torch.Generator().manual_seed(1)
    alpha = torch.randn(4, C, generator=g, dtype=torch.float64) * 3
    alpha[kind == 0] = semiring_zero(alpha.dtype)
    log_ref = torch.logsumexp(alpha[:, None, :] + ref, -1)
    max_ref = (alpha[:, None, :] + ref).amax(-1)
    live = kind > 0
    assert torch.allclose(jt.message(alpha)[live], log_ref[live], atol=1e-10, rtol=0)
    assert torch.equal(jt.message(alpha, reduce_max=True)[live], max_ref[live])


def _jump_factors(B, N, K, C, P, seed):
    kind, start, end, w = _jump_spec(B, C, P, seed=seed)
    emit, _, st = _factors(B, N, K, C, seed=seed)
    emit = emit.masked_fill((kind == 0)[:, None, None, :], torch.finfo(emit.dtype).min / 4)
    return emit, JumpTransition(w, JumpLayout.build(kind, start, end)), st


@pytest.mark.parametrize("N,K,C,P", [(3, 2, 3, 2), (4, 3, 4, 3), (5, 4, 4, 2)])
def test_jump_transition_brute_force_log_and_max(N, K, C, P):
    emit, jt, start = _jump_factors(3, N, K, C, P, seed=N + 10 * C)
    trans = jt.dense()
    lengths = torch.tensor([N, max(2, N - 1), 2])
    log_z = factored_log_partition(emit, jt, start, lengths=lengths)
    best, paths = factored_viterbi(emit, jt, start, lengths=lengths)
    for b in range(3):
        scores = [_score(p, emit[b], trans[b], start[b]) for p in _paths(int(lengths[b]), K, C)]
        top = max(scores)
        assert float(log_z[b]) == pytest.approx(
            top + math.log(sum(math.exp(s - top) for s in scores)), abs=1e-9)
        assert float(best[b]) == pytest.approx(top, abs=1e-9)
        assert _score(paths[b], emit[b], trans[b], start[b]) == pytest.approx(top, abs=1e-9)


def test_jump_transition_equals_dense_path_values_gradients_viterbi():
    B, N, K, C, P = 6, 9, 4, 22, 7
    emit, jt, start = _jump_factors(B, N, K, C, P, seed=3)
    lengths = torch.tensor([9, 4, 7, 2, 9, 5])
    e1, w1, s1 = (x.clone().requires_grad_() for x in (emit, jt.weights, start))
    e2, w2, s2 = (x.clone().requires_grad_() for x in (emit, jt.weights, start))
    z1 = factored_log_partition(e1, JumpTransition(w1, jt.layout), s1, lengths=lengths)
    z2 = factored_log_partition(e2, JumpTransition(w2, jt.layout).dense(), s2, lengths=lengths)
    assert torch.allclose(z1, z2, atol=1e-10, rtol=0)
    (z1 * torch.arange(1.0, B + 1, dtype=z1.dtype)).sum().backward()
    (z2 * torch.arange(1.0, B + 1, dtype=z2.dtype)).sum().backward()
    for a, b in [(e1, e2), (w1, w2), (s1, s2)]:
        assert torch.allclose(a.grad, b.grad, atol=1e-10, rtol=0)
    best1, paths1 = factored_viterbi(emit, jt, start, lengths=lengths)
    best2, paths2 = factored_viterbi(emit, jt.dense(), start, lengths=lengths)
    assert torch.equal(best1, best2) and paths1 == paths2


def test_jump_transition_viterbi_ties_break_as_the_dense_path():
    B, N, K, C, P = 3, 8, 3, 13, 4
    emit, jt, start = _jump_factors(B, N, K, C, P, seed=5)
    emit = emit.round()  # integer scores: many tied paths
    jt = JumpTransition(jt.weights.round(), jt.layout)
    lengths = torch.tensor([8, 6, 3])
    best1, paths1 = factored_viterbi(emit, jt, start.round(), lengths=lengths)
    best2, paths2 = factored_viterbi(emit, jt.dense(), start.round(), lengths=lengths)
    assert torch.equal(best1, best2) and paths1 == paths2


def test_jump_transition_batched_equals_one_by_one():
    B, N, K, C, P = 5, 7, 4, 16, 5
    emit, jt, start = _jump_factors(B, N, K, C, P, seed=9)
    lengths = torch.tensor([7, 3, 6, 2, 5])
    log_z = factored_log_partition(emit, jt, start, lengths=lengths)
    best, paths = factored_viterbi(emit, jt, start, lengths=lengths)
    L = jt.layout
    for b in range(B):
        n = int(lengths[b])
        one = JumpTransition(jt.weights, JumpLayout.build(L.kind[b:b + 1], L.start[b:b + 1],
                                                          L.end[b:b + 1]))
        ln = torch.tensor([n])
        z1 = factored_log_partition(emit[b:b + 1, : n - 1], one, start[b:b + 1], lengths=ln)
        assert torch.allclose(log_z[b], z1[0], atol=1e-10, rtol=0)
        s1, p1 = factored_viterbi(emit[b:b + 1, : n - 1], one, start[b:b + 1], lengths=ln)
        assert torch.equal(best[b], s1[0]) and paths[b] == p1[0]


def test_jump_transition_gradcheck_float64():
    emit, jt, start = _jump_factors(2, 4, 3, 5, 3, seed=11)
    emit = emit.clamp(min=-30.0)
    lengths = torch.tensor([4, 3])
    args = tuple(x.clone().requires_grad_() for x in (emit, jt.weights, start))
    assert torch.autograd.gradcheck(
        lambda e, w, s: factored_log_partition(e, JumpTransition(w, jt.layout), s,
                                               lengths=lengths), args)


def test_jump_layout_bad_input_raises():
    kind = torch.tensor([[1, 2, 2]])
    with pytest.raises(AlignersInputError):
        JumpLayout.build(kind, torch.tensor([[0, 2, 0]]), torch.tensor([[0, 1, 0]]))
    with pytest.raises(AlignersInputError):
        JumpLayout.build(kind, torch.tensor([[0, 0]]), torch.tensor([[0, 1]]))


def _brute_marginals(emit, trans, start, length, K, C):
    """Segment marginals (N-1, K, C) of one row by enumerating every labelled segmentation."""
    paths = list(_paths(length, K, C))
    scores = torch.tensor([_score(p, emit, trans, start) for p in paths], dtype=torch.float64)
    probs = torch.softmax(scores, 0)
    out = torch.zeros(emit.shape, dtype=torch.float64)
    for p, pr in zip(paths, probs):
        for s, k, c in p:
            out[s, k, c] += pr
    return out


@pytest.mark.parametrize("N,K,C", [(2, 2, 1), (3, 2, 2), (4, 3, 2), (5, 4, 3), (5, 2, 3)])
def test_marginals_match_brute_force_and_sum_correctly(N, K, C):
    emit, trans, start = _factors(3, N, K, C, seed=7 * N + K)
    lengths = torch.tensor([N, max(2, N - 1), 2])
    mu = factored_marginals(emit, trans, start, lengths=lengths)
    assert mu.shape == emit.shape and mu.dtype == torch.float64 and not mu.requires_grad
    for b in range(3):
        n = int(lengths[b])
        want = _brute_marginals(emit[b], trans[b], start[b], n, K, C)
        assert torch.allclose(mu[b], want, atol=1e-10, rtol=0)
        assert float(mu[b, n - 1:].abs().sum()) == 0.0  # nothing past the row's length
        # every point 0..n-2 is covered by exactly one segment: coverage sums to 1
        cover = torch.zeros(n - 1, dtype=torch.float64)
        for k in range(1, K):
            for d in range(min(k, n - 1)):  # segment [s, s+k) covers point s + d
                cover[d:] += mu[b, : n - 1 - d, k].sum(-1)
        assert torch.allclose(cover, torch.ones_like(cover), atol=1e-10, rtol=0)
    assert float(mu[:, :, 0].abs().sum()) == 0.0  # the unused k = 0 slot


def test_marginals_batched_equal_one_by_one_and_jump_equals_dense():
    B, N, K, C, P = 5, 7, 4, 16, 5
    emit, jt, start = _jump_factors(B, N, K, C, P, seed=13)
    lengths = torch.tensor([7, 3, 6, 2, 5])
    mu = factored_marginals(emit, jt, start, lengths=lengths)
    dense = factored_marginals(emit, jt.dense(), start, lengths=lengths)
    assert torch.allclose(mu, dense, atol=1e-10, rtol=0)
    trans = jt.dense()
    for b in range(B):
        n = int(lengths[b])
        one = factored_marginals(emit[b:b + 1, : n - 1], trans[b:b + 1], start[b:b + 1],
                                 lengths=torch.tensor([n]))
        assert torch.allclose(mu[b, : n - 1], one[0], atol=1e-10, rtol=0)


def test_marginals_run_under_no_grad_and_leave_inputs_alone():
    emit, trans, start = _factors(2, 5, 3, 3, seed=1)
    emit.requires_grad_()
    with torch.no_grad():
        mu = factored_marginals(emit, trans, start, lengths=torch.tensor([5, 4]))
    assert emit.grad is None and torch.isfinite(mu).all()
