"""`aligners.models._scatter.scatter_add_`: bit for bit `index_add_` (the E-steps' counts)."""

import pytest
import torch

from aligners.models._scatter import scatter_add_


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
def test_scatter_add_equals_index_add_bit_for_bit(dtype, idtype):
    g = torch.Generator().manual_seed(0)
    P = 5000
    ids = torch.randint(0, P, (6, 7, 9), generator=g).to(idtype)
    ids[0] = 3  # many additions into one slot: the order of additions matters in float
    values = (torch.rand(6, 7, 9, generator=g) * 10 ** torch.randint(-6, 6, (6, 7, 9),
                                                                      generator=g)).to(dtype)
    base = torch.rand(P, generator=g).to(dtype)
    ref = base.clone().index_add_(0, ids.reshape(-1), values.reshape(-1))
    out = scatter_add_(base.clone(), ids, values)
    assert torch.equal(out, ref)
    # a non-contiguous id view (the phrasal model's transposed word slots)
    ref = base.clone().index_add_(0, ids.transpose(1, 2).reshape(-1),
                                  values.transpose(1, 2).reshape(-1))
    out = scatter_add_(base.clone(), ids.transpose(1, 2), values.transpose(1, 2))
    assert torch.equal(out, ref)


def test_scatter_add_returns_counts_in_place():
    c = torch.zeros(4)
    assert scatter_add_(c, torch.tensor([1, 1, 3]), torch.tensor([1.0, 2.0, 4.0])) is c
    assert c.tolist() == [0.0, 3.0, 0.0, 4.0]


def test_scatter_add_rejects_out_of_range_ids_and_adds_nothing():
    c = torch.zeros(4)
    with pytest.raises(ValueError, match="outside"):
        scatter_add_(c, torch.tensor([0, 4]), torch.tensor([1.0, 1.0]))
    with pytest.raises(ValueError, match="outside"):
        scatter_add_(c, torch.tensor([-1, 0]), torch.tensor([1.0, 1.0]))
    assert c.tolist() == [0.0] * 4
    with pytest.raises(ValueError, match="ids but"):
        scatter_add_(c, torch.tensor([0, 1]), torch.tensor([1.0]))


def test_scatter_add_falls_back_to_index_add_for_other_dtypes():
    c = torch.zeros(3, dtype=torch.float16)
    scatter_add_(c, torch.tensor([2, 2]), torch.tensor([1.0, 2.0], dtype=torch.float16))
    assert c.tolist() == [0.0, 0.0, 3.0]
