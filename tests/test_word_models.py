"""Word aligner maths: Model 1 and HMM posteriors vs brute-force enumeration, batched ==
one by one, EM monotonicity, agreement symmetry (the specialised lattice vs the generic one:
tests/test_lattice_alignment_hmm.py)."""

import itertools
import math

import numpy as np
import pytest
import torch
from word_toy import toy_corpus

from aligners.data.bitext import PairIndex
from aligners.data.vocab import WordIds
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner, normalise_counts
from aligners.models.hmm.directional import (
    hmm_direction_posteriors,
    ibm1_posteriors,
    jump_buckets,
)


def encode(src, tgt, **kw):
    si, ti = WordIds(), WordIds()
    s = [si.encode(x) for x in src]
    t = [ti.encode(x) for x in tgt]
    return PairIndex(s, t, n_src_words=len(si), n_tgt_words=len(ti), **kw), si, ti


def test_ibm1_posteriors_match_enumeration():
    torch.manual_seed(0)
    I, J = 3, 2
    lp = torch.rand(1, I, J, dtype=torch.float64)
    nl = torch.rand(1, J, dtype=torch.float64)
    ll, post, null = ibm1_posteriors(lp, nl, src_lengths=torch.tensor([I]),
                                     tgt_lengths=torch.tensor([J]))
    total, marg = 0.0, torch.zeros(I + 1, J, dtype=torch.float64)
    for a in itertools.product(range(I + 1), repeat=J):  # 0 = NULL, i+1 = word i
        p = 1.0
        for j, aj in enumerate(a):
            p *= (nl[0, j] if aj == 0 else lp[0, aj - 1, j]) / (I + 1)
        total += p
        for j, aj in enumerate(a):
            marg[aj, j] += p
    assert math.isclose(ll.item(), math.log(total), rel_tol=1e-12)
    torch.testing.assert_close(post[0], marg[1:] / total)
    torch.testing.assert_close(null[0], marg[0] / total)


def _och_ney_path_prob(path, lp, nl, I, jw, p0, K):
    """p(path, t) of the Och-Ney HMM written from its definition (state c<I word, c>=I NULL)."""
    def word_trans(prev, i):  # prev = -1 for the start
        w = [jw[min(max(x - prev, -K), K) + K] for x in range(I)]
        return (1 - p0) * w[i] / sum(w)

    p = 1.0
    prev_pos = -1
    for j, c in enumerate(path):
        if c < I:
            p *= word_trans(prev_pos, c) * lp[c, j]
            prev_pos = c
        else:
            i = c - I
            if j == 0:
                p *= p0 / I
            elif i != prev_pos:
                return 0.0
            else:
                p *= p0
            p *= nl[j]
            prev_pos = i
    return p


@pytest.mark.parametrize("I,J", [(1, 3), (2, 3), (3, 2)])
def test_hmm_posteriors_match_enumeration(I, J):
    torch.manual_seed(I * 10 + J)
    K, p0 = 2, 0.3
    lp = torch.rand(1, I, J, dtype=torch.float64)
    nl = torch.rand(1, J, dtype=torch.float64)
    jw = torch.rand(2 * K + 1, dtype=torch.float64) + 0.1
    ll, post, null, stats = hmm_direction_posteriors(
        lp, nl, src_lengths=torch.tensor([I]), tgt_lengths=torch.tensor([J]),
        jump_weights=jw, p0=p0)
    total = 0.0
    links = torch.zeros(I, J, dtype=torch.float64)
    nulls = torch.zeros(J, dtype=torch.float64)
    jumps = torch.zeros(2 * K + 1, dtype=torch.float64)
    for path in itertools.product(range(2 * I), repeat=J):
        p = _och_ney_path_prob(path, lp[0], nl[0], I, jw.tolist(), p0, K)
        total += p
        prev = -1
        for j, c in enumerate(path):
            if c < I:
                links[c, j] += p
                jumps[min(max(c - prev, -K), K) + K] += p
                prev = c
            else:
                nulls[j] += p
                prev = c - I
    assert math.isclose(ll.item(), math.log(total), rel_tol=1e-10)
    torch.testing.assert_close(post[0], links / total)
    torch.testing.assert_close(null[0], nulls / total)
    torch.testing.assert_close(stats[0], jumps / total)


