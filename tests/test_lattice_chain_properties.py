"""Property tests (hypothesis): batched results equal one-by-one results for random shapes,
lengths and scales, for both chain lattices; max <= log Z <= max + log(#structures)."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aligners.lattices.linear_chain import LinearChain
from aligners.lattices.semimarkov import SemiMarkov
from aligners.semirings import MaxSemiring


@st.composite
def lattices(draw):
    semi = draw(st.booleans())
    batch, n, c = draw(st.integers(1, 4)), draw(st.integers(1, 7)), draw(st.integers(1, 4))
    k = draw(st.integers(2, 4)) if semi else None
    scale = draw(st.sampled_from([0.1, 1.0, 30.0]))
    seed = draw(st.integers(0, 2**31 - 1))
    lengths = torch.tensor(draw(st.lists(st.integers(1, n), min_size=batch, max_size=batch)))
    shape = (batch, n - 1, k, c, c) if semi else (batch, n - 1, c, c)
    g = torch.Generator().manual_seed(seed)
    lp = torch.randn(*shape, generator=g, dtype=torch.float64) * scale
    return (SemiMarkov if semi else LinearChain), lp, lengths


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(lattices())
def test_batched_equals_one_by_one(case):
    struct, lp, lengths = case
    z = struct().sum(lp, lengths)
    m = struct().marginals(lp, lengths)
    best = struct(MaxSemiring).sum(lp, lengths)
    arg = struct(MaxSemiring).marginals(lp, lengths)
    c = lp.shape[-1]
    for b in range(lp.shape[0]):
        length = int(lengths[b])
        one = lp[b : b + 1, : length - 1]
        torch.testing.assert_close(z[b : b + 1], struct().sum(one))
        torch.testing.assert_close(m[b : b + 1, : length - 1], struct().marginals(one))
        assert m[b, length - 1 :].abs().sum() == 0
        torch.testing.assert_close(best[b : b + 1], struct(MaxSemiring).sum(one))
        torch.testing.assert_close(struct().score(lp[b], arg[b]), best[b])
        # log Z lies between the best score and best + log(number of structures), which is
        # at most C^L labellings times 2^(L-1) segmentations
        bound = length * math.log(c) + (length - 1) * math.log(2)
        assert best[b] <= z[b] + 1e-9 and z[b] <= best[b] + bound + 1e-9
