"""Linear-chain lattice: brute-force oracle under every semiring, gradcheck, batching,
torch-struct agreement, sampler frequencies, float32 stability, inference_mode."""

import pytest
import torch
import torch_struct
from test_lattice_chain_oracle import (
    chain_structures,
    marginal_frequencies_ok,
    one_thread,  # noqa: F401 (fixture)
    oracle,
)

from aligners.errors import AlignersInputError
from aligners.lattices import linear_chain as lc
from aligners.lattices.linear_chain import LinearChain
from aligners.semirings import (
    KMaxSemiring,
    LogSemiring,
    MaxSemiring,
    SampledSemiring,
    semiring_zero,
)

pytestmark = pytest.mark.filterwarnings("ignore:.*arg_constraints")

CASES = [(2, 1), (2, 3), (3, 2), (4, 3), (5, 2), (5, 3)]  # (N, C)


def _inputs(n, c, batch=3, seed=0, with_lengths=True):
    g = torch.Generator().manual_seed(seed + 17 * n + c)
    lp = torch.randn(batch, n - 1, c, c, generator=g, dtype=torch.float64) * 2
    if with_lengths:
        lengths = torch.randint(1, n + 1, (batch,), generator=g)
        lengths[0] = n
    else:
        lengths = None
    return lp, lengths


def _oracles(lp, lengths):
    batch, n_1, c, _ = lp.shape
    out = []
    for b in range(batch):
        length = n_1 + 1 if lengths is None else int(lengths[b])
        out.append(oracle(lp[b], chain_structures(n_1 + 1, c, length)))
    return out


@pytest.mark.parametrize("with_lengths", [False, True])
@pytest.mark.parametrize("n,c", CASES)
def test_every_semiring_matches_enumeration(n, c, with_lengths):
    lp, lengths = _inputs(n, c, with_lengths=with_lengths)
    ref = _oracles(lp, lengths)
    s = LinearChain()
    torch.testing.assert_close(s.sum(lp, lengths), torch.stack([r["log_partition"] for r in ref]))
    torch.testing.assert_close(s.marginals(lp, lengths), torch.stack([r["marginals"] for r in ref]))
    mx = LinearChain(MaxSemiring)
    torch.testing.assert_close(mx.sum(lp, lengths), torch.stack([r["max"] for r in ref]))
    torch.testing.assert_close(mx.marginals(lp, lengths), torch.stack([r["argmax"] for r in ref]))
    # argmax through autograd of the Max semiring (generic path) == backpointers
    with torch.enable_grad():
        leaf = lp.clone().requires_grad_()
        (g,) = torch.autograd.grad(mx.sum(leaf, lengths).sum(), leaf)
    torch.testing.assert_close(g, torch.stack([r["argmax"] for r in ref]))
    torch.testing.assert_close(s.entropy(lp, lengths), torch.stack([r["entropy"] for r in ref]))
    k = 4
    kmax = s.kmax(lp, k, lengths)
    topk = s.topk(lp, k, lengths)
    for b, r in enumerate(ref):
        m = min(k, r["count"])
        torch.testing.assert_close(kmax[:m, b], r["sorted_scores"][:m])
        torch.testing.assert_close(topk[:m, b], r["sorted_parts"][:m])
        if m < k:  # fewer structures than k: padded with (at most) the semiring zero
            assert (kmax[m:, b] <= semiring_zero(lp.dtype) / 2).all()


@pytest.mark.parametrize("n,c", [(4, 3), (5, 2)])
def test_functional_api_and_viterbi_sequence(n, c):
    lp, lengths = _inputs(n, c, batch=4, seed=3)
    ref = _oracles(lp, lengths)
    torch.testing.assert_close(lc.log_partition(lp, lengths=lengths),
                               torch.stack([r["log_partition"] for r in ref]))
    torch.testing.assert_close(lc.marginals(lp, lengths=lengths),
                               torch.stack([r["marginals"] for r in ref]))
    score, seq = lc.viterbi(lp, lengths=lengths)
    torch.testing.assert_close(score, torch.stack([r["max"] for r in ref]))
    best = torch.stack([r["argmax"] for r in ref]).long()
    torch.testing.assert_close(LinearChain.to_parts(seq, c, lengths).to(best.dtype), best)


