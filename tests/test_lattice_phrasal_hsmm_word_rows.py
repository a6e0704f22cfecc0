"""The numba word-row forward-backward (`aligners.lattices.phrasal_hsmm_word_rows`) against
brute-force enumeration, the torch alignment HMM, and batched == one-by-one."""

import math

import pytest
import torch
from test_lattice_alignment_hmm import _enumerate, _inputs

from aligners.lattices.alignment_hmm import alignment_hmm_posteriors
from aligners.lattices.phrasal_hsmm_word_rows import word_rows_posteriors_cpu


@pytest.mark.parametrize("I,J", [(1, 1), (1, 3), (2, 3), (3, 2), (3, 3)])
def test_matches_enumeration(I, J):
    lp, nl, S = _inputs(1, I, J, seed=10 * I + J)
    p0 = 0.3
    ll, links, nulls = word_rows_posteriors_cpu(lp, nl, S, src_lengths=torch.tensor([I]),
                                                tgt_lengths=torch.tensor([J]), p0=p0)
    Z, ref_links, ref_nulls, _, _, _ = _enumerate(lp[0], nl[0], S, I, J, p0)
    assert math.isclose(ll.item(), math.log(Z), rel_tol=1e-10)
    torch.testing.assert_close(links[0], ref_links)
    torch.testing.assert_close(nulls[0], ref_nulls)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_equals_torch_alignment_hmm_with_ragged_lengths_and_strided_input(dtype, tol):
    """Padding garbage ignored (posteriors 0 there); a transposed (strided) link view, as
    the backward direction passes it; float32 results within float32 rounding."""
    g = torch.Generator().manual_seed(4)
    B, I, J = 9, 7, 8
    lp = torch.rand(B, J, I, generator=g, dtype=dtype).transpose(1, 2)  # (B, I, J) view
    nl = torch.rand(B, J, generator=g, dtype=dtype)
    S = torch.rand(I + 1, I, generator=g, dtype=dtype)
    sl = torch.randint(1, I + 1, (B,), generator=g)
    tl = torch.randint(1, J + 1, (B,), generator=g)
    sl[0], tl[0], tl[1] = I, J, 1
    for b in range(B):
        lp[b, sl[b]:] = 7.0
        lp[b, :, tl[b]:] = 5.0
        nl[b, tl[b]:] = 3.0
    kw = dict(src_lengths=sl, tgt_lengths=tl, p0=0.25)
    ref = alignment_hmm_posteriors(lp, nl, S, **kw)
    ll, links, nulls = word_rows_posteriors_cpu(lp, nl, S, **kw)
    assert ll.dtype == links.dtype == nulls.dtype == dtype
    torch.testing.assert_close(ll, ref.log_likelihood, rtol=tol, atol=tol)
    torch.testing.assert_close(links, ref.link_posteriors, rtol=tol, atol=tol)
    torch.testing.assert_close(nulls, ref.null_posteriors, rtol=tol, atol=tol)
    for b in range(B):  # batched == one-by-one (bit for bit: per-item arithmetic)
        i, j = int(sl[b]), int(tl[b])
        one = word_rows_posteriors_cpu(lp[b:b + 1, :i, :j], nl[b:b + 1, :j], S[:i + 1, :i],
                                       src_lengths=sl[b:b + 1], tgt_lengths=tl[b:b + 1],
                                       p0=0.25)
        assert torch.equal(one[0][0], ll[b])
        assert torch.equal(one[1][0], links[b, :i, :j])
        assert torch.equal(one[2][0], nulls[b, :j])
        assert float(links[b, i:].abs().sum() + links[b, :, j:].abs().sum()
                     + nulls[b, j:].abs().sum()) == 0.0


def test_bad_shapes_rejected():
    lp, nl, S = _inputs(2, 3, 4, seed=0)
    with pytest.raises(ValueError, match="jump_scores"):
        word_rows_posteriors_cpu(lp, nl, S[:3], src_lengths=torch.tensor([3, 3]),
                                 tgt_lengths=torch.tensor([4, 4]), p0=0.2)
