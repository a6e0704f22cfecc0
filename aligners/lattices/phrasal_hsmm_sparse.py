"""The phrasal / gappy HSMM lattice with sparse long segments: `phrasal_hsmm` with word states'
multi-word segments listed instead of dense (B,J,L,I).

  log_emit_word (B,J,I)  one-word segments of every word state;
  seg_item, seg_end, seg_len (M,) long  the listed longer segments (item, end position n,
                         extra length 1 <= l <= n, l < L), sorted by item, unique;
  log_emit_seg (M,I)     their scores per word state;
the rest as `PhrasalPotentials`; unlisted segments score the semiring zero. Posteriors come
back in the same layout. Cost on CPU O(B J (I^2 + P) + M I) time and O(B J (I + P) + M I)
memory; elsewhere through the dense form.
"""

from __future__ import annotations

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._phrasal_hsmm_kernel import phrasal_forward_backward
from aligners.lattices.phrasal_hsmm import (
    PhrasalPotentials,
    SparsePhrasalPosteriors,
    SparsePhrasalPotentials,
    check_dense,
    phrasal_hsmm_posteriors,
    phrasal_hsmm_viterbi,
    sparse_posteriors_to_dense,
    to_dense,
    to_sparse,
)

__all__ = [
    "SparsePhrasalPotentials",
    "SparsePhrasalPosteriors",
    "to_sparse",
    "to_dense",
    "sparse_posteriors_to_dense",
    "phrasal_hsmm_sparse_posteriors",
]

def _check(spot, max_len, src_lengths, tgt_lengths):
    """(src_lengths, tgt_lengths) as `check_dense` returns them, after checking the sparse
    layout and (on a shape-only expanded view of the dense form) every other field."""
    if not isinstance(spot, SparsePhrasalPotentials):
        raise AlignersInputError("expected a SparsePhrasalPotentials tuple")
    ew = spot.log_emit_word
    if ew.dim() != 3:
        raise AlignersInputError(f"log_emit_word: expected (B,J,I), got {tuple(ew.shape)}")
    B, J, I = ew.shape
    M = spot.seg_item.shape[0]
    for name in ("seg_end", "seg_len"):
        if tuple(getattr(spot, name).shape) != (M,):
            raise AlignersInputError(f"{name}: expected shape ({M},)")
    if tuple(spot.log_emit_seg.shape) != (M, I):
        raise AlignersInputError(f"log_emit_seg: expected shape ({M}, {I}), got "
                                 f"{tuple(spot.log_emit_seg.shape)}")
    if M:
        it, n, ln = spot.seg_item, spot.seg_end, spot.seg_len
        if bool((it[1:] < it[:-1]).any()):
            raise AlignersInputError("segments must be sorted by seg_item")
        if int(it.min()) < 0 or int(it.max()) >= B:
            raise AlignersInputError(f"seg_item must lie in 0..{B - 1}")
        if bool(((ln < 1) | (ln > n) | (ln >= max_len) | (n >= J)).any()):
            raise AlignersInputError(f"segments need 1 <= seg_len <= seg_end < J={J} and "
                                     f"seg_len < max_len={max_len}")
        key = (it * J + n) * max_len + ln
        if torch.unique(key).numel() != M:
            raise AlignersInputError("at most one segment per (item, end, length)")
    view = PhrasalPotentials(ew[:, :, None, :].expand(-1, -1, max_len, -1), *spot[5:])
    return check_dense(view, src_lengths, tgt_lengths)


def phrasal_hsmm_sparse_posteriors(spot: SparsePhrasalPotentials, *, max_len: int,
                                   src_lengths: torch.Tensor, tgt_lengths: torch.Tensor,
                                   viterbi: bool = False) -> SparsePhrasalPosteriors:
    """Segment marginals (or Viterbi 0/1 indicators) in the sparse layout.

    Shapes: see `SparsePhrasalPosteriors`; max_len = L (longest segment). CPU posteriors:
    the numba explicit forward-backward, O(B J (I^2 + P) + M I); CUDA tensors and Viterbi:
    through the dense form (`phrasal_hsmm_posteriors` / `phrasal_hsmm_viterbi`,
    O(B J L I) memory), gathered back.
    """
    sl, tl = _check(spot, max_len, src_lengths, tgt_lengths)
    cpu = spot.log_emit_word.device.type == "cpu"
    if viterbi or not cpu:
        pot = to_dense(spot, max_len)
        fn = phrasal_hsmm_viterbi if viterbi else phrasal_hsmm_posteriors
        d = fn(pot, src_lengths=src_lengths, tgt_lengths=tgt_lengths)
        return SparsePhrasalPosteriors(d.log_likelihood, d.word[:, :, 0],
                                       d.word[spot.seg_item, spot.seg_end, spot.seg_len],
                                       d.null, d.phrase)
    return SparsePhrasalPosteriors(*phrasal_forward_backward(spot, sl, tl, max_len))