def test_gradcheck_float64_with_lengths():
    lp, lengths = _inputs(5, 3, batch=3, seed=5)
    lp.requires_grad_()
    assert torch.autograd.gradcheck(lambda x: lc.log_partition(x, lengths=lengths), (lp,))
    # marginals are themselves differentiable (second derivatives of log Z)
    assert torch.autograd.gradcheck(lambda x: lc.marginals(x, lengths=lengths), (lp,))


def test_gradient_of_log_partition_is_marginals():
    lp, lengths = _inputs(6, 4, batch=5, seed=9)
    leaf = lp.clone().requires_grad_()
    (g,) = torch.autograd.grad(lc.log_partition(leaf, lengths=lengths).sum(), leaf)
    torch.testing.assert_close(g, lc.marginals(lp, lengths=lengths))


def test_batched_equals_one_by_one_random_lengths():
    g = torch.Generator().manual_seed(11)
    batch, n, c = 7, 9, 4
    lp = torch.randn(batch, n - 1, c, c, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, n + 1, (batch,), generator=g)
    s = LinearChain()
    z, m = s.sum(lp, lengths), s.marginals(lp, lengths)
    score, seq = lc.viterbi(lp, lengths=lengths)
    ent = s.entropy(lp, lengths)
    kmax = s.kmax(lp, 3, lengths)
    for b in range(batch):
        length = int(lengths[b])
        one = lp[b : b + 1, : length - 1]
        torch.testing.assert_close(z[b : b + 1], s.sum(one))
        torch.testing.assert_close(m[b : b + 1, : length - 1], s.marginals(one))
        assert m[b, length - 1 :].abs().sum() == 0
        sc, sq = lc.viterbi(one)
        torch.testing.assert_close(score[b : b + 1], sc)
        assert torch.equal(seq[b, :length], sq[0])
        torch.testing.assert_close(ent[b : b + 1], s.entropy(one))
        torch.testing.assert_close(kmax[:, b : b + 1], s.kmax(one, 3))


def test_agrees_with_torch_struct_linear_chain():
    g = torch.Generator().manual_seed(2)
    batch, n, c = 4, 7, 5
    lp = torch.randn(batch, n - 1, c, c, generator=g, dtype=torch.float64)
    lengths = torch.tensor([7, 3, 5, 1])
    theirs = torch_struct.LinearChainCRF(lp.clone(), lengths=lengths.clone())
    s = LinearChain()
    torch.testing.assert_close(s.sum(lp, lengths), theirs.partition.detach())
    torch.testing.assert_close(s.marginals(lp, lengths), theirs.marginals.detach())
    torch.testing.assert_close(LinearChain(MaxSemiring).marginals(lp, lengths),
                               theirs.argmax.detach())
    torch.testing.assert_close(s.entropy(lp, lengths), theirs.entropy.detach())
    torch.testing.assert_close(s.kmax(lp, 3, lengths), theirs.kmax(3).detach())
    # their semirings work in our lattice too
    torch.testing.assert_close(LinearChain(torch_struct.LogSemiring).sum(lp, lengths),
                               theirs.partition.detach())
    torch.testing.assert_close(LinearChain(torch_struct.MaxSemiring).sum(lp, lengths),
                               theirs.max.detach())


def test_sampler_frequencies_match_marginals():
    lp, lengths = _inputs(4, 3, batch=2, seed=4)
    lp = lp / 2
    n_samples = 4000
    samples = LinearChain().sample(lp, n_samples, lengths,
                                   generator=torch.Generator().manual_seed(0))
    assert samples.shape == (n_samples, *lp.shape)
    # every sample is a valid structure: exactly L-1 edges, chained labels
    per = samples.flatten(2).sum(-1)
    assert torch.equal(per, (lengths - 1).to(per.dtype).expand_as(per))
    seq, _ = LinearChain.from_parts(samples.flatten(0, 1))
    again = LinearChain.to_parts(seq, 3, lengths.repeat(n_samples)).view_as(samples)
    assert torch.equal(again.to(samples.dtype), samples)
    m = LinearChain().marginals(lp, lengths)
    assert marginal_frequencies_ok(samples, m)
    # reproducible from the generator
    again = LinearChain().sample(lp, 5, lengths, generator=torch.Generator().manual_seed(7))
    again2 = LinearChain().sample(lp, 5, lengths, generator=torch.Generator().manual_seed(7))
    assert torch.equal(again, again2)


