"""The log-depth parallel scan (`method="scan"`, `aligners.lattices._chain_scan`) equals the
per-position loop and brute-force enumeration: Log and Max semirings (and KMax/Entropy),
linear chain and semi-Markov, mixed lengths, float64 gradcheck, -inf scores, and the
underflow fallback to the loop."""

import pytest
import torch
from test_lattice_chain_oracle import (  # noqa: F401 (one_thread is a fixture)
    chain_structures,
    one_thread,
    oracle,
    semimarkov_structures,
)

from aligners.errors import AlignersInputError
from aligners.lattices import _chain_scan as scan
from aligners.lattices.linear_chain import LinearChain
from aligners.lattices.semimarkov import SemiMarkov
from aligners.semirings import EntropySemiring, KMaxSemiring, LogSemiring, MaxSemiring

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny GEMMs: OpenMP contention on CI

CASES = [("linear", None), ("semi", 2), ("semi", 3), ("semi", 4)]


def _case(kind, k, seed, B=4, N=5, C=3, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    shape = (B, N - 1, C, C) if kind == "linear" else (B, N - 1, k, C, C)
    lp = torch.randn(*shape, generator=g, dtype=dtype)
    lengths = torch.tensor([N, 1, 3, N - 1][:B])
    struct = LinearChain if kind == "linear" else SemiMarkov
    return struct, lp, lengths


@pytest.mark.parametrize("kind,k", CASES)
@pytest.mark.parametrize("semiring", [LogSemiring, MaxSemiring])
def test_scan_equals_loop_and_brute_force(kind, k, semiring):
    struct, lp, lengths = _case(kind, k, seed=1)
    got = struct(semiring, "scan").sum(lp, lengths)
    loop = struct(semiring, "loop").sum(lp, lengths)
    assert torch.allclose(got, loop, atol=1e-10)
    n, c = lp.shape[1] + 1, lp.shape[-1]
    for b in range(lp.shape[0]):
        length = int(lengths[b])
        structures = (chain_structures(n, c, length) if kind == "linear"
                      else semimarkov_structures(n, k, c, length))
        ref = oracle(lp[b], structures)
        want = ref["log_partition"] if semiring is LogSemiring else ref["max"]
        assert torch.allclose(got[b], want, atol=1e-10), (b, got[b], want)
        if semiring is LogSemiring:
            marg = struct(LogSemiring, "scan").marginals(lp, lengths)
            assert torch.allclose(marg[b], ref["marginals"], atol=1e-10)


@pytest.mark.parametrize("kind,k", CASES)
def test_scan_marginals_equal_loop_marginals_and_gradcheck(kind, k):
    struct, lp, lengths = _case(kind, k, seed=2, B=3, N=6)
    lengths = torch.tensor([6, 2, 4])
    m_scan = struct(LogSemiring, "scan").marginals(lp, lengths)
    m_loop = struct(LogSemiring, "loop").marginals(lp, lengths)
    assert torch.allclose(m_scan, m_loop, atol=1e-10)
    x = lp.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: struct(LogSemiring, "scan").sum(t, lengths), (x,), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind,k", CASES)
def test_scan_under_kmax_and_entropy_equals_loop(kind, k):
    struct, lp, lengths = _case(kind, k, seed=3)
    for semiring in (KMaxSemiring(3), EntropySemiring):
        a = struct(semiring, "scan").sum(lp, lengths)
        b = struct(semiring, "loop").sum(lp, lengths)
        assert torch.allclose(a, b, atol=1e-9), semiring


def test_batched_equals_one_by_one_float32_and_forbidden_scores():
    struct, lp, lengths = _case("semi", 3, seed=4, B=4, N=9, C=4, dtype=torch.float32)
    lp[:, :, :, 1, 2] = float("-inf")  # a forbidden transition
    z = SemiMarkov(LogSemiring, "scan").sum(lp, lengths)
    ref = SemiMarkov(LogSemiring, "loop").sum(lp, lengths)
    assert torch.allclose(z, ref, atol=1e-4)
    for b in range(4):
        one = SemiMarkov(LogSemiring, "scan").sum(lp[b:b + 1], lengths[b:b + 1])
        assert torch.allclose(one, z[b:b + 1], atol=1e-4)
    m = SemiMarkov(LogSemiring, "scan").marginals(lp, lengths)
    assert bool(torch.isfinite(m).all()) and float(m[:, :, :, 1, 2].abs().max()) == 0.0


def test_wide_dynamic_range_is_flagged_and_recomputed_by_the_loop():
    struct, lp, lengths = _case("linear", None, seed=5, B=3, N=6, C=3, dtype=torch.float32)
    lp[0, 2, 0, 1] += 200.0  # a row spanning far more than float32's safe GEMM range
    _, flag = scan.scan_log_partition(lp.unsqueeze(2), lengths)
    assert flag.tolist() == [True, False, False]
    z = LinearChain(LogSemiring, "scan").sum(lp, lengths)
    ref = LinearChain(LogSemiring, "loop").sum(lp.double(), lengths)
    assert torch.allclose(z.double(), ref, rtol=1e-5)
    m = LinearChain(LogSemiring, "scan").marginals(lp, lengths)
    assert torch.allclose(m.double(), LinearChain(LogSemiring, "loop").marginals(
        lp.double(), lengths), atol=1e-4)


def test_single_point_and_automatic_choice():
    lp = torch.randn(2, 0, 3, 3)
    z = LinearChain(LogSemiring, "scan").sum(lp)
    assert torch.allclose(z, torch.full((2,), 3.0).log())
    assert not scan.use_scan("auto", torch.zeros(1, 4, 1, 8, 8))  # CPU: the loop
    assert scan.use_scan("scan", torch.zeros(1, 4, 1, 8, 8))
    with pytest.raises(AlignersInputError, match="method"):
        LinearChain(LogSemiring, "fast")
