"""Semi-Markov lattice: brute-force oracle under every semiring, gradcheck, batching
(including torch-struct 0.5's variable-length K>=3 failure as a regression test),
torch-struct agreement on single sequences, sampler frequencies, float32 stability."""

import pytest
import torch
import torch_struct
from test_lattice_chain_oracle import (
    marginal_frequencies_ok,
    one_thread,  # noqa: F401 (fixture)
    oracle,
    semimarkov_structures,
)

from aligners.errors import AlignersInputError
from aligners.lattices import semimarkov as sm
from aligners.lattices.linear_chain import LinearChain
from aligners.lattices.semimarkov import SemiMarkov
from aligners.semirings import MaxSemiring, semiring_zero

pytestmark = pytest.mark.filterwarnings("ignore:.*arg_constraints")

CASES = [(2, 2, 2), (3, 3, 2), (4, 2, 3), (5, 3, 2), (5, 3, 3), (5, 4, 2)]  # (N, K, C)


def _inputs(n, k, c, batch=3, seed=0, with_lengths=True):
    g = torch.Generator().manual_seed(seed + 31 * n + 7 * k + c)
    lp = torch.randn(batch, n - 1, k, c, c, generator=g, dtype=torch.float64) * 2
    lengths = None
    if with_lengths:
        lengths = torch.randint(1, n + 1, (batch,), generator=g)
        lengths[0] = n
    return lp, lengths


def _oracles(lp, lengths):
    batch, n_1, k, c, _ = lp.shape
    out = []
    for b in range(batch):
        length = n_1 + 1 if lengths is None else int(lengths[b])
        out.append(oracle(lp[b], semimarkov_structures(n_1 + 1, k, c, length)))
    return out


def _stack(ref, key):
    return torch.stack([r[key] for r in ref])


@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("n,k,c", CASES)
def test_every_semiring_matches_enumeration(n, k, c, with_lengths):
    lp, lengths = _inputs(n, k, c, with_lengths=with_lengths)
    ref = _oracles(lp, lengths)
    s = SemiMarkov()
    torch.testing.assert_close(s.sum(lp, lengths), _stack(ref, "log_partition"))
    torch.testing.assert_close(s.marginals(lp, lengths), _stack(ref, "marginals"))
    mx = SemiMarkov(MaxSemiring)
    torch.testing.assert_close(mx.sum(lp, lengths), _stack(ref, "max"))
    torch.testing.assert_close(mx.marginals(lp, lengths), _stack(ref, "argmax"))
    leaf = lp.clone().requires_grad_()
    (g,) = torch.autograd.grad(mx.sum(leaf, lengths).sum(), leaf)
    torch.testing.assert_close(g, _stack(ref, "argmax"))
    torch.testing.assert_close(s.entropy(lp, lengths), _stack(ref, "entropy"))
    kk = 4
    kmax, topk = s.kmax(lp, kk, lengths), s.topk(lp, kk, lengths)
    for b, r in enumerate(ref):
        m = min(kk, r["count"])
        torch.testing.assert_close(kmax[:m, b], r["sorted_scores"][:m])
        torch.testing.assert_close(topk[:m, b], r["sorted_parts"][:m])
        if m < kk:
            assert (kmax[m:, b] <= semiring_zero(lp.dtype) / 2).all()


def test_viterbi_sequence_round_trips_through_parts():
    lp, lengths = _inputs(6, 3, 3, batch=4, seed=2)
    ref = _oracles(lp, lengths)
    score, seq = sm.viterbi(lp, lengths=lengths)
    torch.testing.assert_close(score, _stack(ref, "max"))
    parts = SemiMarkov.to_parts(seq, (3, 3), lengths)
    torch.testing.assert_close(parts.to(lp.dtype), _stack(ref, "argmax"))
    back, extra = SemiMarkov.from_parts(parts)
    assert extra == (3, 3)
    for b in range(4):
        length = int(lengths[b])
        assert torch.equal(back[b, :length], seq[b, :length])


def test_parts_encoding_matches_torch_struct():
    seq = torch.tensor([[2, -1, 0, 1, -1, -1, 1], [0, 1, -1, -1, 2, 2, 0]])
    ours = SemiMarkov.to_parts(seq, (3, 4))
    theirs = torch_struct.SemiMarkov.to_parts(seq, (3, 4))
    assert torch.equal(ours, theirs)
    theirs_seq = torch_struct.SemiMarkov.from_parts(theirs)[0]
    assert torch.equal(SemiMarkov.from_parts(ours)[0], theirs_seq)
    with pytest.raises(AlignersInputError):
        SemiMarkov.to_parts(seq, (3, 3))  # a segment of length 3 needs K >= 4
    with pytest.raises(AlignersInputError):
        SemiMarkov.to_parts(torch.tensor([[-1, 0, 1]]), (2, 3))


def test_gradcheck_float64_with_lengths():
    lp, lengths = _inputs(5, 3, 2, batch=3, seed=5)
    lp.requires_grad_()
    assert torch.autograd.gradcheck(lambda x: sm.log_partition(x, lengths=lengths), (lp,))
    assert torch.autograd.gradcheck(lambda x: sm.marginals(x, lengths=lengths), (lp,))