@pytest.mark.usefixtures("one_thread")
def test_float32_n_c_250_finite():
    g = torch.Generator().manual_seed(0)
    n = c = 250
    lp = torch.randn(1, n - 1, c, c, generator=g) * 5
    lengths = torch.tensor([n])
    leaf = lp.clone().requires_grad_()
    z = lc.log_partition(leaf, lengths=lengths)
    (m,) = torch.autograd.grad(z.sum(), leaf)
    assert torch.isfinite(z).all() and torch.isfinite(m).all()
    torch.testing.assert_close(m.sum((-1, -2)), torch.ones(1, n - 1), atol=1e-3, rtol=0)
    score, seq = lc.viterbi(lp, lengths=lengths)
    assert torch.isfinite(score).all()
    torch.testing.assert_close(LinearChain().score(lp, LinearChain.to_parts(seq, c)), score,
                               rtol=1e-5, atol=1e-2)


def test_inference_mode_and_no_mutation_of_caller_tensor():
    lp, lengths = _inputs(5, 3, seed=1)
    ref_m = LinearChain().marginals(lp, lengths)
    ref_top = LinearChain().topk(lp, 2, lengths)
    with torch.inference_mode():
        x = lp.clone()
        z = LinearChain().sum(x, lengths)
        m = LinearChain().marginals(x, lengths)
        top = LinearChain().topk(x, 2, lengths)
        smp = LinearChain().sample(x, 3, lengths, generator=torch.Generator().manual_seed(0))
        best = LinearChain(MaxSemiring).marginals(x, lengths)
    assert torch.isfinite(z).all() and smp.shape == (3, *lp.shape)
    torch.testing.assert_close(m, ref_m)
    torch.testing.assert_close(top, ref_top)
    torch.testing.assert_close(best, ref_top[0])
    y = lp.clone()
    LinearChain().sum(y, lengths)
    LinearChain().topk(y, 2, lengths)
    LinearChain(KMaxSemiring(2)).marginals(y, lengths, _raw=True)
    assert not y.requires_grad


def test_parts_round_trip_and_torch_struct_encoding():
    g = torch.Generator().manual_seed(0)
    seq = torch.randint(0, 4, (3, 6), generator=g)
    lengths = torch.tensor([6, 2, 4])
    parts = LinearChain.to_parts(seq, 4, lengths)
    ts_parts = torch_struct.LinearChain.to_parts(seq, 4, lengths)
    assert torch.equal(parts, ts_parts)
    back, c = LinearChain.from_parts(parts)
    assert c == 4
    for b in range(3):
        assert torch.equal(back[b, : lengths[b]], seq[b, : lengths[b]])


def test_bad_input_raises_input_error():
    lp = torch.randn(2, 3, 2, 2)
    with pytest.raises(AlignersInputError):
        lc.log_partition(torch.randn(2, 3, 2, 3))
    with pytest.raises(AlignersInputError):
        lc.log_partition(lp, lengths=torch.tensor([5, 1]))
    with pytest.raises(AlignersInputError):
        lc.log_partition(lp, lengths=torch.tensor([0, 1]))
    with pytest.raises(AlignersInputError):
        lc.log_partition(lp, lengths=torch.tensor([1.0, 2.0]))
    with pytest.raises(AlignersInputError):
        lc.log_partition(lp, lengths=torch.tensor([1, 2, 3]))
    with pytest.raises(AlignersInputError):
        lc.log_partition(lp.half())
    with pytest.raises(AlignersInputError):
        lc.log_partition(lp.long())


def test_no_length_needs_to_equal_n_and_very_negative_scores():
    lp, _ = _inputs(5, 3, batch=2, seed=8)
    lengths = torch.tensor([3, 2])
    ref = _oracles(lp, lengths)
    torch.testing.assert_close(lc.log_partition(lp, lengths=lengths),
                               torch.stack([r["log_partition"] for r in ref]))
    # forbidden transitions far below torch-struct's -1e5 zero stay exact in float64
    lp2 = lp.clone()
    lp2[:, :, 0, 1] = -1e7
    lp2[:, :, 1, 0] = float("-inf")
    ref2 = _oracles(lp2, None)
    s = LinearChain(LogSemiring)
    torch.testing.assert_close(s.sum(lp2), torch.stack([r["log_partition"] for r in ref2]))
    m = s.marginals(lp2)
    assert torch.isfinite(m).all()
    torch.testing.assert_close(m, torch.stack([r["marginals"] for r in ref2]))
    # a label unreachable from every predecessor: still finite and exact under all semirings
    lp3 = lp.clone()
    lp3[:, 1, 2, :] = float("-inf")
    ref3 = _oracles(lp3, lengths)
    torch.testing.assert_close(s.marginals(lp3, lengths),
                               torch.stack([r["marginals"] for r in ref3]))
    torch.testing.assert_close(s.entropy(lp3, lengths), torch.stack([r["entropy"] for r in ref3]))
    leaf = lp3.clone().requires_grad_()
    (g,) = torch.autograd.grad(s.sum(leaf, lengths).sum(), leaf)
    assert torch.isfinite(g).all()
    smp = LinearChain().sample(lp3, 50, lengths, generator=torch.Generator().manual_seed(0))
    assert smp[:, :, 1, 2, :].sum() == 0


