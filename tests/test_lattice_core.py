"""The one private numerical core of the lattices (`aligners.lattices._core`): backtrack,
masking, log zero, categorical sampler; and the specialised lattices (alignment HMM, HSMM)
equal to the generic semiring DPs (`linear_chain`, `semimarkov`) on materialised potentials."""

import re
from pathlib import Path

import pytest
import torch

from aligners.lattices import (
    alignment_hmm_posteriors,
    alignment_hmm_viterbi,
    hsmm_posteriors,
    hsmm_viterbi,
    linear_chain,
    sample_categorical,
    semimarkov,
)
from aligners.lattices._core import backtrack, fill_segments, length_mask
from aligners.semirings import semiring_zero
from tests.test_lattice_factored_semimarkov import materialise

LATTICES = Path(__file__).resolve().parents[1] / "aligners" / "lattices"


def _walk(length_ptr, label_ptr, last, label):
    """Per-item Python reference of the backtrack: {point: (label, seg_len)}."""
    out = []
    for b in range(label_ptr.shape[0]):
        pos, lab, row = int(last[b]), int(label[b]), {}
        row[pos] = (lab, 0)
        while pos > 0:
            k = 1 if length_ptr is None else int(length_ptr[b, pos - 1, lab])
            prev = int(label_ptr[b, pos - 1, lab])
            row[pos] = (row[pos][0], k)
            pos -= k
            lab = prev
            row[pos] = (lab, 0)
        out.append(row)
    return out


@pytest.mark.parametrize("segmental", [False, True])
def test_backtrack_equals_per_item_walk(segmental):
    g = torch.Generator().manual_seed(3)
    B, T, C = 7, 9, 4
    label_ptr = torch.randint(0, C, (B, T, C), generator=g)
    length_ptr = None
    if segmental:  # lengths 1..3 that never cross point 0
        length_ptr = torch.randint(1, 4, (B, T, C), generator=g)
        points = torch.arange(1, T + 1).view(1, T, 1)
        length_ptr = torch.minimum(length_ptr, points)
    last = torch.randint(0, T + 1, (B,), generator=g)
    label = torch.randint(0, C, (B,), generator=g)
    labels, seg_len = backtrack(length_ptr, label_ptr, last=last, label=label)
    ref = _walk(length_ptr, label_ptr, last, label)
    for b in range(B):
        for p in range(T + 1):
            lab, k = ref[b].get(p, (-1, 0))
            assert int(labels[b, p]) == lab and int(seg_len[b, p]) == k, (b, p)


def test_fill_segments_and_length_mask():
    labels = torch.tensor([[5, -1, 2, -1, -1, 3], [0, 1, -1, -1, -1, -1]])
    assert fill_segments(labels).tolist() == [[2, 2, 3, 3, 3], [1, -1, -1, -1, -1]]
    assert length_mask(torch.tensor([1, 3]), 3).tolist() == [[True, False, False], [True] * 3]


def test_sample_categorical_frequencies_reproducible_and_never_impossible():
    logits = torch.tensor([[0.0, float("-inf"), 1.0, semiring_zero(torch.float32)],
                           [2.0, -1.0, 0.5, 0.0]])
    draws = sample_categorical(logits.expand(20000, 2, 4),
                               generator=torch.Generator().manual_seed(0))
    again = sample_categorical(logits.expand(20000, 2, 4),
                               generator=torch.Generator().manual_seed(0))
    assert torch.equal(draws, again)
    for row in range(2):
        freq = torch.bincount(draws[:, row], minlength=4).double() / 20000
        expect = logits[row].double().softmax(-1)
        assert torch.allclose(freq, expect, atol=0.015), (freq, expect)
    assert not bool(((draws[:, 0] == 1) | (draws[:, 0] == 3)).any())
    impossible = torch.full((3, 5), float("-inf"))
    assert sample_categorical(impossible).tolist() == [0, 0, 0]


def test_one_log_zero_in_every_lattice():
    """No lattice file defines its own log zero (finfo.min scaled or a magic -1e5)."""
    for path in LATTICES.glob("*.py"):
        text = path.read_text()
        assert not re.search(r"finfo\([^)]*\)\.min", text), path.name
        assert not re.search(r"-1e[0-9]", text), path.name
    emit = torch.zeros(1, 2, 2, 3)
    lp = materialise(emit, torch.zeros(1, 3, 3), torch.zeros(1, 3))
    assert float(lp[0, 0, 0, 0, 1]) == semiring_zero(torch.float32)


def _alignment_case(seed, B=4, I=3, J=5):
    g = torch.Generator().manual_seed(seed)
    lp = torch.rand(B, I, J, generator=g, dtype=torch.float64) + 0.01
    nl = torch.rand(B, J, generator=g, dtype=torch.float64) + 0.01
    S = torch.rand(I + 1, I, generator=g, dtype=torch.float64) + 0.05
    sl = torch.randint(1, I + 1, (B,), generator=g)
    sl[0] = I
    tl = torch.randint(2, J + 1, (B,), generator=g)
    tl[1] = J
    return lp, nl, S, sl, tl