def test_batched_equals_one_by_one_where_torch_struct_is_wrong():
    """torch-struct 0.5: variable lengths with K >= 3 are wrong for all but the shortest."""
    g = torch.Generator().manual_seed(0)
    batch, n, k, c = 5, 8, 3, 3
    lp = torch.randn(batch, n - 1, k, c, c, generator=g, dtype=torch.float64)
    lengths = torch.tensor([8, 5, 3, 8, 6])
    s = SemiMarkov()
    z, m = s.sum(lp, lengths), s.marginals(lp, lengths)
    score, seq = sm.viterbi(lp, lengths=lengths)
    ent, kmax = s.entropy(lp, lengths), s.kmax(lp, 3, lengths)
    one_by_one = []
    for b in range(batch):
        length = int(lengths[b])
        one = lp[b : b + 1, : length - 1]
        ts_one = torch_struct.SemiMarkovCRF(one.clone()).partition.detach()
        one_by_one.append(ts_one)
        torch.testing.assert_close(z[b : b + 1], s.sum(one))
        torch.testing.assert_close(z[b : b + 1], ts_one)  # torch-struct right on one sequence
        torch.testing.assert_close(m[b : b + 1, : length - 1], s.marginals(one))
        assert m[b, length - 1 :].abs().sum() == 0
        sc, sq = sm.viterbi(one)
        torch.testing.assert_close(score[b : b + 1], sc)
        assert torch.equal(seq[b, :length], sq[0])
        torch.testing.assert_close(ent[b : b + 1], s.entropy(one))
        torch.testing.assert_close(kmax[:, b : b + 1], s.kmax(one, 3))
    theirs = torch_struct.SemiMarkovCRF(lp.clone(), lengths=lengths.clone()).partition.detach()
    wrong = (theirs - torch.cat(one_by_one)).abs() > 1e-6
    assert wrong.any()  # the torch-struct 0.5 bug this lattice must not reproduce
    assert not wrong[lengths == lengths.min()].any()


def test_agrees_with_torch_struct_on_full_length_batches():
    lp, _ = _inputs(6, 3, 4, batch=3, seed=6)
    theirs = torch_struct.SemiMarkovCRF(lp.clone())
    s = SemiMarkov()
    torch.testing.assert_close(s.sum(lp), theirs.partition.detach())
    torch.testing.assert_close(s.marginals(lp), theirs.marginals.detach())
    torch.testing.assert_close(SemiMarkov(MaxSemiring).marginals(lp), theirs.argmax.detach())
    torch.testing.assert_close(s.entropy(lp), theirs.entropy.detach())


def test_k2_equals_linear_chain():
    g = torch.Generator().manual_seed(3)
    lp = torch.randn(4, 6, 2, 3, 3, generator=g, dtype=torch.float64)
    lengths = torch.tensor([7, 2, 5, 1])
    chain = lp[:, :, 1]
    torch.testing.assert_close(SemiMarkov().sum(lp, lengths), LinearChain().sum(chain, lengths))
    torch.testing.assert_close(SemiMarkov().marginals(lp, lengths)[:, :, 1],
                               LinearChain().marginals(chain, lengths))


def test_sampler_frequencies_match_marginals():
    lp, lengths = _inputs(5, 3, 2, batch=2, seed=4)
    lp = lp / 2
    n_samples = 4000
    samples = SemiMarkov().sample(lp, n_samples, lengths,
                                  generator=torch.Generator().manual_seed(0))
    seq, _ = SemiMarkov.from_parts(samples.flatten(0, 1))
    again = SemiMarkov.to_parts(seq, (2, 3), lengths.repeat(n_samples)).view_as(samples)
    assert torch.equal(again.to(samples.dtype), samples)  # every sample a valid segmentation
    m = SemiMarkov().marginals(lp, lengths)
    assert marginal_frequencies_ok(samples, m)


@pytest.mark.usefixtures("one_thread")
def test_float32_n_c_250_finite():
    g = torch.Generator().manual_seed(0)
    n = c = 250
    lp = torch.randn(1, n - 1, 3, c, c, generator=g) * 5
    leaf = lp.clone().requires_grad_()
    z = sm.log_partition(leaf, lengths=torch.tensor([n]))
    (m,) = torch.autograd.grad(z.sum(), leaf)
    assert torch.isfinite(z).all() and torch.isfinite(m).all()
    score, _ = sm.viterbi(lp)
    assert torch.isfinite(score).all() and (score <= z).all()


def test_inference_mode_and_bad_input():
    lp, lengths = _inputs(5, 3, 2, seed=1)
    ref = SemiMarkov().topk(lp, 2, lengths)
    with torch.inference_mode():
        x = lp.clone()
        m = SemiMarkov().marginals(x, lengths)
        top = SemiMarkov().topk(x, 2, lengths)
    torch.testing.assert_close(top, ref)
    assert torch.isfinite(m).all()
    assert not lp.requires_grad
    with pytest.raises(AlignersInputError):
        sm.log_partition(torch.randn(2, 4, 3, 2, 3))
    with pytest.raises(AlignersInputError):
        sm.log_partition(torch.randn(2, 4, 1, 2, 2))
    with pytest.raises(AlignersInputError):
        sm.log_partition(torch.randn(2, 4, 3, 2, 2), lengths=torch.tensor([6, 2]))


def test_samples_are_segmentations_within_each_length():
    lp, lengths = _inputs(6, 3, 2, batch=3, seed=8)
    dense = SemiMarkov().sample(lp, 200, lengths, generator=torch.Generator().manual_seed(5))
    seq, _ = SemiMarkov.from_parts(dense.flatten(0, 1))
    seq = seq.view(200, 3, 6)
    for b in range(3):
        length = int(lengths[b])
        assert (seq[:, b, length:] == -1).all()
        if length > 1:
            assert (seq[:, b, 0] >= 0).all() and (seq[:, b, length - 1] >= 0).all()