@pytest.mark.parametrize("kind", ["linear", "semi"])
def test_log_partition_stores_only_the_forward_chart_for_backward(kind):
    """Besides the caller's potentials, backward keeps O(B·N·C): the (B, N, C) chart."""
    from aligners.lattices import semimarkov as sm

    batch, n, c = 4, 12, 6
    shape = (batch, n - 1, c, c) if kind == "linear" else (batch, n - 1, 3, c, c)
    fn = lc.log_partition if kind == "linear" else sm.log_partition
    leaf = torch.randn(*shape, dtype=torch.float64).requires_grad_()
    extra = []

    def pack(t):
        if t.untyped_storage().data_ptr() != leaf.untyped_storage().data_ptr():
            extra.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        z = fn(leaf, lengths=torch.tensor([12, 5, 1, 9]))
    assert sum(extra) <= batch * n * c + 2 * batch
    (g,) = torch.autograd.grad(z.sum(), leaf)
    if kind == "linear":  # every position before L-1 carries exactly one edge
        expect = (torch.arange(n - 1) < torch.tensor([11, 4, 0, 8]).view(-1, 1)).double()
        torch.testing.assert_close(g.sum((-1, -2)), expect)


def test_semiring_sampler_agrees_with_the_marginals():
    lp, lengths = _inputs(4, 3, batch=2, seed=12)
    s = LinearChain()
    # the sampling semiring (gradient of log Z) draws from the Gibbs distribution
    n_samples = 3000
    sampled = LinearChain(SampledSemiring.with_generator(torch.Generator().manual_seed(1)))
    semi = sampled.marginals((lp / 2).repeat(n_samples, 1, 1, 1), lengths.repeat(n_samples))
    semi = semi.view(n_samples, *lp.shape)
    m = s.marginals(lp / 2, lengths)
    assert marginal_frequencies_ok(semi, m)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_or_positive_infinite_potentials_are_refused(bad):
    lp, lengths = _inputs(4, 2, seed=2)
    lp[0, 1, 0, 1] = bad
    s = LinearChain()
    for call in [lambda: s.sum(lp, lengths), lambda: s.marginals(lp, lengths),
                 lambda: s.entropy(lp, lengths), lambda: lc.viterbi(lp, lengths=lengths),
                 lambda: s.sample(lp, 2, lengths)]:
        with pytest.raises(AlignersInputError):
            call()


@pytest.mark.parametrize("shape", [(2, 0, 3, 3), (0, 4, 3, 3), (2, 0, 3, 3, 3), (0, 4, 3, 3, 3)])
def test_single_point_and_empty_batch(shape):
    from aligners.lattices.semimarkov import SemiMarkov

    s = (LinearChain if len(shape) == 4 else SemiMarkov)()
    lp = torch.randn(*shape, dtype=torch.float64)
    c = torch.tensor(float(shape[-1]), dtype=lp.dtype)
    expect = c.log().expand(shape[0])  # N = 1: C one-label structures, each scoring 0
    torch.testing.assert_close(s.sum(lp), expect)
    torch.testing.assert_close(s.entropy(lp), expect)
    assert s.marginals(lp).shape == lp.shape and s.marginals(lp).abs().sum() == 0
    assert s.topk(lp, 2).shape == (2, *shape) and s.sample(lp, 3).shape == (3, *shape)
    if shape[0]:
        torch.testing.assert_close(s.kmax(lp, 2), torch.zeros(2, shape[0], dtype=lp.dtype))
    score, parts = s.viterbi(lp)
    assert score.shape == (shape[0],) and parts.shape == lp.shape
