"""Token CRF aligner (jacana-token, Yao et al. 2013a; section 3.1 of Yao et al. 2013b).

Source tokens are observations, states are target positions plus NULL (C = J + 1), first-order
transitions, many-to-one. It is the phrasal aligner's model with Ls = Lt = 1 (same features,
same softmax-margin training) decoded with the linear-chain lattice
(`aligners.lattices.linear_chain`, torch-struct conventions): log_potentials (B, I, C, C) as
[b, n, c_next, c_prev] over I + 1 positions, position 0 being a START label fixed to NULL.
Cost O(I * J^2) per pair.
"""

import torch

from aligners.lattices import linear_chain
from aligners.models.mono.semicrf import PhraseCRFAligner
from aligners.semirings import semiring_zero

__all__ = ["TokenCRFAligner"]


class TokenCRFAligner(PhraseCRFAligner):
    """1:1 (many-to-one) token aligner; `max_src_len = max_tgt_len = 1` by construction."""

    def __init__(self, *, embedding: bool = False):
        super().__init__(max_src_len=1, max_tgt_len=1, embedding=embedding)

    def transition(self, batch):
        """Always the dense (B, C, C) transition (the linear-chain lattice takes no other)."""
        return self.w_trans[batch.trans_idx]

    @staticmethod
    def chain_potentials(factors) -> torch.Tensor:
        """Factored (emit (B,I,2,C), trans, start) -> linear-chain (B, I, C, C)."""
        emit, trans, start = factors
        lp = emit[:, :, 1].unsqueeze(-1) + trans[:, None]
        lp0 = torch.full_like(lp[:, 0], semiring_zero(lp.dtype))
        lp0[..., 0] = emit[:, 0, 1] + start
        return torch.cat([lp0.unsqueeze(1), lp[:, 1:]], dim=1)

    def log_partition(self, factors, lengths: torch.Tensor) -> torch.Tensor:
        return linear_chain.log_partition(self.chain_potentials(factors), lengths=lengths)

    def viterbi(self, factors, lengths: torch.Tensor):
        scores, labels = linear_chain.viterbi(self.chain_potentials(factors), lengths=lengths)
        paths = [[(n, 1, int(c)) for n, c in enumerate(labels[b, 1: int(lengths[b])].tolist())]
                 for b in range(labels.shape[0])]
        return scores, paths
