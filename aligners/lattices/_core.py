"""The one private numerical core of the lattices: log zero, masking rule, backtrack, sampler.

- ``semiring_zero(dtype)``: the one dtype-aware log zero (``aligners.semirings``); every
  lattice clamps forbidden (-inf) scores at it and fills impossible cells with it.
- ``length_mask(lengths, n)``: the one masking rule for variable lengths: position/point
  ``p`` of item ``b`` is real iff ``p < lengths[b]``; everything at or past it is padding
  and contributes the semiring one (an identity step) to every recursion.
- ``backtrack``: the one Viterbi backtrack, vectorised over the batch (one tensor step per
  position, no Python loop over items, no host sync inside the loop).
- ``sample_categorical``: the one categorical sampler (inverse CDF from a ``torch.Generator``),
  shared with ``aligners.semirings`` and usable by models.
"""

from __future__ import annotations

import torch

from aligners.semirings import sample_categorical, semiring_zero

__all__ = ["backtrack", "fill_segments", "length_mask", "sample_categorical", "semiring_zero"]


def length_mask(lengths: torch.Tensor, n: int) -> torch.Tensor:
    """lengths (B,) -> (B, n) bool, True at real positions ``p < lengths[b]``. O(B·n)."""
    return torch.arange(n, device=lengths.device) < lengths.unsqueeze(-1)


def backtrack(length_ptr: torch.Tensor | None, label_ptr: torch.Tensor, *, last: torch.Tensor,
              label: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Follow backpointers of a segmental (or, with ``length_ptr=None``, first-order) chain.

    Points are 0..T. ``label_ptr (B, T, C)`` long: for the best structure reaching point
    ``t`` (1..T, index ``t-1``) with label ``c``, the label at the start point of its last
    segment; ``length_ptr (B, T, C)`` long: that segment's length ``k >= 1`` (``None``: 1).
    ``last (B,)``: each item's end point (0..T); ``label (B,)``: its label there.

    Returns ``labels (B, T+1)`` long (the label at every segment end point and at point 0,
    -1 elsewhere and past ``last``) and ``seg_len (B, T+1)`` long (length of the segment
    ending at each point, 0 where none). O(B·T) time: T steps of gathers, all on the
    tensors' device, no host synchronisation.
    """
    batch, steps, _ = label_ptr.shape
    dev = label_ptr.device
    labels = torch.full((batch, steps + 1), -1, dtype=torch.long, device=dev)
    seg_len = torch.zeros((batch, steps + 1), dtype=torch.long, device=dev)
    rows = torch.arange(batch, device=dev)
    pos, lab = last.long().clone(), label.long().clone()
    labels[rows, pos] = lab
    for _ in range(steps):
        active = pos > 0
        at = (pos - 1).clamp(min=0)
        k = torch.ones_like(pos) if length_ptr is None else length_ptr[rows, at, lab]
        prev = label_ptr[rows, at, lab]
        k = torch.where(active, k, torch.zeros_like(k))
        seg_len[rows, pos] = torch.where(active, k, seg_len[rows, pos])
        pos = pos - k
        lab = torch.where(active, prev, lab)
        labels[rows, pos] = torch.where(active, lab, labels[rows, pos])
    return labels, seg_len


def fill_segments(labels: torch.Tensor) -> torch.Tensor:
    """labels (B, T+1) from ``backtrack`` -> (B, T) long: position ``p`` (between points
    ``p`` and ``p+1``) gets the label of the next labelled point ``> p``; -1 past the last.
    (Segment-labelled chains such as the HSMM, where a segment owns its positions.)"""
    batch, points = labels.shape
    idx = torch.arange(points, device=labels.device).expand(batch, points)
    nearest = torch.where(labels >= 0, idx, points).flip(-1).cummin(-1).values.flip(-1)
    nxt = nearest[:, 1:]
    out = labels.gather(1, nxt.clamp(max=points - 1))
    return torch.where(nxt < points, out, torch.full_like(out, -1))
