"""Factored HMM lattice: oracles are brute-force enumeration, autograd of a plain log-space
forward, torch-struct's LinearChainCRF and exact marginals for the sampler."""

import itertools

import pytest
import torch
from torch_struct import LinearChainCRF

from aligners.errors import AlignersInputError
from aligners.lattices._factored import clean_factored
from aligners.lattices.hmm import (
    _fast_fb,
    _logspace_log_likelihood,
    hmm_log_likelihood,
    hmm_posteriors,
    hmm_sample,
    hmm_viterbi,
)


def hmm_brute(init, trans, emit, length, mask=None):
    """One item: init (C,), trans (C,C), emit (N,C). Exact enumeration over
    C**length paths -> (logZ, gamma (N,C), counts (C,C), best_path list, best_score)."""
    N, C = emit.shape
    states = [c for c in range(C) if mask is None or bool(mask[c])]
    scores, paths = [], []
    for path in itertools.product(states, repeat=length):
        s = init[path[0]] + emit[0, path[0]]
        for n in range(1, length):
            s = s + trans[path[n - 1], path[n]] + emit[n, path[n]]
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


def rand_inputs(B, N, C, *, dtype=torch.float64, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    init = torch.randn(B, C, generator=g, dtype=dtype) * scale
    trans = torch.randn(B, C, C, generator=g, dtype=dtype) * scale
    emit = torch.randn(B, N, C, generator=g, dtype=dtype) * scale
    lengths = torch.randint(1, N + 1, (B,), generator=g)
    lengths[0] = N
    mask = torch.rand(B, C, generator=g) < 0.7
    mask[:, 0] = True
    return init, trans, emit, lengths, mask


@pytest.mark.parametrize("use_mask", [False, True])
def test_brute_force(use_mask):
    B, N, C = 5, 5, 3
    init, trans, emit, lengths, mask = rand_inputs(B, N, C, seed=1)
    mask = mask if use_mask else None
    # garbage in padded positions and masked states must be ignored
    emit = emit.clone()
    for b in range(B):
        emit[b, lengths[b]:] = float("nan")
    if mask is not None:
        emit = emit.masked_fill(~mask[:, None, :], float("nan"))
    post = hmm_posteriors(init, trans, emit, lengths=lengths, state_mask=mask)
    path, score = hmm_viterbi(init, trans, emit, lengths=lengths, state_mask=mask)
    ll = hmm_log_likelihood(init, trans, emit, lengths=lengths, state_mask=mask)
    for b in range(B):
        L = int(lengths[b])
        z, gam, cnt, bp, bs = hmm_brute(
            init[b], trans[b], emit[b], L, None if mask is None else mask[b]
        )
        torch.testing.assert_close(post.log_likelihood[b], z)
        torch.testing.assert_close(ll[b], z)
        torch.testing.assert_close(post.state_posteriors[b], gam)
        torch.testing.assert_close(post.transition_counts[b], cnt)
        assert path[b, :L].tolist() == bp
        assert (path[b, L:] == -1).all()
        torch.testing.assert_close(score[b], bs)
    assert torch.isfinite(post.state_posteriors).all()


def test_counts_equal_gradient_of_logspace_forward():
    B, N, C = 4, 12, 7
    init, trans, emit, lengths, mask = rand_inputs(B, N, C, seed=2)
    neg = torch.finfo(torch.float64).min / 16  # finite log 0 keeps autograd NaN-free
    li = init.masked_fill(~mask, neg).requires_grad_()
    pair = mask[:, :, None] & mask[:, None, :]
    lt = trans.masked_fill(~pair, neg).requires_grad_()
    le = emit.masked_fill(~mask[:, None, :], neg).requires_grad_()
    z = _logspace_log_likelihood(li, lt, le, lengths)
    gi, gt, ge = torch.autograd.grad(z.sum(), (li, lt, le))
    post = hmm_posteriors(init, trans, emit, lengths=lengths, state_mask=mask)
    torch.testing.assert_close(post.log_likelihood, z.detach())
    torch.testing.assert_close(post.state_posteriors, ge.nan_to_num(0.0))
    torch.testing.assert_close(post.transition_counts, gt.nan_to_num(0.0))
    torch.testing.assert_close(post.state_posteriors[:, 0], gi.nan_to_num(0.0))
    # counts sum to length-1 transitions, posteriors to 1 per real position
    torch.testing.assert_close(post.transition_counts.sum((1, 2)), (lengths - 1).double())
    torch.testing.assert_close(post.state_posteriors.sum((1, 2)), lengths.double())


def test_gradcheck():
    init, trans, emit, lengths, mask = rand_inputs(3, 5, 4, seed=3)
    args = [x.clone().requires_grad_() for x in (init, trans, emit)]

    def f(a, b, c):
        return hmm_log_likelihood(a, b, c, lengths=lengths, state_mask=mask)

    assert torch.autograd.gradcheck(f, args)


def test_batched_equals_one_by_one():
    B, N, C = 9, 15, 8
    init, trans, emit, lengths, mask = rand_inputs(B, N, C, seed=4)
    post = hmm_posteriors(init, trans, emit, lengths=lengths, state_mask=mask)
    path, score = hmm_viterbi(init, trans, emit, lengths=lengths, state_mask=mask)
    for b in range(B):
        L = int(lengths[b])
        keep = mask[b].nonzero().squeeze(1)
        one = hmm_posteriors(
            init[b : b + 1, keep],
            trans[b : b + 1][:, keep][:, :, keep],
            emit[b : b + 1, :L, keep],
        )
        torch.testing.assert_close(one.log_likelihood[0], post.log_likelihood[b])
        torch.testing.assert_close(one.state_posteriors[0], post.state_posteriors[b, :L][:, keep])
        torch.testing.assert_close(
            one.transition_counts[0], post.transition_counts[b][keep][:, keep]
        )
        assert post.state_posteriors[b, L:].abs().sum() == 0
        assert post.state_posteriors[b][:, ~mask[b]].abs().sum() == 0
        p1, s1 = hmm_viterbi(
            init[b : b + 1, keep], trans[b : b + 1][:, keep][:, :, keep], emit[b : b + 1, :L, keep]
        )
        assert keep[p1[0]].tolist() == path[b, :L].tolist()
        torch.testing.assert_close(s1[0], score[b])


def test_agrees_with_torch_struct_linear_chain():
    B, N, C = 3, 6, 4
    init, trans, emit, lengths, _ = rand_inputs(B, N, C, seed=5)
    # torch-struct: edge[b, n, z_{n+1}, z_n]
    edge = (trans[:, None] + emit[:, 1:, None, :]).transpose(-1, -2).clone()
    edge[:, 0] += (init + emit[:, 0])[:, None, :]
    crf = LinearChainCRF(edge, lengths=lengths)
    post = hmm_posteriors(init, trans, emit, lengths=lengths)
    torch.testing.assert_close(post.log_likelihood, crf.partition)
    marg = crf.marginals  # (B,N-1,C_next,C_prev)
    torch.testing.assert_close(post.transition_counts, marg.sum(1).transpose(-1, -2))
    torch.testing.assert_close(post.state_posteriors[:, 1:], marg.sum(-1))


def test_float32_large_no_nan_and_matches_float64():
    B, N, C = 2, 250, 250
    init, trans, emit, _, _ = rand_inputs(B, N, C, seed=6, scale=3.0)
    lengths = torch.tensor([250, 173])
    p64 = hmm_posteriors(init, trans, emit, lengths=lengths)
    p32 = hmm_posteriors(init.float(), trans.float(), emit.float(), lengths=lengths)
    for t in p32:
        assert torch.isfinite(t).all()
    torch.testing.assert_close(p32.log_likelihood.double(), p64.log_likelihood, rtol=1e-5, atol=0)
    torch.testing.assert_close(p32.state_posteriors.double(), p64.state_posteriors, atol=2e-4,
                               rtol=0)
    torch.testing.assert_close(p32.transition_counts.double(), p64.transition_counts, atol=2e-4,
                               rtol=0)


def test_underflow_falls_back_to_exact_log_space():
    # dynamic range far beyond float32's exp range: scaled recursion underflows, fallback fixes
    B, N, C = 3, 6, 3
    init, trans, emit, lengths, _ = rand_inputs(B, N, C, seed=7)
    emit = emit.clone()
    emit[1, 1, :] = torch.tensor([-300.0, 0.0, -300.0], dtype=emit.dtype)
    trans = trans.clone()
    trans[1, 1, :] = -200.0  # leaving state 1 (the only likely one at n=1) costs e^-200
    lengths = torch.tensor([6, 6, 4])
    cl = clean_factored(init.float(), trans.float(), emit.float(), lengths, None)
    assert _fast_fb(cl)[3].tolist() == [False, True, False]
    p64 = hmm_posteriors(init, trans, emit, lengths=lengths)
    z = _logspace_log_likelihood(init, trans, emit, lengths)
    torch.testing.assert_close(p64.log_likelihood, z)
    p32 = hmm_posteriors(init.float(), trans.float(), emit.float(), lengths=lengths)
    ll32 = hmm_log_likelihood(init.float(), trans.float(), emit.float(), lengths=lengths)
    for t in p32:
        assert torch.isfinite(t).all()
    torch.testing.assert_close(p32.log_likelihood.double(), z, rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(ll32.double(), z, rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(p32.state_posteriors.double(), p64.state_posteriors, atol=1e-4,
                               rtol=0)
    # the sampler must also only visit reachable paths under the fallback filter
    s = hmm_sample(init.float(), trans.float(), emit.float(), lengths=lengths,
                   generator=torch.Generator().manual_seed(0), num_samples=50)
    assert (s[:, 1, 1] == 1).all()


def test_sampler_frequencies_match_marginals():
    B, N, C = 2, 4, 3
    init, trans, emit, _, mask = rand_inputs(B, N, C, seed=8)
    lengths = torch.tensor([4, 3])
    S = 20000
    gen = torch.Generator().manual_seed(123)
    s = hmm_sample(init, trans, emit, lengths=lengths, state_mask=mask, generator=gen,
                   num_samples=S)
    assert s.shape == (S, B, N)
    assert (s[:, 1, 3] == -1).all() and (s[:, :, :3] >= 0).all()
    assert mask.gather(1, s[:, :, :3].clamp(min=0).reshape(S, B, 3).permute(1, 0, 2)
                       .reshape(B, -1)).all()
    for b in range(B):
        L = int(lengths[b])
        # full-path distribution: chi-square over all C**L paths against exact probabilities
        keys = (s[:, b, :L] * (C ** torch.arange(L))).sum(-1)
        obs = torch.bincount(keys, minlength=C**L).double()
        exp = torch.zeros(C**L, dtype=torch.float64)
        for path in itertools.product(range(C), repeat=L):
            if not all(mask[b, c] for c in path):
                continue
            sc = init[b, path[0]] + emit[b, 0, path[0]]
            for n in range(1, L):
                sc = sc + trans[b, path[n - 1], path[n]] + emit[b, n, path[n]]
            exp[sum(c * C**i for i, c in enumerate(path))] = sc
        possible = exp != 0
        exp = torch.where(possible, exp, torch.tensor(float("-inf"), dtype=torch.float64))
        exp = torch.softmax(exp, 0) * S
        assert obs[~possible].sum() == 0
        big = exp > 5
        chi2 = (((obs - exp) ** 2) / exp)[big].sum().item()
        dof = int(big.sum()) - 1
        # mean dof, sd sqrt(2 dof): 5 sd above the mean has p < 1e-5
        assert chi2 < dof + 5 * (2 * dof) ** 0.5, (chi2, dof)
    # reproducible from the seed
    s2 = hmm_sample(init, trans, emit, lengths=lengths, state_mask=mask,
                    generator=torch.Generator().manual_seed(123), num_samples=S)
    assert torch.equal(s, s2)


def test_inference_mode_and_caller_tensors_untouched():
    init, trans, emit, lengths, mask = rand_inputs(2, 4, 3, seed=10)
    with torch.inference_mode():
        i2, t2, e2 = init.clone(), trans.clone(), emit.clone()
        post = hmm_posteriors(i2, t2, e2, lengths=lengths, state_mask=mask)
        ll = hmm_log_likelihood(i2, t2, e2, lengths=lengths)
    assert torch.isfinite(post.log_likelihood).all() and torch.isfinite(ll).all()
    assert not init.requires_grad and not emit.requires_grad
    # no function writes into the caller's tensors
    saved = [x.clone() for x in (init, trans, emit)]
    hmm_posteriors(init, trans, emit, lengths=lengths, state_mask=mask)
    hmm_viterbi(init, trans, emit, lengths=lengths, state_mask=mask)
    hmm_sample(init, trans, emit, lengths=lengths, generator=torch.Generator().manual_seed(0))
    leaves = [x.clone().requires_grad_() for x in (init, trans, emit)]
    hmm_log_likelihood(*leaves, lengths=lengths).sum().backward()
    assert all(torch.equal(a, b) for a, b in zip(saved, (init, trans, emit)))


def test_bad_input_raises():
    init, trans, emit, lengths, _ = rand_inputs(2, 4, 3, seed=11)
    with pytest.raises(AlignersInputError):
        hmm_posteriors(init, trans[:, :2], emit)
    with pytest.raises(AlignersInputError, match=r"expected shape \(B,C,C\)"):
        hmm_posteriors(init, trans[:, None].expand(2, 3, 3, 3), emit)  # (B,N-1,C,C)
    with pytest.raises(AlignersInputError):
        hmm_posteriors(init, trans, emit, lengths=torch.tensor([0, 4]))
    with pytest.raises(AlignersInputError):
        hmm_posteriors(init, trans, emit, lengths=torch.tensor([5, 4]))
    with pytest.raises(AlignersInputError):
        hmm_posteriors(init, trans, emit, state_mask=torch.zeros(2, 3, dtype=torch.bool))
    bad = emit.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(AlignersInputError):
        hmm_posteriors(init, trans, bad)
    with pytest.raises(AlignersInputError):
        hmm_viterbi(init.float(), trans, emit)


def test_single_position():
    init, trans, emit, _, mask = rand_inputs(3, 1, 4, seed=12)
    post = hmm_posteriors(init, trans, emit, state_mask=mask)
    logits = (init + emit[:, 0]).masked_fill(~mask, float("-inf"))
    torch.testing.assert_close(post.log_likelihood, torch.logsumexp(logits, -1))
    torch.testing.assert_close(post.state_posteriors[:, 0], torch.softmax(logits, -1))
    assert post.transition_counts.shape == (3, 4, 4) and post.transition_counts.abs().sum() == 0
    path, score = hmm_viterbi(init, trans, emit, state_mask=mask)
    assert torch.equal(path[:, 0], logits.argmax(-1))
    s = hmm_sample(init, trans, emit, state_mask=mask, generator=torch.Generator().manual_seed(1))
    assert s.shape == (1, 3, 1) and mask.gather(1, s[0]).all()


def test_equals_linear_chain_from_same_factors():
    from aligners.lattices import linear_chain

    B, N, C = 4, 7, 5
    init, trans, emit, lengths, _ = rand_inputs(B, N, C, seed=13)
    edge = (trans[:, None] + emit[:, 1:, None, :]).transpose(-1, -2).clone()
    edge[:, 0] += (init + emit[:, 0])[:, None, :]
    post = hmm_posteriors(init, trans, emit, lengths=lengths)
    logz = linear_chain.log_partition(edge, lengths=lengths)
    torch.testing.assert_close(post.log_likelihood, logz)
    marg = linear_chain.marginals(edge, lengths=lengths)
    torch.testing.assert_close(post.transition_counts, marg.sum(1).transpose(-1, -2))
    score, labels = linear_chain.viterbi(edge, lengths=lengths)
    path, vscore = hmm_viterbi(init, trans, emit, lengths=lengths)
    torch.testing.assert_close(vscore, score)
    live = path >= 0
    assert torch.equal(path[live], labels[live])


def test_impossible_item_gives_minus_inf_and_zero_posteriors():
    init, trans, emit, _, _ = rand_inputs(2, 4, 3, seed=14)
    emit = emit.clone()
    emit[1, 2, :] = float("-inf")  # no state can emit position 2 of item 1
    post = hmm_posteriors(init, trans, emit)
    assert post.log_likelihood[1] == float("-inf") and torch.isfinite(post.log_likelihood[0])
    assert post.state_posteriors[1].abs().sum() == 0 and post.transition_counts[1].abs().sum() == 0
    ll = hmm_log_likelihood(init, trans, emit)
    assert ll[1] == float("-inf")
    torch.testing.assert_close(ll[0], post.log_likelihood[0])
    assert hmm_viterbi(init, trans, emit)[1][1] == float("-inf")
