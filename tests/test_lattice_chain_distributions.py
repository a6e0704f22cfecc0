"""Distribution classes: the torch-struct interface, checked against torch-struct itself
(on inputs where torch-struct is correct) and against brute-force enumeration."""

import pytest
import torch
import torch_struct
from test_lattice_chain_oracle import chain_structures, oracle, semimarkov_structures

from aligners.lattices import LinearChainCRF, SemiMarkovCRF

pytestmark = pytest.mark.filterwarnings("ignore:.*arg_constraints")


def _lp(shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


def _check_against_torch_struct(ours, theirs, k=3):
    for name in ["partition", "marginals", "argmax", "max", "entropy"]:
        torch.testing.assert_close(getattr(ours, name), getattr(theirs, name).detach(),
                                   msg=name)
    torch.testing.assert_close(ours.kmax(k), theirs.kmax(k).detach())
    torch.testing.assert_close(ours.topk(k), theirs.topk(k).detach())
    torch.testing.assert_close(ours.count, theirs.count.detach().to(ours.count.dtype))
    value = ours.topk(2)
    torch.testing.assert_close(ours.log_prob(value), theirs.log_prob(value).detach())


def test_linear_chain_crf_matches_torch_struct():
    lp = _lp((3, 5, 3, 3), 0)
    lengths = torch.tensor([6, 4, 2])
    ours = LinearChainCRF(lp, lengths=lengths)
    theirs = torch_struct.LinearChainCRF(lp.clone(), lengths=lengths.clone())
    _check_against_torch_struct(ours, theirs)
    other = _lp((3, 5, 3, 3), 1)
    theirs_q = torch_struct.LinearChainCRF(other.clone(), lengths=lengths.clone())
    ours_q = LinearChainCRF(other, lengths=lengths)
    torch.testing.assert_close(ours.kl(ours_q), theirs.kl(theirs_q).detach())
    torch.testing.assert_close(ours.cross_entropy(ours_q),
                               theirs.cross_entropy(theirs_q).detach())


def test_semimarkov_crf_matches_torch_struct_full_length():
    lp = _lp((2, 5, 3, 2, 2), 2)
    _check_against_torch_struct(SemiMarkovCRF(lp), torch_struct.SemiMarkovCRF(lp.clone()))


def test_log_prob_and_kl_against_enumeration():
    lp, other = _lp((1, 3, 3, 2, 2), 3), _lp((1, 3, 3, 2, 2), 4)
    structs = semimarkov_structures(4, 3, 2, 4)
    p, q = oracle(lp[0], structs), oracle(other[0], structs)
    parts = torch.stack(structs).unsqueeze(1)  # (S, 1, event)
    dist, dist_q = SemiMarkovCRF(lp), SemiMarkovCRF(other)
    log_p = dist.log_prob(parts)[:, 0]
    torch.testing.assert_close(log_p.logsumexp(0), torch.zeros((), dtype=lp.dtype))
    log_q = dist_q.log_prob(parts)[:, 0]
    torch.testing.assert_close(dist.kl(dist_q)[0], (log_p.exp() * (log_p - log_q)).sum())
    torch.testing.assert_close(dist.entropy[0], p["entropy"])
    torch.testing.assert_close(dist.partition[0], p["log_partition"])
    assert q["count"] == int(round(float(dist.count[0])))


def test_sample_shapes_generator_and_events():
    lp = _lp((2, 4, 3, 3), 5)
    dist = LinearChainCRF(lp, lengths=torch.tensor([5, 3]))
    s1 = dist.sample((2, 3), generator=torch.Generator().manual_seed(0))
    s2 = dist.sample((2, 3), generator=torch.Generator().manual_seed(0))
    assert s1.shape == (2, 3, 2, 4, 3, 3) and torch.equal(s1, s2)
    assert torch.isfinite(dist.log_prob(s1)).all()
    assert dist.sample(generator=torch.Generator().manual_seed(1)).shape == lp.shape
    seq, c = dist.from_event(dist.argmax)
    assert c == 3
    ev = dist.to_event(seq, 3, lengths=torch.tensor([5, 3]))
    assert torch.equal(ev.to(lp.dtype), dist.argmax)
    one = chain_structures(5, 3, 5)
    assert len(one) == 3**5


def test_gradients_flow_to_log_potentials():
    lp = _lp((2, 4, 3, 3), 6).requires_grad_()
    dist = LinearChainCRF(lp)
    target = dist.argmax.detach()
    loss = -dist.log_prob(target).sum()
    (g,) = torch.autograd.grad(loss, lp)
    torch.testing.assert_close(g, dist.marginals.detach() - target)
