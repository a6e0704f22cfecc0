"""`aligners.models._scatter.scatter_add_`: bit for bit `index_add_` (the E-steps' counts)."""

import pytest
import torch

from aligners.models._scatter import scatter_add2_, scatter_add_


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


def test_scatter_add_rejects_out_of_range_ids():
    c = torch.zeros(4)
    with pytest.raises(ValueError, match="outside"):
        scatter_add_(c, torch.tensor([-1, 0]), torch.tensor([1.0, 1.0]))
    assert c.tolist() == [0.0] * 4
    with pytest.raises(ValueError, match="outside"):
        scatter_add_(c, torch.tensor([0, 4]), torch.tensor([1.0, 1.0]))
    with pytest.raises(ValueError, match="outside"):
        scatter_add2_(torch.zeros(4, 2), torch.tensor([7]), torch.tensor([1.0]),
                      torch.tensor([1.0]))
    with pytest.raises(ValueError, match="ids but"):
        scatter_add_(c, torch.tensor([0, 1]), torch.tensor([1.0]))


def test_scatter_add_falls_back_to_index_add_for_other_dtypes():
    c = torch.zeros(3, dtype=torch.float16)
    scatter_add_(c, torch.tensor([2, 2]), torch.tensor([1.0, 2.0], dtype=torch.float16))
    assert c.tolist() == [0.0, 0.0, 3.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_scatter_add2_equals_index_add_per_column_bit_for_bit(dtype):
    g = torch.Generator().manual_seed(1)
    P = 3000
    ids = torch.randint(0, P, (5, 8, 6), generator=g).int()
    ids[1] = 7
    v0, v1 = ((torch.rand(5, 8, 6, generator=g) * 10 ** torch.randint(-6, 6, (5, 8, 6),
                                                                       generator=g)).to(dtype)
              for _ in range(2))
    base = torch.rand(P, 2, generator=g).to(dtype)
    out = scatter_add2_(base.clone(), ids, v0, v1)
    for col, v in enumerate((v0, v1)):
        ref = base[:, col].clone().index_add_(0, ids.reshape(-1), v.reshape(-1))
        assert torch.equal(out[:, col], ref)
    # the same values into both columns (the phrasal model's word rows)
    out = scatter_add2_(base.clone(), ids, v0, v0)
    assert torch.equal(out[:, 0], base[:, 0].clone().index_add_(0, ids.reshape(-1),
                                                                v0.reshape(-1)))
    with pytest.raises(ValueError, match="must be"):
        scatter_add2_(torch.zeros(P), ids, v0, v1)


def test_scatter_add_into_a_column_view():
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, 50, (400,), generator=g)
    v = torch.rand(400, generator=g)
    both = torch.rand(50, 2, generator=g)
    ref = both[:, 1].clone().index_add_(0, ids, v)
    scatter_add_(both[:, 1], ids, v)
    assert torch.equal(both[:, 1], ref)


def test_scatter_add2_falls_back_to_index_add_per_column():
    c = torch.zeros(3, 2, dtype=torch.float16)
    v0 = torch.tensor([1.0, 2.0], dtype=torch.float16)
    scatter_add2_(c, torch.tensor([2, 0]), v0, 2 * v0)
    assert c.tolist() == [[2.0, 4.0], [0.0, 0.0], [1.0, 2.0]]
