"""Matched phrases of one batch for the phrasal aligner (Bansal et al. 2011): which listed
contiguous / gappy phrases occur where, and the phrase states they make in each direction.

Shapes: see `Layout`; `CompactLayout` keeps a layout without its dense span tables (the
build hands each batch's layout to the first EM iteration). Cost of matching:
O(B (I^2 + J^2) log Pg + B (I + J) L log Pc) per batch (`make_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from aligners.data.bitext import Batch
from aligners.models.gappy_hsmm.phrase_lists import PhraseList

__all__ = ["Layout", "CompactLayout", "make_layout"]


@dataclass
class Layout:
    """Matched phrases of one batch. span_src (B,I,L) / span_tgt (B,J,L): unit of the listed
    contiguous phrase ending at each position (length l+1), -1 = none; ph_fwd / ph_bwd:
    (first, last, unit, gappy) each (B,P) of the phrase states of each direction (-1 pad);
    span_state_src (B,I,L): column in ph_fwd of the forward phrase state that is that
    source span (-1 none); span_state_tgt (B,J,L): column in ph_bwd likewise."""

    span_src: torch.Tensor
    span_tgt: torch.Tensor
    ph_fwd: tuple
    ph_bwd: tuple
    span_state_src: torch.Tensor
    span_state_tgt: torch.Tensor

    def n_matched(self) -> int:
        return int((self.ph_fwd[0] >= 0).sum() + (self.ph_bwd[0] >= 0).sum())

    def compact(self) -> CompactLayout:
        """This layout kept sparsely (the span tables' entries >= 0 only, on the CPU):
        `expand()` gives it back exactly. Memory O(matched spans + B P) instead of
        O(B (I + J) L). Cost O(B (I + J) L)."""
        def sparse(t):
            flat = t.reshape(-1)
            pos = (flat >= 0).nonzero()[:, 0]
            return tuple(t.shape), pos.cpu(), flat[pos].cpu()

        tables = (self.span_src, self.span_tgt, self.span_state_src, self.span_state_tgt)
        return CompactLayout(tuple(map(sparse, tables)), tuple(x.cpu() for x in self.ph_fwd),
                             tuple(x.cpu() for x in self.ph_bwd))


@dataclass
class CompactLayout:
    """A `Layout` without its dense span tables: tables = ((shape, flat positions, values)
    of span_src, span_tgt, span_state_src, span_state_tgt) (every other cell -1); ph_fwd,
    ph_bwd as in `Layout`. Made by `Layout.compact()`; lets the layouts matched while the
    model is built be handed to its first EM iteration (`build_phrasal_aligner(layouts=)`)
    without keeping O(B (I + J) L) tables per batch."""

    tables: tuple
    ph_fwd: tuple
    ph_bwd: tuple

    def expand(self, device) -> Layout:
        """The `Layout` (long tensors, the same values as the one compacted) on `device`.
        Cost O(B (I + J) L)."""
        dense = []
        for shape, pos, val in self.tables:
            t = torch.full(shape, -1, dtype=val.dtype)
            t.view(-1)[pos] = val
            dense.append(t.to(device))
        ph = [tuple(x.to(device) for x in p) for p in (self.ph_fwd, self.ph_bwd)]
        return Layout(dense[0], dense[1], ph[0], ph[1], dense[2], dense[3])


def _pack(b, first, last, unit, gappy, B):
    """Items (M,) -> padded (B, P) tensors (-1 pad), each row's items in (first, last, item)
    order, and each item's column."""
    dev = b.device
    span = int(torch.maximum(first.max(), last.max())) + 2 if b.numel() else 1
    order = torch.argsort((b * span + first + 1) * span + last + 1, stable=True)
    counts = torch.bincount(b, minlength=B)
    P = int(counts.max()) if b.numel() else 0
    start = torch.cumsum(counts, 0) - counts
    col = torch.empty_like(order)
    col[order] = torch.arange(b.numel(), device=dev) - start[b[order]]
    out = [torch.full((B, P), -1, dtype=torch.long, device=dev) for _ in range(4)]
    for o, v in zip(out, (first, last, unit, gappy.long())):
        o[b, col] = v
    return tuple(out), col


def make_layout(batch: Batch, src_list: PhraseList, tgt_list: PhraseList, *, gappy: bool):
    """The `Layout` of one batch. Cost O(B (I^2 + J^2) log Pg + B (I + J) L log Pc)."""
    B = batch.src.shape[0]
    sl, tl = batch.src_lengths, batch.tgt_lengths
    span_src = src_list.match_spans(batch.src, sl)
    span_tgt = tgt_list.match_spans(batch.tgt, tl)

    def states(span, words, lengths, lst):
        b, n, ln = (span >= 0).nonzero(as_tuple=True)
        items = [b, n - ln, n, span[b, n, ln], torch.zeros_like(b, dtype=torch.bool)]
        if gappy and lst.n_gappy:
            gap = lst.match_gappy(words, lengths)
            gb, ga, gc = (gap >= 0).nonzero(as_tuple=True)
            extra = [gb, ga, gc, gap[gb, ga, gc], torch.ones_like(gb, dtype=torch.bool)]
            items = [torch.cat([x, y]) for x, y in zip(items, extra)]
        packed, col = _pack(*items, B)
        # column of each contiguous span state, placed back at its (b, end, len) cell
        state_of_span = torch.full_like(span, -1)
        state_of_span[b, n, ln] = col[:b.numel()]
        return packed, state_of_span

    ph_fwd, st_src = states(span_src, batch.src, sl, src_list)
    ph_bwd, st_tgt = states(span_tgt, batch.tgt, tl, tgt_list)
    return Layout(span_src, span_tgt, ph_fwd, ph_bwd, st_src, st_tgt)