def _alignment_linear_chain(lp, nl, S, sl, p0):
    """The alignment HMM as materialised linear-chain potentials (B, J-1, 2I, 2I)."""
    B, I, J = lp.shape
    valid = torch.arange(I)[None, :] < sl[:, None]
    w = S[None] * valid[:, None, :]
    ctx = w / w.sum(-1, keepdim=True)
    top = torch.cat([(1 - p0) * ctx[:, 1:], p0 * torch.eye(I, dtype=lp.dtype).expand(B, I, I)], 2)
    trans = torch.cat([top, top], 1).log()  # [c_prev, c_next]
    init = torch.cat([(1 - p0) * ctx[:, 0], (p0 / sl.to(lp.dtype))[:, None] * valid], 1).log()
    emit = torch.cat([lp.transpose(1, 2), nl[:, :, None].expand(B, J, I)], 2).log()
    mask = torch.cat([valid, valid], 1)
    edge = trans.transpose(1, 2)[:, None] + emit[:, 1:, :, None]  # [b, n, c_next, c_prev]
    edge[:, 0] += (init + emit[:, 0]).unsqueeze(1)
    pair = mask[:, None, :, None] & mask[:, None, None, :]
    return edge.masked_fill(~pair, float("-inf"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alignment_hmm_equals_generic_linear_chain_on_materialised_potentials(seed):
    lp, nl, S, sl, tl = _alignment_case(seed)
    p0 = 0.2
    I = lp.shape[1]
    post = alignment_hmm_posteriors(lp, nl, S, src_lengths=sl, tgt_lengths=tl, p0=p0)
    vit = alignment_hmm_viterbi(lp, nl, S, src_lengths=sl, tgt_lengths=tl, p0=p0)
    edge = _alignment_linear_chain(lp, nl, S, sl, p0)
    log_z = linear_chain.log_partition(edge, lengths=tl)
    assert torch.allclose(post.log_likelihood, log_z, atol=1e-10)
    marg = linear_chain.marginals(edge, lengths=tl)  # (B, J-1, 2I, 2I)
    state = torch.cat([marg[:, :1].sum(-2), marg.sum(-1)], 1)  # (B, J, 2I)
    assert torch.allclose(post.link_posteriors, state[..., :I].transpose(1, 2), atol=1e-10)
    assert torch.allclose(post.null_posteriors, state[..., I:].sum(-1), atol=1e-10)
    score, seq = linear_chain.viterbi(edge, lengths=tl)
    assert torch.allclose(vit.score, score, atol=1e-10)
    live = torch.arange(lp.shape[2])[None, :] < tl[:, None]
    assert torch.equal(torch.where(live, seq, -1), vit.states)


def _hsmm_semimarkov(init, trans, seg):
    """HSMM (N positions, segments of length 1..K) as materialised semi-Markov potentials
    (B, N, K+1, C, C) over N+1 points, point 0 a START label fixed to 0."""
    B, N, K, C = seg.shape
    zero = semiring_zero(seg.dtype)
    lp = torch.full((B, N, K + 1, C, C), zero, dtype=seg.dtype)
    for s in range(N):
        for k in range(1, min(K, N - s) + 1):
            e = seg[:, s + k - 1, k - 1]  # (B, C) segment over positions s..s+k-1
            if s == 0:
                lp[:, 0, k, :, 0] = e + init
            else:
                lp[:, s, k] = e[:, :, None] + trans.transpose(1, 2)
    return lp


@pytest.mark.parametrize("seed", [0, 1])
def test_hsmm_equals_generic_semimarkov_on_materialised_potentials(seed):
    g = torch.Generator().manual_seed(seed)
    B, N, K, C = 4, 6, 3, 3
    init = torch.randn(B, C, generator=g, dtype=torch.float64)
    trans = torch.randn(B, C, C, generator=g, dtype=torch.float64)
    seg = torch.randn(B, N, K, C, generator=g, dtype=torch.float64)
    lengths = torch.tensor([N, 1, 4, 5])
    post = hsmm_posteriors(init, trans, seg, lengths=lengths)
    lp = _hsmm_semimarkov(init, trans, seg)
    log_z = semimarkov.log_partition(lp, lengths=lengths + 1)
    assert torch.allclose(post.log_likelihood, log_z, atol=1e-10)
    marg = semimarkov.marginals(lp, lengths=lengths + 1).sum(-1)  # (B, N, K+1, C) by start
    ref = torch.zeros_like(post.segment_posteriors)
    for s in range(N):
        for k in range(1, min(K, N - s) + 1):
            ref[:, s + k - 1, k - 1] = marg[:, s, k]
    assert torch.allclose(post.segment_posteriors, ref, atol=1e-10)
    vit = hsmm_viterbi(init, trans, seg, lengths=lengths)
    score, seq = semimarkov.viterbi(lp, lengths=lengths + 1)
    assert torch.allclose(vit.score, score, atol=1e-10)
    for b in range(B):  # segment ends (points) and their labels agree
        ends = [(e, c) for _, e, c in vit.segments[b]]
        ref_ends = [(p, int(seq[b, p])) for p in range(1, int(lengths[b]) + 1) if seq[b, p] >= 0]
        assert ends == ref_ends
        states = [c for s, e, c in vit.segments[b] for _ in range(s, e)]
        assert vit.states[b, : int(lengths[b])].tolist() == states
        assert bool((vit.states[b, int(lengths[b]):] == -1).all())
