"""The phrasal / gappy HSMM lattice with sparse long segments (issue 10: speed).

Same model and DP as `aligners.lattices.phrasal_hsmm`; only the word states' multi-word
target segments are stored differently. In the dense form log_emit_word (B,J,L,I) holds a
score for every (end, length, state), almost all at the semiring zero: a word state may emit
a target phrase only where that phrase is listed (Bansal et al. 2011, sec. 5). Here:
  log_emit_word (B,J,I)  one-word segments (length 1) of every word state;
  seg_item, seg_end, seg_len (M,) long  the listed longer segments: item b, end position n,
                         extra length l (1 <= l <= n, l < L; the segment covers n-l..n),
                         sorted by item, at most one per (item, end, length);
  log_emit_seg (M,I)     their scores per word state;
and the rest as `PhrasalPotentials`. Every segment of length > 1 not listed scores the
semiring zero (exact: the dense form with those entries at zero). Posteriors come back in
the same layout (`SparsePhrasalPosteriors`). Cost on CPU (numba, `_phrasal_hsmm_kernel`):
O(B J (I^2 + P) + M I) time, memory O(B J (I + P) + M I) instead of O(B J L I); elsewhere
(CUDA) through the dense form's autograd. Tested equal to the dense form and, through it, to
brute-force enumeration (tests/test_lattice_phrasal_hsmm.py).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from aligners.errors import AlignersInputError
from aligners.lattices.phrasal_hsmm import (
    PhrasalPosteriors,
    PhrasalPotentials,
    phrasal_hsmm_posteriors,
    phrasal_hsmm_viterbi,
)
from aligners.semirings import semiring_zero

__all__ = [
    "SparsePhrasalPotentials",
    "SparsePhrasalPosteriors",
    "to_sparse",
    "to_dense",
    "sparse_posteriors_to_dense",
    "phrasal_hsmm_sparse_posteriors",
]

_NEG = -700.0  # the kernel's probability-0 threshold: a row below it everywhere is dropped


class SparsePhrasalPotentials(NamedTuple):
    """Log-potentials of one direction with sparse long segments (module docstring)."""

    log_emit_word: torch.Tensor  # (B, J, I) one-word segments
    seg_item: torch.Tensor  # (M,) long, sorted
    seg_end: torch.Tensor  # (M,) long
    seg_len: torch.Tensor  # (M,) long, extra length l >= 1
    log_emit_seg: torch.Tensor  # (M, I)
    log_emit_null: torch.Tensor  # (B, J)
    log_emit_phrase: torch.Tensor  # (B, J, P)
    log_jump_init: torch.Tensor  # (B, I)
    log_jump: torch.Tensor  # (B, I, I)
    log_null_init: torch.Tensor  # (B, I)
    log_null_stay: torch.Tensor  # (B, I)
    log_phrase_weight: torch.Tensor  # (B, P)
    phrase_first: torch.Tensor  # (B, P) long, -1 = padding
    phrase_last: torch.Tensor  # (B, P) long


class SparsePhrasalPosteriors(NamedTuple):
    """log_likelihood (B,); word (B,J,I) one-word segments; seg (M,I) the listed longer
    segments (rows as the potentials'); null (B,J); phrase (B,J,P). Under Viterbi the 0/1
    indicators of the best structure."""

    log_likelihood: torch.Tensor
    word: torch.Tensor
    seg: torch.Tensor
    null: torch.Tensor
    phrase: torch.Tensor


def to_sparse(pot: PhrasalPotentials) -> SparsePhrasalPotentials:
    """The sparse form of dense potentials: every (item, end, length > 1) with some score
    above -700 (probability > 0) becomes a segment row. O(B J L I)."""
    ew = pot.log_emit_word
    B, J, L, I = ew.shape
    long = ew[:, :, 1:]
    ok = (long.detach() > _NEG).any(3)  # (B, J, L-1)
    ok &= torch.arange(1, L, device=ew.device)[None, :] <= torch.arange(J, device=ew.device)[
        :, None]  # l <= n
    b, n, k = ok.nonzero(as_tuple=True)
    return SparsePhrasalPotentials(ew[:, :, 0], b, n, k + 1, long[b, n, k], *pot[1:])


def to_dense(spot: SparsePhrasalPotentials, max_len: int) -> PhrasalPotentials:
    """The dense form (log_emit_word (B,J,L,I), unlisted segments at the semiring zero).
    O(B J L I)."""
    ew1 = spot.log_emit_word
    B, J, I = ew1.shape
    zero = semiring_zero(ew1.dtype)
    ew = torch.full((B, J, max_len, I), zero, dtype=ew1.dtype, device=ew1.device)
    ew[:, :, 0] = ew1
    ew[spot.seg_item, spot.seg_end, spot.seg_len] = spot.log_emit_seg
    return PhrasalPotentials(ew, *spot[5:])


def sparse_posteriors_to_dense(post: SparsePhrasalPosteriors, spot: SparsePhrasalPotentials,
                               max_len: int) -> PhrasalPosteriors:
    """Dense `PhrasalPosteriors` (word (B,J,L,I)) of sparse ones. O(B J L I)."""
    w1 = post.word
    B, J, I = w1.shape
    w = torch.zeros((B, J, max_len, I), dtype=w1.dtype, device=w1.device)
    w[:, :, 0] = w1
    w[spot.seg_item, spot.seg_end, spot.seg_len] = post.seg
    return PhrasalPosteriors(post.log_likelihood, w, post.null, post.phrase)


def _check(spot, max_len, src_lengths, tgt_lengths):
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


def phrasal_hsmm_sparse_posteriors(spot: SparsePhrasalPotentials, *, max_len: int,
                                   src_lengths: torch.Tensor, tgt_lengths: torch.Tensor,
                                   viterbi: bool = False) -> SparsePhrasalPosteriors:
    """Segment marginals (or Viterbi 0/1 indicators) in the sparse layout.

    Shapes: see `SparsePhrasalPosteriors`; max_len = L (longest segment). CPU posteriors:
    the numba explicit forward-backward, O(B J (I^2 + P) + M I); CUDA tensors and Viterbi:
    through the dense form (`phrasal_hsmm_posteriors` / `phrasal_hsmm_viterbi`,
    O(B J L I) memory), gathered back.
    """
    _check(spot, max_len, src_lengths, tgt_lengths)
    cpu = spot.log_emit_word.device.type == "cpu"
    if viterbi or not cpu:
        pot = to_dense(spot, max_len)
        fn = phrasal_hsmm_viterbi if viterbi else phrasal_hsmm_posteriors
        d = fn(pot, src_lengths=src_lengths, tgt_lengths=tgt_lengths)
        return SparsePhrasalPosteriors(d.log_likelihood, d.word[:, :, 0],
                                       d.word[spot.seg_item, spot.seg_end, spot.seg_len],
                                       d.null, d.phrase)
    from aligners.lattices._phrasal_hsmm_kernel import phrasal_forward_backward
    from aligners.lattices.phrasal_hsmm import _check as check_dense

    sl, tl = check_dense(_dense_view(spot, max_len), src_lengths, tgt_lengths)
    out = phrasal_forward_backward(spot, sl, tl, max_len)
    dtype = spot.log_emit_word.dtype
    return SparsePhrasalPosteriors(*(torch.from_numpy(x).to(dtype) for x in out))


def _dense_view(spot: SparsePhrasalPotentials, max_len: int) -> PhrasalPotentials:
    """A shape-only stand-in of the dense form (expanded view, no copy) for shape checks."""
    ew1 = spot.log_emit_word
    return PhrasalPotentials(ew1[:, :, None, :].expand(-1, -1, max_len, -1), *spot[5:])
