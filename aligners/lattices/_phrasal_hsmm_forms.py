"""The potential and posterior tuples of the phrasal HSMM lattice in its dense and sparse
layout, and the conversions between them (fields: `phrasal_hsmm`, `phrasal_hsmm_sparse`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from aligners.errors import AlignersInputError
from aligners.semirings import semiring_zero

__all__ = [
    "PhrasalPotentials",
    "PhrasalPosteriors",
    "SparsePhrasalPotentials",
    "SparsePhrasalPosteriors",
    "check_dense",
    "to_sparse",
    "to_dense",
    "sparse_posteriors_to_dense",
]


class PhrasalPotentials(NamedTuple):
    """Log-potentials of one direction (see the module docstring for the meaning)."""

    log_emit_word: torch.Tensor  # (B, J, L, I)
    log_emit_null: torch.Tensor  # (B, J)
    log_emit_phrase: torch.Tensor  # (B, J, P)
    log_jump_init: torch.Tensor  # (B, I)
    log_jump: torch.Tensor  # (B, I, I) [k, i]: last position k -> first position i
    log_null_init: torch.Tensor  # (B, I)
    log_null_stay: torch.Tensor  # (B, I)
    log_phrase_weight: torch.Tensor  # (B, P)
    phrase_first: torch.Tensor  # (B, P) long, -1 = padding
    phrase_last: torch.Tensor  # (B, P) long


class PhrasalPosteriors(NamedTuple):
    """log_likelihood (B,); word (B,J,L,I), null (B,J), phrase (B,J,P): marginal
    probability of each segment (same indexing as the emissions). Under "max" the same
    tensors are the 0/1 indicators of the best structure and log_likelihood its score."""

    log_likelihood: torch.Tensor
    word: torch.Tensor
    null: torch.Tensor
    phrase: torch.Tensor


def check_dense(pot: PhrasalPotentials, src_lengths, tgt_lengths):
    """(src_lengths, tgt_lengths) as long tensors on the potentials' device after checking
    every shape against log_emit_word (B,J,L,I); AlignersInputError otherwise."""
    if not isinstance(pot, PhrasalPotentials):
        raise AlignersInputError("expected a PhrasalPotentials tuple")
    ew = pot.log_emit_word
    if ew.dim() != 4:
        raise AlignersInputError(f"log_emit_word: expected (B,J,L,I), got {tuple(ew.shape)}")
    B, J, L, I = ew.shape
    P = pot.log_emit_phrase.shape[-1]
    want = {
        "log_emit_null": (B, J), "log_emit_phrase": (B, J, P), "log_jump_init": (B, I),
        "log_jump": (B, I, I), "log_null_init": (B, I), "log_null_stay": (B, I),
        "log_phrase_weight": (B, P), "phrase_first": (B, P), "phrase_last": (B, P),
    }
    for name, shape in want.items():
        got = tuple(getattr(pot, name).shape)
        if got != shape:
            raise AlignersInputError(f"{name}: expected shape {shape}, got {got}")
    sl, tl = src_lengths.to(ew.device).long(), tgt_lengths.to(ew.device).long()
    if sl.shape != (B,) or tl.shape != (B,):
        raise AlignersInputError("src_lengths and tgt_lengths must have shape (B,)")
    if B and (int(sl.min()) < 1 or int(sl.max()) > I or int(tl.min()) < 1 or int(tl.max()) > J):
        raise AlignersInputError(f"lengths must lie in 1..I={I} (source), 1..J={J} (target)")
    return sl, tl


_NEG = -700.0  # below it a log score is probability 0 (the kernel; `to_sparse` drops such rows)


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


def _dense_words(one_word, spot, seg_rows, max_len: int, fill: float) -> torch.Tensor:
    """(B,J,L,I): one_word (B,J,I) at l = 0, the listed segments' rows seg_rows (M,I), fill
    elsewhere. O(B J L I)."""
    B, J, I = one_word.shape
    out = torch.full((B, J, max_len, I), fill, dtype=one_word.dtype, device=one_word.device)
    out[:, :, 0] = one_word
    out[spot.seg_item, spot.seg_end, spot.seg_len] = seg_rows
    return out


def to_dense(spot: SparsePhrasalPotentials, max_len: int) -> PhrasalPotentials:
    """The dense form (log_emit_word (B,J,L,I), unlisted segments at the semiring zero)."""
    zero = semiring_zero(spot.log_emit_word.dtype)
    ew = _dense_words(spot.log_emit_word, spot, spot.log_emit_seg, max_len, zero)
    return PhrasalPotentials(ew, *spot[5:])


def sparse_posteriors_to_dense(post: SparsePhrasalPosteriors, spot: SparsePhrasalPotentials,
                               max_len: int) -> PhrasalPosteriors:
    """Dense `PhrasalPosteriors` (word (B,J,L,I)) of sparse ones. O(B J L I)."""
    w = _dense_words(post.word, spot, post.seg, max_len, 0.0)
    return PhrasalPosteriors(post.log_likelihood, w, post.null, post.phrase)
