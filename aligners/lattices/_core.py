"""The private numerical core of the lattices: the log zero (``semiring_zero``), the one check
of the lengths and the one length mask, the one vectorised backtrack, ``fill_segments``, the
one categorical sampler and ``recompute`` (the exact fallback of flagged items).
"""

from __future__ import annotations

import torch

from aligners.errors import AlignersInputError
from aligners.semirings import sample_categorical, semiring_zero

__all__ = [
    "backtrack",
    "check_lengths",
    "fill_segments",
    "length_mask",
    "recompute",
    "sample_categorical",
    "semiring_zero",
]


def check_lengths(lengths, *, batch: int, n: int, device) -> torch.Tensor:
    """Validate ``lengths (B,)`` (1 <= L <= N); ``None`` means all N. Returns int64 on device."""
    if lengths is None:
        return torch.full((batch,), n, dtype=torch.long, device=device)
    lengths = torch.as_tensor(lengths, device=device)
    if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise AlignersInputError(f"lengths must be integers, got {lengths.dtype}")
    if lengths.shape != (batch,):
        raise AlignersInputError(f"lengths must have shape ({batch},), got {tuple(lengths.shape)}")
    lengths = lengths.long()
    if batch and (int(lengths.min()) < 1 or int(lengths.max()) > n):
        raise AlignersInputError(f"lengths must lie in [1, N={n}], got {lengths.tolist()}")
    return lengths


def recompute(bad: torch.Tensor, exact, *outs: torch.Tensor) -> list[torch.Tensor]:
    """``outs`` (each ``(B, ...)``) with the rows of the items ``bad (B,)`` bool replaced by
    ``exact(idx)`` (one value per output for the items ``idx``): copies, differentiable;
    ``outs`` themselves when no item is bad. One host sync."""
    if not bool(bad.any()):
        return list(outs)
    idx = bad.nonzero().squeeze(1)
    outs = [x.clone() for x in outs]
    for x, v in zip(outs, exact(idx)):
        x[idx] = v
    return outs


def length_mask(lengths: torch.Tensor, n: int) -> torch.Tensor:
    """lengths (B,) -> (B, n) bool, True at real positions ``p < lengths[b]``. O(B·n)."""
    return torch.arange(n, device=lengths.device) < lengths.unsqueeze(-1)


def backtrack(length_ptr: torch.Tensor | None, label_ptr: torch.Tensor, *, last: torch.Tensor,
              label: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Follow backpointers of a segmental (``length_ptr=None``: first-order) chain over points 0..T.

    ``label_ptr (B, T, C)``: for the best structure reaching point t (index t-1) with label c,
    the label at its last segment's start point; ``length_ptr (B, T, C)``: that segment's
    length; ``last (B,)`` end points, ``label (B,)`` their labels. Returns ``labels (B, T+1)``
    (labels at segment end points and point 0, -1 elsewhere) and ``seg_len (B, T+1)`` (0 where
    no segment ends). O(B·T), on device, no host sync.
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
