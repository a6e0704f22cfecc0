"""Semi-Markov phrasal CRF aligner (Yao et al. 2013, section 3.2).

Source segments of length <= Ls are labelled with target states: NULL, token states and
phrasal states of length <= Lt (linearised as in `_mono_states`), so ls:lt blocks are one
label. Decoding is the semi-Markov Viterbi in O(Ls * Lt^2 * I * J^2) per pair; training is
softmax-margin (Hamming cost inside the partition function, Gimpel & Smith 2010) with the gold
side a sum over every path consistent with the gold links.
"""

import torch

from aligners.lattices.factored_semimarkov import factored_log_partition, factored_viterbi
from aligners.lattices.jump_transition import JumpTransition
from aligners.models.mono.potentials import MonoAlignerBase, MonoBatch, jump_layout
from aligners.models.mono.states import state_phrase

__all__ = ["PhraseCRFAligner", "segments_to_output", "JUMP_MIN_STATES"]

# batches with at least this many target states C reduce the transition with the bucketed
# `JumpTransition` (O(C) per position) instead of the dense (C, C) one (same results: exact up
# to float rounding, Viterbi bit-equal). On the CPU the lattice is bound by per-operation
# overhead, so the O(C^2) path stays faster up to C ~ 150-200 at 8 pairs x 30 words
# (`python benchmarks/mono_jump_lattice.py`, BENCHMARKS.md "Issue 13: speed").
JUMP_MIN_STATES = 200


def segments_to_output(segments, *, tgt_len: int, max_tgt_len: int):
    """[(start, length, state)] -> (blocks [(src_start, src_len, tgt_start, tgt_len)],
    token links sorted [(i, j)]). NULL segments produce nothing."""
    blocks, links = [], []
    for s, k, c in segments:
        end, lt = state_phrase(c, tgt_len=tgt_len, max_tgt_len=max_tgt_len)
        if lt == 0:
            continue
        blocks.append((s, k, end - lt, lt))
        links += [(i, j) for i in range(s, s + k) for j in range(end - lt, end)]
    return blocks, sorted(links)


class PhraseCRFAligner(MonoAlignerBase):
    """ls:lt phrasal aligner over the factored potentials of `MonoAlignerBase`."""

    def __init__(self, *, max_src_len: int = 3, max_tgt_len: int = 3, embedding: bool = False,
                 phrase_cues: bool = False):
        super().__init__(max_src_len=max_src_len, max_tgt_len=max_tgt_len, embedding=embedding,
                         phrase_cues=phrase_cues)

    def transition(self, batch: MonoBatch):
        """The label transition: dense (B, C, C) w_trans[bucket], or the same buckets as a
        `JumpTransition` when C >= `JUMP_MIN_STATES` (module constant)."""
        if batch.valid.shape[-1] >= JUMP_MIN_STATES:
            return JumpTransition(self.w_trans, jump_layout(batch))
        return self.w_trans[batch.trans_idx]

    def log_partition(self, factors, lengths: torch.Tensor) -> torch.Tensor:
        """(emit, trans, start) -> log Z (B,)."""
        return factored_log_partition(*factors, lengths=lengths)

    def viterbi(self, factors, lengths: torch.Tensor):
        """(emit, trans, start) -> (scores (B,), segment lists)."""
        return factored_viterbi(*factors, lengths=lengths)

    def loss(self, batch: MonoBatch, *, cost_weight: float = 1.0) -> torch.Tensor:
        """Summed softmax-margin loss: sum_b log Z_cost - log Z_gold (scalar).
        With cost_weight = 0 this is the conditional log-loss of the gold link set."""
        emission = self.emission(batch)
        z_cost = self.log_partition(
            self.factors(batch, cost_weight=cost_weight, emission=emission), batch.lengths)
        z_gold = self.log_partition(
            self.factors(batch, gold_only=True, emission=emission), batch.lengths)
        return (z_cost - z_gold).sum()

    @torch.no_grad()
    def decode(self, batch: MonoBatch):
        """Viterbi: per pair (blocks, token links, normalised score = score / I)."""
        scores, paths = self.viterbi(self.factors(batch), batch.lengths)
        out = []
        for ex, segs, sc in zip(batch.examples, paths, scores.tolist()):
            blocks, links = segments_to_output(segs, tgt_len=len(ex.tgt),
                                               max_tgt_len=self.max_tgt_len)
            out.append((blocks, links, sc / max(len(ex.src), 1)))
        return out
