"""Factored HSMM lattice: oracles are brute-force enumeration of segmentations, a plain
log-space forward, the HMM (K=1) and exact structure probabilities for the sampler."""

import itertools
from collections import Counter

import pytest
import torch

from aligners.errors import AlignersInputError
from aligners.lattices.hmm import hmm_posteriors, hmm_viterbi
from aligners.lattices.hsmm import (
    _clean,
    _logspace_forward,
    _scaled_forward,
    hsmm_log_likelihood,
    hsmm_posteriors,
    hsmm_sample,
    hsmm_viterbi,
)


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
    labellings -> (logZ, seg_post (N,K,C), counts (C,C), best [(start,end,state)], score,
    {structure: log-prob})."""
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
            structs.append(tuple((a, b, c) for (a, b), c in zip(segs, labels)))
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
    return logz, post, counts, list(structs[best]), scores[best], dict(zip(structs, p.tolist()))


def rand_inputs(B, N, K, C, *, dtype=torch.float64, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    init = torch.randn(B, C, generator=g, dtype=dtype) * scale
    trans = torch.randn(B, C, C, generator=g, dtype=dtype) * scale
    seg = torch.randn(B, N, K, C, generator=g, dtype=dtype) * scale
    lengths = torch.randint(1, N + 1, (B,), generator=g)
    lengths[0] = N
    mask = torch.rand(B, C, generator=g) < 0.7
    mask[:, 0] = True
    return init, trans, seg, lengths, mask


@pytest.mark.parametrize("K", [1, 2, 3])
@pytest.mark.parametrize("use_mask", [False, True])
def test_brute_force(K, use_mask):
    B, N, C = 4, 5, 3
    init, trans, seg, lengths, mask = rand_inputs(B, N, K, C, seed=K)
    mask = mask if use_mask else None
    seg = seg.clone()
    for b in range(B):  # garbage where nothing is read: padding, before-start segments
        seg[b, lengths[b]:] = float("nan")
    for n in range(N):
        seg[:, n, n + 1 :] = float("nan")
    if mask is not None:
        seg = seg.masked_fill(~mask[:, None, None, :], float("nan"))
    post = hsmm_posteriors(init, trans, seg, lengths=lengths, state_mask=mask)
    vit = hsmm_viterbi(init, trans, seg, lengths=lengths, state_mask=mask)
    ll = hsmm_log_likelihood(init, trans, seg, lengths=lengths, state_mask=mask)
    for b in range(B):
        L = int(lengths[b])
        z, sp, cnt, best, bs, _ = hsmm_brute(
            init[b], trans[b], seg[b], L, None if mask is None else mask[b]
        )
        torch.testing.assert_close(post.log_likelihood[b], z)
        torch.testing.assert_close(ll[b], z)
        torch.testing.assert_close(post.segment_posteriors[b], sp)
        torch.testing.assert_close(post.transition_counts[b], cnt)
        assert vit.segments[b] == best
        torch.testing.assert_close(vit.score[b], bs)
        expect = torch.full((N,), -1, dtype=torch.long)
        for a, e, c in best:
            expect[a:e] = c
        assert torch.equal(vit.states[b], expect)


def test_k1_equals_hmm():
    B, N, C = 3, 9, 5
    init, trans, seg, lengths, mask = rand_inputs(B, N, 1, C, seed=11)
    a = hsmm_posteriors(init, trans, seg, lengths=lengths, state_mask=mask)
    b = hmm_posteriors(init, trans, seg[:, :, 0], lengths=lengths, state_mask=mask)
    torch.testing.assert_close(a.log_likelihood, b.log_likelihood)
    torch.testing.assert_close(a.segment_posteriors[:, :, 0], b.state_posteriors)
    torch.testing.assert_close(a.transition_counts, b.transition_counts)
    va = hsmm_viterbi(init, trans, seg, lengths=lengths, state_mask=mask)
    path, score = hmm_viterbi(init, trans, seg[:, :, 0], lengths=lengths, state_mask=mask)
    assert torch.equal(va.states, path)
    torch.testing.assert_close(va.score, score)


def test_scaled_equals_logspace_and_batched_equals_one_by_one():
    B, N, K, C = 6, 14, 4, 6
    init, trans, seg, lengths, mask = rand_inputs(B, N, K, C, seed=12, scale=2.0)
    cl = _clean(init, trans, seg, lengths, None)
    z_scaled = _scaled_forward(cl.init, cl.trans, cl.emit, cl.lengths)[0]
    z_log = _logspace_forward(cl.init, cl.trans, cl.emit, cl.lengths)[0]
    torch.testing.assert_close(z_scaled, z_log)
    post = hsmm_posteriors(init, trans, seg, lengths=lengths, state_mask=mask)
    vit = hsmm_viterbi(init, trans, seg, lengths=lengths, state_mask=mask)
    for b in range(B):
        L = int(lengths[b])
        keep = mask[b].nonzero().squeeze(1)
        sub = (
            init[b : b + 1, keep],
            trans[b : b + 1][:, keep][:, :, keep],
            seg[b : b + 1, :L][..., keep],
        )
        one = hsmm_posteriors(*sub)
        torch.testing.assert_close(one.log_likelihood[0], post.log_likelihood[b])
        torch.testing.assert_close(
            one.segment_posteriors[0], post.segment_posteriors[b, :L][..., keep]
        )
        torch.testing.assert_close(
            one.transition_counts[0], post.transition_counts[b][keep][:, keep]
        )
        assert post.segment_posteriors[b, L:].abs().sum() == 0
        v1 = hsmm_viterbi(*sub)
        assert [(s, e, int(keep[c])) for s, e, c in v1.segments[0]] == vit.segments[b]
    # each real position is covered by exactly one segment in expectation
    cover = torch.zeros(B, N, dtype=torch.float64)
    for k in range(K):
        for n in range(N):
            cover[:, max(0, n - k) : n + 1] += post.segment_posteriors[:, n, k].sum(-1)[:, None]
    torch.testing.assert_close(cover, (torch.arange(N) < lengths[:, None]).double())


def test_gradcheck():
    init, trans, seg, lengths, mask = rand_inputs(3, 5, 3, 3, seed=13)
    args = [x.clone().requires_grad_() for x in (init, trans, seg)]

    def f(a, b, c):
        return hsmm_log_likelihood(a, b, c, lengths=lengths, state_mask=mask)

    assert torch.autograd.gradcheck(f, args)


def test_float32_large_no_nan_and_underflow_fallback():
    B, N, K, C = 2, 250, 3, 250
    init, trans, seg, _, _ = rand_inputs(B, N, K, C, seed=14, scale=3.0, dtype=torch.float32)
    lengths = torch.tensor([250, 101])
    p = hsmm_posteriors(init, trans, seg, lengths=lengths)
    for t in p:
        assert torch.isfinite(t).all()
    # expected covered length == length: sum over segments of (k+1) * posterior
    seglen = torch.arange(1, K + 1, dtype=torch.float32).view(1, 1, K, 1)
    covered = (p.segment_posteriors * seglen).sum((1, 2, 3))
    torch.testing.assert_close(covered, lengths.float(), rtol=1e-4, atol=0)
    # force underflow in float32: leaving the only likely state costs e^-200
    init, trans, seg, lengths, _ = rand_inputs(3, 6, 2, 3, seed=15)
    seg = seg.clone()
    trans = trans.clone()
    seg[1, 0, 0] = torch.tensor([-300.0, 0.0, -300.0], dtype=seg.dtype)
    seg[1, 1, 0] = torch.tensor([-300.0, 0.0, -300.0], dtype=seg.dtype)
    seg[1, 1, 1] = -500.0
    trans[1, 1, :] = -200.0
    p64 = hsmm_posteriors(init, trans, seg, lengths=lengths)
    p32 = hsmm_posteriors(init.float(), trans.float(), seg.float(), lengths=lengths)
    ll32 = hsmm_log_likelihood(init.float(), trans.float(), seg.float(), lengths=lengths)
    cl = _clean(init.float(), trans.float(), seg.float(), lengths, None)
    assert bool((_scaled_forward(cl.init, cl.trans, cl.emit, cl.lengths)[1] < 1e-30).any())
    for t in p32:
        assert torch.isfinite(t).all()
    torch.testing.assert_close(p32.log_likelihood.double(), p64.log_likelihood, rtol=1e-5,
                               atol=1e-3)
    torch.testing.assert_close(ll32.double(), p64.log_likelihood, rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(p32.segment_posteriors.double(), p64.segment_posteriors,
                               atol=1e-4, rtol=0)
    s = hsmm_sample(init.float(), trans.float(), seg.float(), lengths=lengths,
                    generator=torch.Generator().manual_seed(0), num_samples=50)
    # exact posterior: state 1 on [0,1), then a length-2 segment in state 0 or 2
    assert (s.states[:, 1, 0] == 1).all() and s.ends[:, 1, 0].all()
    assert (s.states[:, 1, 1] != 1).all() and s.ends[:, 1, 2].all()


def test_sampler_matches_exact_structure_probabilities():
    B, N, K, C = 2, 4, 3, 2
    init, trans, seg, _, _ = rand_inputs(B, N, K, C, seed=16)
    lengths = torch.tensor([4, 3])
    S = 20000
    out = hsmm_sample(init, trans, seg, lengths=lengths,
                      generator=torch.Generator().manual_seed(7), num_samples=S)
    assert out.states.shape == (S, B, N) and out.ends.shape == (S, B, N)
    assert (out.states[:, 1, 3] == -1).all() and not out.ends[:, 1, 3].any()
    for b in range(B):
        L = int(lengths[b])
        probs = hsmm_brute(init[b], trans[b], seg[b], L)[5]
        seen = Counter()
        st, en = out.states[:, b].tolist(), out.ends[:, b].tolist()
        for s in range(S):
            segs, start = [], 0
            for n in range(L):
                if en[s][n]:
                    assert all(st[s][m] == st[s][n] for m in range(start, n + 1))
                    segs.append((start, n + 1, st[s][n]))
                    start = n + 1
            assert start == L
            seen[tuple(segs)] += 1
        assert set(seen) <= set(probs)
        exp = torch.tensor([probs[k] * S for k in probs], dtype=torch.float64)
        obs = torch.tensor([seen[k] for k in probs], dtype=torch.float64)
        big = exp > 5
        chi2 = (((obs - exp) ** 2) / exp)[big].sum().item()
        dof = int(big.sum()) - 1
        assert chi2 < dof + 5 * (2 * dof) ** 0.5, (chi2, dof)
    again = hsmm_sample(init, trans, seg, lengths=lengths,
                        generator=torch.Generator().manual_seed(7), num_samples=S)
    assert torch.equal(again.states, out.states) and torch.equal(again.ends, out.ends)


def test_inference_mode_and_bad_input():
    init, trans, seg, lengths, _ = rand_inputs(2, 4, 2, 3, seed=17)
    with torch.inference_mode():
        p = hsmm_posteriors(init.clone(), trans.clone(), seg.clone(), lengths=lengths)
    assert torch.isfinite(p.log_likelihood).all()
    assert not seg.requires_grad
    with pytest.raises(AlignersInputError):
        hsmm_posteriors(init, trans.unsqueeze(1).expand(2, 3, 3, 3), seg)
    with pytest.raises(AlignersInputError):
        hsmm_posteriors(init, trans, seg[..., 0])
    with pytest.raises(AlignersInputError):
        hsmm_posteriors(init, trans, seg, lengths=torch.tensor([5, 1]))


def test_single_position_and_k_beyond_n():
    init, trans, seg, _, mask = rand_inputs(3, 1, 4, 3, seed=18)
    post = hsmm_posteriors(init, trans, seg, state_mask=mask)
    logits = (init + seg[:, 0, 0]).masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(post.log_likelihood, torch.logsumexp(logits, -1))
    torch.testing.assert_close(post.segment_posteriors[:, 0, 0], torch.softmax(logits, -1))
    assert post.segment_posteriors[:, :, 1:].abs().sum() == 0
    vit = hsmm_viterbi(init, trans, seg, state_mask=mask)
    assert [s[0][2] for s in vit.segments] == logits.argmax(-1).tolist()


def test_impossible_item_gives_minus_inf_and_zero_posteriors():
    init, trans, seg, _, _ = rand_inputs(2, 4, 2, 3, seed=19)
    seg = seg.clone()
    seg[1, 2] = float("-inf")  # every segment covering position 2 of item 1 is impossible
    seg[1, 3, 1] = float("-inf")
    post = hsmm_posteriors(init, trans, seg)
    assert post.log_likelihood[1] == float("-inf") and torch.isfinite(post.log_likelihood[0])
    assert post.segment_posteriors[1].abs().sum() == 0
    assert post.transition_counts[1].abs().sum() == 0
    assert hsmm_log_likelihood(init, trans, seg)[1] == float("-inf")
    z, sp, *_ = hsmm_brute(init[0], trans[0], seg[0], 4)
    torch.testing.assert_close(post.segment_posteriors[0], sp)
