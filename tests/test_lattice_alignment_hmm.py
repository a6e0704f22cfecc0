"""The specialised alignment HMM lattice vs brute-force enumeration and vs the generic factored
lattice (`hmm_posteriors` / `hmm_viterbi`) on the explicit 2I-state expansion."""

import itertools
import math

import pytest
import torch

from aligners.lattices import (
    alignment_hmm_posteriors,
    alignment_hmm_viterbi,
    hmm_posteriors,
    hmm_viterbi,
)


def _inputs(B, I, J, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    lp = torch.rand(B, I, J, generator=g, dtype=dtype) + 0.01
    nl = torch.rand(B, J, generator=g, dtype=dtype) + 0.01
    S = torch.rand(I + 1, I, generator=g, dtype=dtype) + 0.05
    return lp, nl, S


def _expansion(lp, nl, S, sl, p0):
    """The explicit 2I-state factored HMM (init (B,2I), trans (B,2I,2I), emit (B,J,2I))."""
    B, I, J = lp.shape
    valid = torch.arange(I)[None, :] < sl[:, None]
    w = S[None] * valid[:, None, :]  # (B, I+1, I)
    ctx = w / w.sum(-1, keepdim=True)
    top = torch.cat([(1 - p0) * ctx[:, 1:], p0 * torch.eye(I, dtype=lp.dtype).expand(B, I, I)], 2)
    trans = torch.cat([top, top], 1)
    init = torch.cat([(1 - p0) * ctx[:, 0], (p0 / sl.to(lp.dtype))[:, None] * valid], 1)
    emit = torch.cat([lp.transpose(1, 2), nl[:, :, None].expand(B, J, I)], 2)
    lg = lambda x: torch.log(x).clamp_min(torch.finfo(x.dtype).min)  # noqa: E731
    return lg(init), lg(trans), lg(emit), torch.cat([valid, valid], 1)


def _enumerate(lp, nl, S, I, J, p0):
    """Brute force over all (2I)^J state paths of one item: (Z, link marg, null marg,
    jump counts (I+1, I), best path, best prob)."""
    def word(prev, i):  # prev = -1: start
        return (1 - p0) * S[prev + 1, i] / S[prev + 1].sum()

    Z, best, best_p = 0.0, None, -1.0
    links = torch.zeros(I, J, dtype=torch.float64)
    nulls = torch.zeros(J, dtype=torch.float64)
    jumps = torch.zeros(I + 1, I, dtype=torch.float64)
    for path in itertools.product(range(2 * I), repeat=J):
        p, prev, moves = 1.0, -1, []
        for j, c in enumerate(path):
            if c < I:
                p *= float(word(prev, c) * lp[c, j])
                moves.append((prev + 1, c))
                prev = c
            else:
                if j > 0 and c - I != prev:
                    p = 0.0
                    break
                p *= float((p0 / I if j == 0 else p0) * nl[j])
                prev = c - I
        if p == 0.0:
            continue
        Z += p
        for j, c in enumerate(path):
            if c < I:
                links[c, j] += p
            else:
                nulls[j] += p
        for r, c in moves:
            jumps[r, c] += p
        if p > best_p:
            best, best_p = path, p
    return Z, links / Z, nulls / Z, jumps / Z, list(best), best_p


@pytest.mark.parametrize("I,J", [(1, 1), (1, 3), (2, 3), (3, 2), (3, 3)])
def test_posteriors_and_viterbi_match_enumeration(I, J):
    lp, nl, S = _inputs(1, I, J, seed=10 * I + J)
    p0 = 0.3
    kw = dict(src_lengths=torch.tensor([I]), tgt_lengths=torch.tensor([J]), p0=p0)
    out = alignment_hmm_posteriors(lp, nl, S, **kw)
    Z, links, nulls, jumps, best, best_p = _enumerate(lp[0], nl[0], S, I, J, p0)
    assert math.isclose(out.log_likelihood.item(), math.log(Z), rel_tol=1e-10)
    torch.testing.assert_close(out.link_posteriors[0], links)
    torch.testing.assert_close(out.null_posteriors[0], nulls)
    torch.testing.assert_close(out.jump_counts[0], jumps)
    torch.testing.assert_close(out.jump_norm[0], S.sum(-1))
    vit = alignment_hmm_viterbi(lp, nl, S, **kw)
    assert vit.states[0].tolist() == best
    assert math.isclose(vit.score.item(), math.log(best_p), rel_tol=1e-10)


def _random_lengths_case(seed):
    B, I, J = 7, 6, 8
    lp, nl, S = _inputs(B, I, J, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    sl = torch.randint(1, I + 1, (B,), generator=g)
    tl = torch.randint(1, J + 1, (B,), generator=g)
    sl[0], tl[0] = I, J
    # garbage in the padding must be ignored
    for b in range(B):
        lp[b, sl[b]:] = 7.0
        lp[b, :, tl[b]:] = 5.0
        nl[b, tl[b]:] = 3.0
    return lp, nl, S, sl, tl


@pytest.mark.parametrize("seed", [0, 1])
def test_equals_generic_lattice_on_explicit_expansion_and_batched_equals_one_by_one(seed):
    lp, nl, S, sl, tl = _random_lengths_case(seed)
    B, I, J = lp.shape
    p0 = 0.2
    out = alignment_hmm_posteriors(lp, nl, S, src_lengths=sl, tgt_lengths=tl, p0=p0)
    li, lt, le, mask = _expansion(lp, nl, S, sl, p0)
    ref = hmm_posteriors(li, lt, le, lengths=tl, state_mask=mask)
    torch.testing.assert_close(out.log_likelihood, ref.log_likelihood)
    torch.testing.assert_close(out.link_posteriors, ref.state_posteriors[:, :, :I].transpose(1, 2))
    torch.testing.assert_close(out.null_posteriors, ref.state_posteriors[:, :, I:].sum(-1))
    tc = ref.transition_counts
    counts = torch.cat([ref.state_posteriors[:, :1, :I], tc[:, :I, :I] + tc[:, I:, :I]], 1)
    torch.testing.assert_close(out.jump_counts, counts)
    vit = alignment_hmm_viterbi(lp, nl, S, src_lengths=sl, tgt_lengths=tl, p0=p0)
    path, score = hmm_viterbi(li, lt, le, lengths=tl, state_mask=mask)
    torch.testing.assert_close(vit.score, score)
    assert torch.equal(vit.states, path)  # continuous random inputs: no ties
    for b in range(B):
        i, j = int(sl[b]), int(tl[b])
        one_kw = dict(src_lengths=sl[b:b + 1], tgt_lengths=tl[b:b + 1], p0=p0)
        Sb = S[: i + 1, :i]
        one = alignment_hmm_posteriors(lp[b:b + 1, :i, :j], nl[b:b + 1, :j], Sb, **one_kw)
        torch.testing.assert_close(one.log_likelihood[0], out.log_likelihood[b])
        torch.testing.assert_close(one.link_posteriors[0], out.link_posteriors[b, :i, :j])
        assert float(out.link_posteriors[b, i:].abs().sum() + out.link_posteriors[b, :, j:]
                     .abs().sum()) == 0.0
        torch.testing.assert_close(one.null_posteriors[0], out.null_posteriors[b, :j])
        torch.testing.assert_close(one.jump_counts[0], out.jump_counts[b, : i + 1, :i])
        v1 = alignment_hmm_viterbi(lp[b:b + 1, :i, :j], nl[b:b + 1, :j], Sb, **one_kw)
        # states: word i keeps its index; NULL states shift from I_b + i to I + i
        st = torch.where(v1.states[0] >= i, v1.states[0] - i + I, v1.states[0])
        assert st.tolist() == vit.states[b, :j].tolist()
        assert vit.states[b, j:].eq(-1).all()
        torch.testing.assert_close(v1.score[0], vit.score[b])


def test_long_sentence_viterbi_is_fast_path_and_float32_stable():
    # 300 x 300 in float32: no underflow to NaN, a path in range, NULLs consistent
    lp, nl, S = _inputs(1, 300, 300, seed=3, dtype=torch.float32)
    lp = lp ** 8  # peaked, tiny probabilities
    kw = dict(src_lengths=torch.tensor([300]), tgt_lengths=torch.tensor([300]), p0=0.2)
    out = alignment_hmm_posteriors(lp, nl, S, **kw)
    assert torch.isfinite(out.log_likelihood).all()
    total = out.link_posteriors.sum(1) + out.null_posteriors
    torch.testing.assert_close(total, torch.ones_like(total), atol=1e-3, rtol=0)
    vit = alignment_hmm_viterbi(lp, nl, S, **kw)
    assert torch.isfinite(vit.score).all()
    assert bool(((vit.states >= 0) & (vit.states < 600)).all())


def test_bad_shapes_rejected():
    lp, nl, S = _inputs(2, 3, 4, seed=0)
    with pytest.raises(ValueError, match="jump_scores"):
        alignment_hmm_posteriors(lp, nl, S[:3], src_lengths=torch.tensor([3, 3]),
                                 tgt_lengths=torch.tensor([4, 4]), p0=0.2)


def test_jump_counts_flag_changes_nothing_else():
    """`jump_counts=False` (the phrasal aligner's word rows): jump_counts is None and every
    other output is bit-identical to the default call, with ragged lengths including a
    one-word target."""
    lp, nl, S, sl, tl = _random_lengths_case(7)
    tl[1] = 1
    kw = dict(src_lengths=sl, tgt_lengths=tl, p0=0.25)
    full = alignment_hmm_posteriors(lp, nl, S, **kw)
    lean = alignment_hmm_posteriors(lp, nl, S, **kw, jump_counts=False)
    assert full.jump_counts is not None and lean.jump_counts is None
    for a, b in zip(full, lean):
        if b is not None:
            assert torch.equal(a, b)