def test_hmm_posteriors_batched_equal_one_by_one_with_random_lengths():
    torch.manual_seed(3)
    B, I, J, K = 6, 5, 7, 3
    lp = torch.rand(B, I, J, dtype=torch.float64)
    nl = torch.rand(B, J, dtype=torch.float64)
    sl = torch.tensor([5, 1, 3, 4, 5, 2])
    tl = torch.tensor([7, 3, 1, 6, 2, 7])
    jw = torch.rand(2 * K + 1, dtype=torch.float64)
    kw = dict(src_lengths=sl, tgt_lengths=tl, jump_weights=jw, p0=0.25)
    fast = hmm_direction_posteriors(lp, nl, **kw)
    for b in range(B):
        one = hmm_direction_posteriors(
            lp[b:b + 1, : sl[b], : tl[b]], nl[b:b + 1, : tl[b]], src_lengths=sl[b:b + 1],
            tgt_lengths=tl[b:b + 1], jump_weights=jw, p0=0.25)
        torch.testing.assert_close(one[0][0], fast[0][b])
        torch.testing.assert_close(one[1][0], fast[1][b, : sl[b], : tl[b]])


def test_jump_buckets_clamp():
    bk = jump_buckets(n_src=4, max_jump=2)
    assert bk.shape == (5, 4)
    assert bk[0].tolist() == [3, 4, 4, 4]  # from the start (position -1): widths 1..4
    assert bk[4].tolist() == [0, 0, 1, 2]  # from position 3: widths -3..0


def test_normalise_counts_sums_to_one_per_given_word():
    counts = torch.tensor([1.0, 3.0, 2.0, 0.0])  # last slot = unseen pairs
    given = torch.tensor([0, 0, 1])
    p = normalise_counts(counts, given, n_given=2, n_outcomes=3, alpha=0.0)
    torch.testing.assert_close(p[:3], torch.tensor([0.25, 0.75, 1.0]))
    vb = normalise_counts(counts, given, n_given=2, n_outcomes=3, alpha=0.1)
    assert bool((vb[:3] < p[:3]).all())  # VB discounts (exp digamma < mean)


@pytest.mark.parametrize("alpha", [0.0])
def test_em_log_likelihood_never_decreases_without_agreement(alpha):
    src, tgt = toy_corpus(80)
    index, _, _ = encode(src, tgt, cells=200)
    cfg = WordAlignConfig(ibm1_iterations=4, hmm_iterations=5, agreement=False, alpha=alpha,
                          max_jump=3)
    model = WordAligner.from_index(index, cfg)
    history = model.fit(index)
    ibm1 = [sum(h) for h in history[:4]]
    hmm = [sum(h) for h in history[4:]]
    for seq in (ibm1, hmm):
        for a, b in zip(seq, seq[1:]):
            assert b >= a - 1e-6 * abs(a), (seq)
    assert hmm[-1] > hmm[0]


def test_agreement_is_symmetric_under_swapping_directions():
    src, tgt = toy_corpus(50, seed=1)
    cfg = WordAlignConfig(ibm1_iterations=2, hmm_iterations=2, agreement=True, max_jump=3)
    a_idx, a_s, a_t = encode(src, tgt, cells=300)
    b_idx, b_s, b_t = encode(tgt, src, cells=300)
    a = WordAligner.from_index(a_idx, cfg)
    b = WordAligner.from_index(b_idx, cfg)
    ha, hb = a.fit(a_idx), b.fit(b_idx)
    np.testing.assert_allclose(np.array(ha), np.array(hb)[:, ::-1], rtol=1e-5)
    # tables: p_a(t|s) == p_b(t|s) pair by pair
    pa = {(a_s.words[int(k) // a.n_tgt_words], a_t.words[int(k) % a.n_tgt_words]): float(v)
          for k, v in zip(a.keys, a.t_fwd[:-1])}
    pb = {(b_t.words[int(k) % b.n_tgt_words], b_s.words[int(k) // b.n_tgt_words]): float(v)
          for k, v in zip(b.keys, b.t_bwd[:-1])}
    assert pa.keys() == pb.keys()
    for key in pa:
        assert math.isclose(pa[key], pb[key], rel_tol=1e-4, abs_tol=1e-9)
    torch.testing.assert_close(a.jump_fwd, b.jump_bwd)
    # posteriors of one sentence: transposed
    ra = next(x for x in a_idx if 0 in x.rows.tolist())
    rb = next(x for x in b_idx if 0 in x.rows.tolist())
    ka, kb = ra.rows.tolist().index(0), rb.rows.tolist().index(0)
    I, J = len(src[0]), len(tgt[0])
    pa_, pb_ = a.posteriors(ra), b.posteriors(rb)
    torch.testing.assert_close(pa_.links_fwd[ka, :I, :J], pb_.links_bwd[kb, :J, :I].T,
                               rtol=1e-4, atol=1e-5)

