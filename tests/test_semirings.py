"""Semirings: torch-struct's algebra with a dtype-aware zero and a seeded sampler."""

import pytest
import torch
import torch_struct

from aligners.errors import AlignersInputError
from aligners.semirings import (
    EntropySemiring,
    KMaxSemiring,
    LogSemiring,
    MaxSemiring,
    SampledSemiring,
    semiring_zero,
)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_zero_is_dtype_aware_and_survives_many_additions(dtype):
    z = semiring_zero(dtype)
    assert z < -1e30  # far below torch-struct's -1e5
    many = torch.full((65536,), z, dtype=torch.float64).to(dtype).sum()
    assert torch.isfinite(many)
    x = torch.full((3, 4), z, dtype=dtype)
    assert torch.isfinite(x.logsumexp(-1)).all()


def test_zero_refuses_float16_and_integers():
    with pytest.raises(AlignersInputError):
        semiring_zero(torch.float16)
    with pytest.raises(AlignersInputError):
        semiring_zero(torch.int64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_identities_fill_with_dtype_zero(dtype):
    for sr in [LogSemiring, MaxSemiring, SampledSemiring]:
        x = sr.zero_(torch.empty(1, 2, 3, dtype=dtype))
        assert (x == semiring_zero(dtype)).all()
        assert (sr.one_(x) == 0).all()
        m = torch.tensor([[True, False, True]])
        sr.zero_mask_(x, m.expand(2, 3))
        assert (x[0, :, 0] == semiring_zero(dtype)).all() and (x[0, :, 1] == 0).all()
    k = KMaxSemiring(3)
    one = k.one_(torch.empty(3, 2, dtype=dtype))
    assert (one[0] == 0).all() and (one[1:] == semiring_zero(dtype)).all()
    conv = k.convert(torch.zeros(2, dtype=dtype))
    assert (conv[1:] == semiring_zero(dtype)).all()
    e = EntropySemiring.zero_(torch.empty(2, 4, dtype=dtype))
    assert (e[0] == semiring_zero(dtype)).all() and (e[1] == 0).all()


def test_algebra_equals_torch_struct():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(1, 3, 4, generator=g), torch.randn(1, 3, 4, generator=g)
    pairs = [(LogSemiring, torch_struct.LogSemiring), (MaxSemiring, torch_struct.MaxSemiring),
             (KMaxSemiring(2), torch_struct.KMaxSemiring(2)),
             (EntropySemiring, torch_struct.EntropySemiring)]
    for ours, theirs in pairs:
        x, y = ours.convert(a[0]), ours.convert(b[0])
        torch.testing.assert_close(ours.sum(ours.mul(x, y)), theirs.sum(theirs.mul(x, y)))
        torch.testing.assert_close(ours.matmul(x, y.transpose(-1, -2)),
                                   theirs.matmul(x, y.transpose(-1, -2)))


def test_sampled_semiring_gradient_is_a_seeded_draw():
    logits = torch.log(torch.tensor([[0.2, 0.5, 0.3]])).unsqueeze(0).repeat(1, 6000, 1)

    def draw(seed):
        sr = SampledSemiring.with_generator(torch.Generator().manual_seed(seed))
        leaf = logits.clone().requires_grad_()
        (g,) = torch.autograd.grad(sr.sum(leaf).sum(), leaf)
        return g

    g = draw(0)
    assert torch.equal(g, draw(0))
    assert torch.equal(g.sum(-1), torch.ones(1, 6000))
    freq = g[0].mean(0)
    torch.testing.assert_close(freq, torch.tensor([0.2, 0.5, 0.3]), atol=0.03, rtol=0)
    value = SampledSemiring.sum(logits)
    torch.testing.assert_close(value, torch.zeros_like(value), atol=1e-6, rtol=0)
